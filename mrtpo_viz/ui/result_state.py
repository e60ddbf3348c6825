"""What a shown result knows about itself: a Stop request for long runs, and the stale mark every input that would
change a result puts on its status line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import gradio as gr


@dataclass
class StopFlag:
    """One session's request to stop a long run (a ``gr.State``, the same object for the run's generator and the
    Stop button's handler). Gradio's ``cancels=`` is not used: a cancelled event leaves its error state ("Error"
    badges, blanked plots) on every output; the generator checks ``stopped`` between steps and ends itself."""

    running: bool = False
    stopped: bool = False

    def start(self) -> None:
        self.running, self.stopped = True, False


STALE = "inputs changed since this replay"
"""What a result's status line says once an input that would change the result has changed."""


def stale_status(status: Optional[str], again: str = "Replay") -> Any:
    """The status line marked stale: ``**⚠ inputs changed since this replay: Replay again.**`` before what it said
    (which names the checkpoint, verifiers, metric and control of the results below); no change when it already
    is."""
    text = status or ""
    if STALE in text:
        return gr.update()
    return f"**⚠ {STALE}: {again} again.** {text}".rstrip()


def mark_stale(result, status: Optional[str], again: str = "Replay") -> Any:
    """Every input that changes a result calls this (``.change``): with a result shown (``result`` not None) its
    status line is marked stale; without one nothing changes."""
    if result is None:
        return gr.update()
    return stale_status(status, again)
