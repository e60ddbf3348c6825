"""The Gradio app. ``build_app()`` returns the Blocks; ``launch()`` serves it (theme and css go to launch).

Layout: a shared checkpoint picker above the tabs, then one ``build_*_tab()`` per tab: Token relevance
(:mod:`.relevance_tab`), Verifier information A/B (:mod:`.ab_tab`), Rollouts (:mod:`.rollouts_tab`), Live training
(:mod:`.training_tab`), Method (:mod:`.method_tab`).

Nothing loads a model at import or build time; the checkpoint loads on the first call that needs it (and on page
load, for the status line). Every model call shares the concurrency group ``policy_choice.MODEL``. Deployment rules (the
allow-list, request limits, the memory setting) are read from :mod:`mrtpo_viz.settings` when a request is served.

Besides the tabs' endpoints, ``/token_relevance`` and ``/score_response`` (:mod:`.tools`) answer in plain JSON; with
``MRTPO_MCP=1`` they are served as MCP tools (Gradio's MCP server at ``/gradio_api/mcp/``). On the page, a request
that fails leaves a message in place, never Gradio's error state (:func:`.errors.in_place`, applied here to every
tab's handler). Gradio's run history (every result saved in the browser's storage, which slowed each update as it
grew) is off.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

STYLE = Path(__file__).resolve().parent / "style.css"
"""The app's stylesheet (package data)."""
MODEL_BUTTONS = ("replay-btn", "generate-btn", "ab-btn", "ab-split-btn", "rollouts-btn", "run-replay", "live-start")
"""The buttons (elem_id) whose requests load the checkpoint; the header's model line follows each click."""


def build_app():
    import gradio as gr

    from ..settings import default_checkpoint
    from .ab_tab import build_ab_tab
    from .downloads import DOWNLOAD_TTL_S
    from .errors import in_place
    from ..serving.fair_share import fair
    from .policy_choice import MODEL, model_limit, checkpoint_choices, load_status, picked_status
    from .method_tab import build_method_tab
    from .relevance_layout import build_relevance_tab
    from .rollouts_tab import build_rollouts_tab
    from .runs_tab import build_runs_tab
    from .tools import TOOLS, not_a_tool
    from .training_tab import build_training_tab

    with gr.Blocks(title="mrtpo-viz", delete_cache=(DOWNLOAD_TTL_S, DOWNLOAD_TTL_S)) as demo:
        gr.Markdown(
            "# mrtpo-viz\nWhich tokens of a response does each verifiable reward depend on? Replay the "
            "policy's own response with and without each verifier's information and compare the next-token "
            "distributions (MRTPO's relevance).",
            elem_classes=["mrtpo-header"],
        )
        with gr.Row(elem_classes=["mrtpo-model-row"]):
            checkpoint = gr.Dropdown(
                checkpoint_choices(),
                value=default_checkpoint(),
                allow_custom_value=True,
                label="Checkpoint (bundled policy, a local folder or a hub id)",
                scale=3,
            )
            load_btn = gr.Button("Load", scale=0, min_width=80)
            model_status = gr.Markdown("Checkpoint not loaded yet.", elem_id="model-status", min_width=240)
        with gr.Tabs():
            with gr.Tab("Token relevance", id="relevance"):
                build_relevance_tab(checkpoint)
            with gr.Tab("Verifier information A/B", id="ab"):
                build_ab_tab(checkpoint)
            with gr.Tab("Rollouts", id="rollouts"):
                build_rollouts_tab(checkpoint)
            with gr.Tab("Runs", id="runs"):
                build_runs_tab(checkpoint)
            with gr.Tab("Live training", id="training"):
                build_training_tab(checkpoint)
            with gr.Tab("Method", id="method"):
                build_method_tab()
        load_btn.click(
            fair(load_status),
            checkpoint,
            model_status,
            api_name="load_checkpoint",
            concurrency_id=MODEL,
            concurrency_limit=model_limit(),
        )
        # a picked checkpoint is not claimed as loaded: the line says what is picked until Load (or a replay)
        checkpoint.input(picked_status, checkpoint, model_status, api_name=False, queue=False)
        demo.load(
            fair(load_status),
            checkpoint,
            model_status,
            api_name=False,
            concurrency_id=MODEL,
            concurrency_limit=model_limit(),
            show_progress="hidden",  # a pending output is drawn faint: the first line stays readable
        )
        # every button that loads the checkpoint also brings the line up to date (a replay with a picked checkpoint
        # loads it): the load itself is shared (load_policy caches it under a lock), so this waits for that load
        buttons = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) in MODEL_BUTTONS]
        gr.on(
            [b.click for b in buttons],
            load_status,
            checkpoint,
            model_status,
            api_name=False,
            show_progress="hidden",
            concurrency_id="model-status",
            concurrency_limit=None,
        )
        for tool in TOOLS:
            gr.api(fair(tool), api_name=tool.__name__, concurrency_id=MODEL, concurrency_limit=model_limit())
    for fn in demo.fns.values():  # an agent sees the two tools, not the tabs' endpoints
        if fn.fn is not None and fn.api_name not in {t.__name__ for t in TOOLS}:
            # on the page, a request that fails is a message in place, never Gradio's error state
            fn.fn = not_a_tool(in_place(fn.fn, fn.outputs))
    return demo


def launch_options() -> dict:
    """Theme, css, run history, the upload cap and the MCP switch for ``Blocks.launch`` (Gradio 6 takes them there).

    Raises:
        SettingsError: ``MRTPO_MCP=1`` without the ``mcp`` package.
    """
    import importlib.util

    import gradio as gr
    from starlette.middleware import Middleware

    from ..serving.guard import ServingGuard, ServingLimits
    from ..settings import SettingsError, get_settings
    from .downloads import DOWNLOAD_TTL_S

    settings = get_settings()
    limits = ServingLimits(upload_bytes=settings.max_upload_bytes, upload_window_s=DOWNLOAD_TTL_S)
    mcp = settings.mcp
    if mcp and importlib.util.find_spec("mcp") is None:
        raise SettingsError("MRTPO_MCP=1 needs the mcp package (pip install mcp); unset it to serve without MCP")
    return {
        "theme": gr.themes.Soft(primary_hue="indigo", secondary_hue="amber"),
        "css": STYLE.read_text(encoding="utf-8"),
        "run_history": False,
        "mcp_server": mcp,
        # a file over MRTPO_MAX_UPLOAD_MB is refused while it streams in (413), before Gradio stores it
        "max_file_size": settings.max_upload_bytes,
        # every request passes the serving guard first: framing, a cap per route (an upload request's files and
        # fields together, its client's upload share; 1 MiB elsewhere), bounded sessions, requests in flight per
        # client address (mrtpo_viz/serving/guard.py)
        "app_kwargs": {"middleware": [Middleware(ServingGuard, limits=limits)]},
        # Gradio's own store of per-session state, no larger than the guard's ledger of sessions
        "state_session_capacity": limits.max_sessions,
    }


def launch(host: str | None = None, port: int | None = None, **kw):
    """Build and serve the app; keyword arguments go to ``Blocks.launch`` (never ``share=True``)."""
    from ..settings import get_settings

    get_settings()  # an invalid MRTPO_* variable stops the app here, with its name, before anything is served
    from ..serving.memory import limit_arenas

    limit_arenas()  # before any serving thread: their freed pages do not stay spread over many arenas
    options = {**launch_options(), **kw}
    demo = build_app()
    from ..relevance import branch_cache
    from ..serving import turns
    from ..serving.fair_share import GATE
    from ..serving.gradio_context import client_gone
    from ..serving.memory import start_periodic_trim
    from ..settings import default_checkpoint
    from .policy_choice import get_policy
    from .zerogpu import on_zerogpu, preload

    preload(lambda: get_policy(default_checkpoint()))  # ZeroGPU: the weights go to CUDA now, not in a request
    start_periodic_trim()  # what a burst of requests freed goes back to the OS once the burst is over
    GATE.slots = get_settings().model_requests
    turns.on_cancel(client_gone)  # a request whose client left stops at its next forward
    # sessions take fair turns at the model, forward by forward; not on ZeroGPU, which runs each model call in a
    # forked worker of its own (no shared model to take turns at; a lock held by another thread at the fork would
    # stay held in the child)
    turns.enable(not on_zerogpu())
    # an edit of one verifier's information and Replay rerun only that branch; not on ZeroGPU, where each call runs
    # in a worker of its own (nothing kept there would be seen again)
    branch_cache.enable(0 if on_zerogpu() else get_settings().replay_cache_mb)
    return demo.launch(
        server_name=host or os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=port or int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
        **options,
    )
