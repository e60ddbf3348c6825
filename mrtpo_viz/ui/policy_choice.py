"""The checkpoint a request uses: the choices offered, loading under the operator's rules, a status line.

Nothing here loads a model at import time; ``get_policy`` loads on first use (``load_policy`` caches per
process) and warms the policy for the replay once (:mod:`mrtpo_viz.relevance.warm`)."""

from __future__ import annotations

import html
from typing import Optional

from ..settings import default_checkpoint, get_settings, load_allowed_policy
from ..tasks.bundled_data import BUNDLED_POLICIES
from .errors import _message

MODEL = "model"
"""The one concurrency group of every event that does real work (the model, verifiers, uploads, tables): its
requests wait at the fair-share gate (:mod:`mrtpo_viz.serving.fair_share`, ``MRTPO_MODEL_REQUESTS`` past it at
once) and their forwards take fair turns at the one model (:mod:`mrtpo_viz.serving.turns`)."""
GROUP_LIMIT = 16
"""Requests of the :data:`MODEL` group Gradio hands to worker threads at once: more than the gate lets through,
so that the gate, not Gradio's first-come queue, decides who goes next."""


def model_limit() -> int:
    """The concurrency limit of the :data:`MODEL` group in Gradio (the gate lets ``MRTPO_MODEL_REQUESTS`` through)."""
    return max(GROUP_LIMIT, get_settings().model_requests)


def checkpoint_choices() -> list[str]:
    """The default checkpoint, the bundled policies (by name), the downloaded real models (by name, those the
    allow-list admits; ``python -m mrtpo_viz get-model``) and the operator's allow-list (MRTPO_ALLOWED_CHECKPOINTS)."""
    from ..policy.known import list_downloaded

    settings = get_settings()
    found = sorted(p.parent.name for p in BUNDLED_POLICIES.glob("*/config.json"))
    real = [key for key in list_downloaded() if settings.checkpoint_allowed(key)]
    return list(dict.fromkeys([default_checkpoint(settings), *found, *real, *settings.allowed_checkpoints]))


def get_policy(checkpoint: str | None):
    """The loaded policy for a folder, a bundled policy's name or a hub id, under the operator's rules (cached by
    ``load_policy``)."""
    checkpoint = (checkpoint or "").strip()
    if not checkpoint:
        raise ValueError("No checkpoint given: pick the bundled policy or type a local folder or hub id.")
    from .zerogpu import on_zerogpu, startup_device

    # one message for every unusable typed path; on ZeroGPU the weights live on CUDA (None: the library's default)
    policy = load_allowed_policy(checkpoint, public=True, device=startup_device())
    if not on_zerogpu():  # there each model call runs in a GPU worker of its own: nothing here would stay warm
        _warm(policy)
    return policy


def _warm(policy) -> None:
    """The replay's one-time work right after loading (once per policy), so that no replay pays it."""
    from ..relevance.warm import warm_policy

    try:
        warm_policy(policy)
    except Exception:  # noqa: BLE001 -- warming only saves time; the request's own replay reports what is wrong
        pass


def load_status(checkpoint: str | None) -> str:
    """A status line for the checkpoint: what loaded, or why it did not (never raises)."""
    try:
        policy = get_policy(checkpoint)
    except Exception as err:  # the status line is the error report here
        return f"**Checkpoint not loaded:** {_message(err)}"
    return f"**Loaded** {shown(checkpoint)}: {policy.describe()}{precision_note(policy)}"


def precision_note(policy) -> str:
    """What the model line adds when the replay runs in reduced precision (``MRTPO_BF16_REPLAY``)."""
    import torch

    if policy.dtype != torch.bfloat16 or policy.device.type != "cpu":
        return ""
    return (
        " (reduced precision, the operator's choice: relevance within ~0.05 of float32's at the 99th percentile, "
        "the same top 3 tokens in ~85% of cases on SmolLM2-135M)"
    )


def picked_status(checkpoint: Optional[str]) -> str:
    """The model line after the checkpoint picker changed: nothing is loaded until Load or the next model call."""
    return f"Picked {shown(checkpoint)}: not loaded yet (**Load**, or the next replay loads it)."


def shown(checkpoint: Optional[str]) -> str:
    """A checkpoint's name as code whose line breaks fall after a path separator: a path on a phone wraps between
    folders, not inside a folder's name (a path is one unbreakable word to the browser; ``<wbr>`` is not copied)."""
    text = html.escape((checkpoint or "").strip())
    return "<code>" + text.replace("/", "/<wbr>").replace("\\", "\\<wbr>") + "</code>"
