"""A fair share of the server per session: long requests cannot crowd out short ones.

Every request that does real work (replays, scoring, uploads) passes :data:`GATE` before it starts. The gate keeps
each session's recent use of the server (seconds of requests, decaying with a half-life of :data:`HALF_LIFE_S`) and
the start time of every request past it:

- a request holds one of :data:`SLOTS` slots only for its first :data:`LONG_S` seconds; after that it runs on
  without a slot (its forwards still take turns at the model, :mod:`mrtpo_viz.policy.turns`), so requests at the caps
  (a replay of a long text with many verifiers, a query the SQL sandbox must stop) cannot make everyone else wait
  for their end; at most :data:`MAX_RUNNING` requests run at all;
- when a slot frees, the waiting request of the session that has used the server least lately goes first (ties:
  first come), so a session that sends expensive requests back to back waits behind those that send cheap ones;
- a session runs one request at a time.

What the gate decides is who starts when; a started request runs to its end. The session is Gradio's
``session_hash``; calls outside a Gradio request (the Python API, tests) share one key.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import threading
import time

SLOTS = 2
"""Requests in their first :data:`LONG_S` seconds at once (``MRTPO_MODEL_REQUESTS`` sets it at launch)."""
LONG_S = 1.0
"""After this long a request gives its slot up and runs on beside the others."""
MAX_RUNNING = 6
"""Requests running at once, long ones included (each holds memory)."""
HALF_LIFE_S = 10.0
"""How fast a session's recorded use decays."""
MAX_SESSIONS = 10_000
"""Sessions remembered at most (the least used are forgotten first)."""


class FairGate:
    def __init__(self, slots: int = SLOTS, long_s: float = LONG_S, max_running: int = MAX_RUNNING):
        self.slots, self.long_s, self.max_running = slots, long_s, max_running
        self.half_life_s = HALF_LIFE_S
        self._cond = threading.Condition()
        self._use: dict[str, tuple[float, float]] = {}  # session -> (use in seconds, when recorded)
        self._waiting: list[tuple[int, str]] = []  # (arrival number, session)
        self._running: dict[int, tuple[str, float]] = {}  # token -> (session, start)
        self._tokens = itertools.count(1)

    @property
    def running(self) -> int:
        return len(self._running)

    def use(self, session: str, now: float | None = None) -> float:
        """The session's recent use of the server in seconds (decayed to ``now``)."""
        value, at = self._use.get(session, (0.0, 0.0))
        now = time.monotonic() if now is None else now
        return value * math.pow(0.5, max(now - at, 0.0) / self.half_life_s)

    def holding(self, now: float | None = None) -> int:
        """Requests that still hold a slot (started less than ``long_s`` ago)."""
        now = time.monotonic() if now is None else now
        return sum(now - start < self.long_s for _, start in self._running.values())

    def _may_start(self, ticket: tuple[int, str]) -> bool:
        now = time.monotonic()
        busy = {session for session, _ in self._running.values()}
        ready = [t for t in self._waiting if t[1] not in busy]
        if ticket not in ready or self.running >= self.max_running or self.holding(now) >= self.slots:
            return False
        return min(ready, key=lambda t: (self.use(t[1], now), t[0])) is ticket

    def enter(self, session: str) -> int:
        """Wait for a slot; returns the request's token for :meth:`leave` (a generator handler may leave from
        another thread than it entered from)."""
        with self._cond:
            ticket = (next(self._tokens), session)
            self._waiting.append(ticket)
            while not self._may_start(ticket):
                self._cond.wait(timeout=self.long_s / 4)  # slots also free as requests turn long
            self._waiting.remove(ticket)
            self._running[ticket[0]] = (session, time.monotonic())
            return ticket[0]

    def leave(self, token: int) -> float:
        """The request ends; returns how long it ran (added to its session's use)."""
        with self._cond:
            session, start = self._running.pop(token)
            now = time.monotonic()
            seconds = now - start
            self._use[session] = (self.use(session, now) + seconds, now)
            if len(self._use) > MAX_SESSIONS:
                for key in sorted(self._use, key=lambda k: self.use(k, now))[: len(self._use) - MAX_SESSIONS]:
                    del self._use[key]
            self._cond.notify_all()
            return seconds


GATE = FairGate()


def _session() -> str:
    try:
        from gradio.context import LocalContext

        request = LocalContext.request.get(None)
        return getattr(request, "session_hash", None) or "local"
    except Exception:  # noqa: BLE001 -- outside Gradio: one shared key
        return "local"


def client_gone() -> bool:
    """Whether the Gradio request this thread serves was abandoned (Gradio marks a session's jobs not alive when
    its client disconnects); False outside a request or where Gradio's queue does not say."""
    try:
        from gradio.context import LocalContext

        blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
        if blocks is None or event_id is None:
            return False
        for jobs in blocks._queue.active_jobs:
            for job in jobs or ():
                if getattr(job, "_id", None) == event_id:
                    return not job.alive
    except Exception:  # noqa: BLE001 -- Gradio's internals moved: never cancel rather than fail
        return False
    return False


def fair(fn):
    """``fn`` (a function or a generator function, a Gradio handler) run past :data:`GATE`; the signature is kept,
    so Gradio still passes ``gr.Request`` and progress arguments."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            token = GATE.enter(_session())
            try:
                yield from fn(*args, **kwargs)
            finally:
                GATE.leave(token)

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        token = GATE.enter(_session())
        try:
            return fn(*args, **kwargs)
        finally:
            GATE.leave(token)

    return wrapper
