"""Rollouts tab (in progress)."""
import gradio as gr


def build_rollouts_tab(checkpoint):
    gr.Markdown("Rollouts: coming.")
