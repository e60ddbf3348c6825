"""Relevance: how verifier information enters a prompt (:mod:`.contexts`), the branches of a replay with their shared
prefix (:mod:`.branches`), the controls (:mod:`.controls`), the replay itself (:mod:`.engine`: :func:`replay`), its
result (:mod:`.results`: :class:`Relevance`) and scoring a file of rollouts (:mod:`.scoring`)."""

from .contexts import DEFAULT_INFO_TEMPLATE, render_info, with_info
from .controls import CONTROL_SPECS, get_control
from .engine import plan_replay, replay, replay_variants
from .results import Relevance

__all__ = [
    "CONTROL_SPECS",
    "DEFAULT_INFO_TEMPLATE",
    "Relevance",
    "get_control",
    "plan_replay",
    "render_info",
    "replay",
    "replay_variants",
    "with_info",
]
