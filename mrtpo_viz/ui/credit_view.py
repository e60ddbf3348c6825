"""Token relevance tab: the credit-method choice for the advantage bars and the compare view (one row per credit
method for the pinned reward, one colour scale, each method's share of weight on the verifier's decision spans).
The choices come from the registry (:func:`mrtpo_viz.viz.credit_compare.app_credits`); the handler makes one
library call."""

from __future__ import annotations

import gradio as gr

from ..viz.credit_compare import app_credits, compare_credits, credit_heatmap, credit_markdown
from ..viz import placeholder_figure
from .errors import readable

COMPARE_NOTE = (
    "Each row is one credit method's weight on every token for the pinned reward (the same colour scale for all "
    "rows); the label and the table give each method's share of its weight on the verifier's decision spans. "
    "Methods that need a replay of their own (another control or metric, the one-context branch) are trained with "
    "`python -m mrtpo_viz train --method ...`."
)


def credit_choice() -> gr.Dropdown:
    """The credit method of the advantage bars (built inside the advantages row)."""
    return gr.Dropdown(app_credits(), value="mrtpo", label="credit method", elem_id="credit-method")


def compare_section() -> dict:
    """The compare view's components, inside an accordion."""
    r = {}
    with gr.Accordion("Compare credit methods on this response", open=False, elem_id="credit-compare"):
        gr.Markdown(COMPARE_NOTE)
        r["pin"] = gr.Dropdown([], value=None, label="pinned reward", elem_id="credit-pin")
        r["compare_plot"] = gr.Plot(
            placeholder_figure("Replay a response: each credit method's token weights"),
            label="credit methods",
            elem_id="credit-compare-plot",
        )
        r["compare_text"] = gr.Markdown(elem_id="credit-compare-text")
    return r


@readable
def compare(rel, pin, alpha, gamma):
    """The compare view for the replayed response: figure, share table, and the pinned-reward choices."""
    if rel is None:
        return placeholder_figure("Replay a response first"), "", gr.update(choices=[], value=None)
    pin = pin if pin in rel.verifiers else rel.verifiers[0]
    comp = compare_credits(rel, pin, alpha=float(alpha), gamma=float(gamma))
    return credit_heatmap(rel.tokens, comp), credit_markdown(comp), gr.update(choices=list(rel.verifiers), value=pin)


def wire_compare(r: dict, rel_state, after, **heavy) -> None:
    """Redraw the compare view after ``after`` (the advantages step) and when the pin, alpha or gamma change."""
    inputs = [rel_state, r["pin"], r["alpha"], r["gamma"]]
    outputs = [r["compare_plot"], r["compare_text"], r["pin"]]
    after.success(compare, inputs, outputs, api_name="compare_credits", show_progress="hidden", **heavy)
    gr.on(
        [r["pin"].input, r["alpha"].change, r["gamma"].change],
        compare,
        inputs,
        outputs,
        api_name=False,
        trigger_mode="always_last",
        show_progress="hidden",
        **heavy,
    )
