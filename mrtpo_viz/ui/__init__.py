"""The Gradio app. ``build_app()`` returns the Blocks; ``launch()`` serves it (theme and css go to launch)."""
from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def build_app():
    import gradio as gr

    with gr.Blocks(title="mrtpo-viz") as demo:
        gr.Markdown("# mrtpo-viz\nPer-token, per-reward relevance for multi-reward RL.")
    return demo


def launch(host: str | None = None, port: int | None = None, **kw):
    demo = build_app()
    return demo.launch(server_name=host or os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                       server_port=port or int(os.environ.get("GRADIO_SERVER_PORT", "7860")), **kw)


def cli_serve(args) -> int:
    launch(args.host, args.port)
    return 0
