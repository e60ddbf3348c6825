"""ZeroGPU (Hugging Face's shared-GPU Space hardware): the handlers that run the model ask for a GPU slice.

With the ``spaces`` package installed, :func:`gpu` wraps a handler (plain function or generator) in
``spaces.GPU(duration=...)``; off ZeroGPU that decorator returns the function unchanged (``spaces`` checks
``SPACES_ZERO_GPU``), and without the package nothing changes at all. The duration is asked per request, from its
size (:func:`estimate_seconds`): ZeroGPU queues long requests behind short ones and stops a call that runs past its
duration, so a fixed large number wastes the Space's quota and a small one kills long replays.

ZeroGPU's rules for the model: the weights are placed on CUDA at start-up (outside any decorated call; ``spaces``
makes that placement lazy) and nothing is ``torch.compile``\\ d. :func:`startup_device` says where to load.
"""

from __future__ import annotations

import os
from typing import Any
from collections.abc import Callable

MIN_S, MAX_S = 15, 180
"""Bounds of one request's duration (ZeroGPU's own default is 60 s; its cap depends on the account)."""
PER_KCHAR_S = 2.0
"""Seconds per 1,000 characters of text in the request (prompt, response, information): a replay's forward and
metric grow with the tokens, about a quarter of the characters."""
PER_STEP_S = 4.0
"""Seconds per live-training step (sampling, replay and update of every method on the bundled policy, GPU)."""


def on_zerogpu() -> bool:
    """Whether this process runs on ZeroGPU hardware (the variable the ``spaces`` package reads)."""
    return os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true")


def startup_device() -> str | None:
    """``"cuda"`` on ZeroGPU (weights go to the GPU at start-up, as ZeroGPU requires); None elsewhere (the
    library's default: accelerate's device)."""
    return "cuda" if on_zerogpu() else None


def _text_size(values) -> int:
    """Characters of every string in the arguments (lists and dicts included, one level deep)."""
    total = 0
    for v in values:
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, (list, tuple)):
            total += sum(len(x) for x in v if isinstance(x, str))
        elif isinstance(v, dict):
            total += sum(len(x) for x in v.values() if isinstance(x, str))
    return total


def estimate_seconds(kind: str, args: tuple, kwargs: dict) -> int:
    """The GPU seconds a request asks for: a base per kind, plus its text size, plus its steps for training.

    ``kind``: ``replay`` (also A/B, generate, group sampling), ``score`` (a rollouts file: per row), ``train``.
    """
    values = list(args) + list(kwargs.values())
    seconds = MIN_S + PER_KCHAR_S * _text_size(values) / 1000
    if kind == "score":
        seconds += 30  # a file of up to MRTPO_MAX_ROLLOUTS rows: the file size is not in the arguments
    if kind == "train":
        steps = next(
            (
                int(v)
                for v in values
                if isinstance(v, (int, float))
                and not isinstance(v, bool)
                and 1 <= v <= 10_000
                and float(v).is_integer()
            ),
            15,
        )
        seconds += PER_STEP_S * steps
    return int(min(MAX_S, max(MIN_S, round(seconds))))


HANDLERS: dict[str, str] = {}
"""``module.function`` -> kind of every handler that :func:`gpu` wrapped (the app's model-running handlers)."""


def gpu(kind: str) -> Callable[[Callable], Callable]:
    """Decorator for a handler that runs the model: ``spaces.GPU(duration=<estimate for this request>)`` where the
    ``spaces`` package is installed, the handler itself otherwise. Generators stay generators (``spaces`` wraps
    both)."""

    def duration(*args: Any, **kwargs: Any) -> int:
        return estimate_seconds(kind, args, kwargs)

    def wrap(fn: Callable) -> Callable:
        HANDLERS[f"{fn.__module__}.{fn.__name__}"] = kind
        try:
            import spaces
        except ImportError:
            return fn
        return spaces.GPU(duration=duration)(fn)

    return wrap


def preload(load: Callable[[], Any]) -> bool:
    """On ZeroGPU, call ``load`` (the default checkpoint onto :func:`startup_device`) at start-up, outside any
    request, as ZeroGPU requires; elsewhere nothing (the app loads on the first request). Returns whether it
    loaded."""
    if not on_zerogpu():
        return False
    load()
    return True
