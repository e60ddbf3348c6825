"""Fair turns at the model for a process that serves many sessions (the app).

The app serves every session from one model. If each request held the model from start to end, one session's
request at the caps (a replay of many long branches) would make every other session wait for all of it, and work
that never touches the model (a verifier's SQL, parsing a table) would hold it too. Instead the model is taken in
turns, only around forward passes:

- :func:`model_job` holds the turn for one piece of model work (a sampling loop, a replay's forwards);
  :func:`model_forward` marks each forward inside it: there, a job that has held the turn for longer than
  :data:`QUANTUM_S` while others wait gives it up and queues again behind them;
- waiting is first come, first served, so a session's short request waits for at most one quantum of each
  request ahead of it, not for whole requests;
- a forward outside any job takes a turn of its own.

Turns are off unless :func:`enable` is called (``mrtpo_viz.ui.launch`` does): a script or a training run in one
thread pays nothing. Turns order threads of one process; they never change what a forward computes.

Each forward is also where abandoned work stops: with a check set by :func:`on_cancel` (the app's asks Gradio whether
the request's client is still there), a forward of a request whose client left raises :class:`RequestCancelled`
instead of running, so a replay at the caps does not spin on for nobody.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Iterator

QUANTUM_S = 0.2
"""How long a job keeps the model while others wait before it queues again (one forward is never split)."""
CHUNK_TOKENS = 4096
"""With turns on, a batched replay forward of more token positions than this runs in chunks of branches, so that
one forward, the unit a turn cannot split, stays short (a few tenths of a second for the bundled policy)."""


class RequestCancelled(RuntimeError):
    """The request's client left: its remaining forwards are not run."""


_cancel_check = [None]


def on_cancel(check) -> None:
    """``check()`` -> True when the current request has been abandoned (None: never)."""
    _cancel_check[0] = check


def _check_cancelled() -> None:
    check = _cancel_check[0]
    if check is not None and check():
        raise RequestCancelled("the request was abandoned (its client left); its remaining work was not run")


class _Turns:
    def __init__(self):
        self.enabled = False
        self._cond = threading.Condition()
        self._queue: collections.deque = collections.deque()
        self._holder = None
        self._since = 0.0
        self._local = threading.local()

    def _acquire(self) -> None:
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            while self._holder is not None or self._queue[0] is not ticket:
                self._cond.wait()
            self._queue.popleft()
            self._holder, self._since = threading.get_ident(), time.monotonic()

    def _release(self) -> None:
        with self._cond:
            self._holder = None
            self._cond.notify_all()

    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    @contextlib.contextmanager
    def job(self) -> Iterator[None]:
        if not self.enabled or getattr(self._local, "depth", 0):
            self._local.depth = getattr(self._local, "depth", 0) + 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        self._acquire()
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            if self._holder == threading.get_ident():
                self._release()

    @contextlib.contextmanager
    def forward(self) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        _check_cancelled()
        if getattr(self._local, "depth", 0) and self._holder == threading.get_ident():
            if time.monotonic() - self._since > QUANTUM_S and self.waiting():
                self._release()  # others wait: queue behind them
                self._acquire()
                _check_cancelled()  # the client may have left while this request waited
            yield
            return
        with self.job():
            yield


_TURNS = _Turns()


def enable(on: bool = True) -> None:
    """Switch turns on (the app) or off (the default)."""
    _TURNS.enabled = on


def enabled() -> bool:
    return _TURNS.enabled


def model_job():
    """Context: hold the model for a piece of model work, giving it up between forwards when others wait."""
    return _TURNS.job()


def model_forward():
    """Context around one forward pass: inside a job, the point where the job may give its turn up."""
    return _TURNS.forward()
