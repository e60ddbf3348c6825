"""mrtpo-viz: per-token, per-reward relevance (MRTPO) for language models trained on several verifiable rewards.

Heavy modules (torch models, gradio) load lazily, so ``import mrtpo_viz`` stays quick.
"""
from __future__ import annotations

import importlib
import sys
import types

__version__ = "0.1.0"

_LAZY = {
    "load_policy": "policy", "Policy": "policy", "Completion": "policy",
    "load_examples": "tasks", "Example": "tasks", "TASKS": "tasks",
    "list_verifiers": "verifiers", "get_verifier": "verifiers", "Verifier": "verifiers", "Verdict": "verifiers",
    "replay": "replay", "Relevance": "results", "StepMetrics": "results",
    "TrainConfig": "training", "train": "training",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'mrtpo_viz' has no attribute {name!r}")


def __dir__():
    return __all__


class _Package(types.ModuleType):
    """``mrtpo_viz.replay`` names both a submodule and the public function ``replay()``.

    Python sets a submodule as an attribute of its package once it is loaded, which would make
    ``from mrtpo_viz import replay`` return the module. This property keeps the attribute the function; the module stays
    importable as usual (``from mrtpo_viz.replay import CONTROLS``, ``sys.modules["mrtpo_viz.replay"]``).
    """

    @property
    def replay(self):
        return importlib.import_module(".replay", __name__).replay

    @replay.setter
    def replay(self, _module):  # the import system's setattr(package, "replay", submodule): keep the function
        pass


sys.modules[__name__].__class__ = _Package
