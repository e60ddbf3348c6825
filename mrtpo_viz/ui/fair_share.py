"""A fair share of the server per session: heavy sessions cannot crowd out light ones.

Every request that does real work (replays, scoring, uploads, tables) passes :data:`GATE` before it starts.
The gate lets :data:`SLOTS` requests run at once and keeps each session's recent use of the server (seconds of
requests, decaying with a half-life of :data:`HALF_LIFE_S`):

- when a slot frees, the waiting request of the session that has used the server least goes first (ties: first come),
  so a session that sends expensive requests back to back waits behind sessions that send cheap ones;
- a heavy session (recent use over :data:`HEAVY_RATIO` times the median of the active sessions', and over
  :data:`HEAVY_S`) may start only while another slot stays free and no other heavy request runs, so heavy sessions
  share one slot and the others always have one.

A request runs to its end once started (its model forwards still take turns, :mod:`mrtpo_viz.policy.turns`); what
the gate decides is who starts next. The session is Gradio's ``session_hash``; calls outside a Gradio request (the
Python API, tests) share one key.
"""

from __future__ import annotations

import functools
import inspect
import math
import threading
import time

SLOTS = 2
"""Requests past the gate at once when no setting says otherwise (``MRTPO_MODEL_REQUESTS`` sets it at launch)."""
HALF_LIFE_S = 10.0
"""How fast a session's recorded use decays."""
HEAVY_S = 2.0
"""Recent use (seconds) under which no session counts as heavy."""
HEAVY_RATIO = 1.5
"""A session whose recent use is over this many times the median of the active sessions' is heavy."""
ACTIVE_S = 0.05
"""Recent use over which a session counts as active (for the median)."""
MAX_SESSIONS = 10_000
"""Sessions remembered at most (the least used are forgotten first)."""


class FairGate:
    def __init__(self, slots: int = SLOTS, half_life_s: float = HALF_LIFE_S, heavy_s: float = HEAVY_S):
        self.slots, self.half_life_s, self.heavy_s = slots, half_life_s, heavy_s
        self._cond = threading.Condition()
        self._use: dict[str, tuple[float, float]] = {}  # session -> (use in seconds, when recorded)
        self._waiting: list[tuple[int, str]] = []  # (arrival number, session)
        self._arrivals = 0
        self.running = 0
        self._heavy_running = 0  # requests admitted as heavy and not yet left

    def use(self, session: str, now: float | None = None) -> float:
        """The session's recent use of the server in seconds (decayed to ``now``)."""
        value, at = self._use.get(session, (0.0, 0.0))
        now = time.monotonic() if now is None else now
        return value * math.pow(0.5, max(now - at, 0.0) / self.half_life_s)

    def _may_start(self, ticket: tuple[int, str]) -> bool:
        if self.running >= self.slots:
            return False
        now = time.monotonic()
        first = min(self._waiting, key=lambda t: (self.use(t[1], now), t[0]))
        if first is not ticket:
            return False
        if not self._heavy(ticket[1], now) or self.slots == 1:
            return True
        return self.running < self.slots - 1 and self._heavy_running == 0

    def _heavy(self, session: str, now: float) -> bool:
        mine = self.use(session, now)
        if mine <= self.heavy_s:
            return False
        active = sorted(u for u in (self.use(k, now) for k in self._use) if u > ACTIVE_S)
        return mine > HEAVY_RATIO * active[len(active) // 2] if active else False

    def enter(self, session: str) -> bool:
        """Wait for a turn; returns whether the request was admitted as heavy (give it back to :meth:`leave`: a
        generator handler may leave from another thread than it entered from)."""
        with self._cond:
            self._arrivals += 1
            ticket = (self._arrivals, session)
            self._waiting.append(ticket)
            # a heavy session waiting alone re-checks as its use decays
            while not self._may_start(ticket):
                self._cond.wait(timeout=0.5)
            self._waiting.remove(ticket)
            self.running += 1
            heavy = self._heavy(session, time.monotonic())
            self._heavy_running += heavy
            return heavy

    def leave(self, session: str, seconds: float, heavy: bool = False) -> None:
        with self._cond:
            now = time.monotonic()
            self._use[session] = (self.use(session, now) + seconds, now)
            if len(self._use) > MAX_SESSIONS:
                for key in sorted(self._use, key=lambda k: self.use(k, now))[: len(self._use) - MAX_SESSIONS]:
                    del self._use[key]
            self.running -= 1
            self._heavy_running -= heavy
            self._cond.notify_all()


GATE = FairGate()


def _session() -> str:
    try:
        from gradio.context import LocalContext

        request = LocalContext.request.get(None)
        return getattr(request, "session_hash", None) or "local"
    except Exception:  # noqa: BLE001 -- outside Gradio: one shared key
        return "local"


def fair(fn):
    """``fn`` (a function or a generator function, a Gradio handler) run past :data:`GATE`; the signature is kept,
    so Gradio still passes ``gr.Request`` and progress arguments."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            session = _session()
            heavy = GATE.enter(session)
            start = time.monotonic()
            try:
                yield from fn(*args, **kwargs)
            finally:
                GATE.leave(session, time.monotonic() - start, heavy)

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        session = _session()
        heavy = GATE.enter(session)
        start = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            GATE.leave(session, time.monotonic() - start, heavy)

    return wrapper
