"""mrtpo-viz: per-token, per-reward relevance (MRTPO) for language models trained on several verifiable rewards.

The public API (``from mrtpo_viz import load_policy, replay, ...``) loads lazily, so ``import mrtpo_viz`` stays quick.
The layout, bottom to top (arrows point down only; ``tests/test_layout.py`` checks it):

- ``names``: every registry name; ``divergence``, ``advantages``: pure torch math; ``tasks``: examples and verifiers;
- ``policy``: loading and sampling; ``relevance``: the replay; ``training``: the RL loop;
- ``viz``: rendering; ``sample_policy``: the bundled policy's build; ``settings``, ``bench``;
- ``ui``: the Gradio app; ``cli``: the command line.
"""

from __future__ import annotations

import importlib

from .version import __version__

_LAZY = {
    "load_policy": "policy",
    "Policy": "policy",
    "Completion": "policy",
    "PolicyLoadError": "policy",
    "load_examples": "tasks",
    "available_tasks": "tasks",
    "Example": "tasks",
    "TASKS": "tasks",
    "list_verifiers": "tasks",
    "get_verifier": "tasks",
    "Verifier": "tasks",
    "Verdict": "tasks",
    "replay": "relevance",
    "Relevance": "relevance",
    "TrainConfig": "training",
    "train": "training",
    "StepMetrics": "training",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'mrtpo_viz' has no attribute {name!r}")


def __dir__():
    return __all__
