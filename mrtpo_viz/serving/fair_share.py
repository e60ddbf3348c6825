"""A fair share of the server per client address: long requests cannot crowd out short ones, and many sessions
of one client cannot crowd out another client.

Every request that does real work (replays, scoring, uploads) passes :data:`GATE` before it starts. The gate keeps
each client's and each session's recent use of the server (seconds of requests, decaying with a half-life of
:data:`HALF_LIFE_S`) and the start time of every request past it:

- a request holds one of :data:`SLOTS` slots only for its first :data:`LONG_S` seconds; after that it runs on
  without a slot (its forwards still take turns at the model, :mod:`.turns`), so requests at the caps (a replay of
  a long text with many verifiers, a query the SQL sandbox must stop) cannot make everyone else wait for their
  end; at most :data:`MAX_RUNNING` requests run at all;
- when a slot frees, the waiting request of the client that has used the server least lately goes first, then,
  within a client, that of its least-used session (ties: first come), so a client that sends expensive requests
  back to back, from one session or from sixteen, waits behind those that send cheap ones;
- a client runs :data:`CLIENT_RUNNING` request at a time, and a session one: a client's sessions share one share.

What the gate decides is who starts when; a started request runs to its end. The client is the request's address
and the session Gradio's ``session_hash`` (:func:`.gradio_context.request_keys`); calls outside a Gradio request
(the Python API, tests) are one client. How many requests a client may have queued at all is capped before Gradio
queues them (:mod:`.guard`).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import threading
import time

from .gradio_context import request_keys

SLOTS = 2
"""Requests in their first :data:`LONG_S` seconds at once (``MRTPO_MODEL_REQUESTS`` sets it at launch)."""
LONG_S = 1.0
"""After this long a request gives its slot up and runs on beside the others."""
MAX_RUNNING = 6
"""Requests running at once, long ones included (each holds memory)."""
CLIENT_RUNNING = 1
"""Requests of one client address running at once (its sessions share them)."""
HALF_LIFE_S = 10.0
"""How fast recorded use decays."""
MAX_SESSIONS = 10_000
"""Clients and sessions whose use is remembered at most (the least used are forgotten first)."""


class FairGate:
    def __init__(
        self,
        slots: int = SLOTS,
        long_s: float = LONG_S,
        max_running: int = MAX_RUNNING,
        client_running: int = CLIENT_RUNNING,
    ):
        self.slots, self.long_s, self.max_running, self.client_running = slots, long_s, max_running, client_running
        self.half_life_s = HALF_LIFE_S
        self._cond = threading.Condition()
        self._use: dict[tuple, tuple[float, float]] = {}  # (client,) or (client, session) -> (use in s, when)
        self._waiting: list[tuple[int, str, str]] = []  # (arrival number, client, session)
        self._running: dict[int, tuple[str, str, float]] = {}  # token -> (client, session, start)
        self._tokens = itertools.count(1)

    @property
    def running(self) -> int:
        return len(self._running)

    def _decayed(self, key: tuple, now: float) -> float:
        value, at = self._use.get(key, (0.0, 0.0))
        return value * math.pow(0.5, max(now - at, 0.0) / self.half_life_s)

    def use(self, client: str, now: float | None = None, session: str | None = None) -> float:
        """A client's recent use of the server in seconds (decayed to ``now``); with ``session``, that session's."""
        now = time.monotonic() if now is None else now
        return self._decayed((client,) if session is None else (client, session), now)

    def holding(self, now: float | None = None) -> int:
        """Requests that still hold a slot (started less than ``long_s`` ago)."""
        now = time.monotonic() if now is None else now
        return sum(now - start < self.long_s for _, _, start in self._running.values())

    def _may_start(self, ticket: tuple[int, str, str]) -> bool:
        now = time.monotonic()
        sessions = {(c, s) for c, s, _ in self._running.values()}
        per_client: dict[str, int] = {}
        for c, _, _ in self._running.values():
            per_client[c] = per_client.get(c, 0) + 1
        ready = [
            t for t in self._waiting if (t[1], t[2]) not in sessions and per_client.get(t[1], 0) < self.client_running
        ]
        if ticket not in ready or self.running >= self.max_running or self.holding(now) >= self.slots:
            return False
        first = min(ready, key=lambda t: (self._decayed((t[1],), now), self._decayed((t[1], t[2]), now), t[0]))
        return first is ticket

    def enter(self, session: str, client: str | None = None) -> int:
        """Wait for a slot; returns the request's token for :meth:`leave` (a generator handler may leave from
        another thread than it entered from). Without ``client``, the session is its own client."""
        with self._cond:
            ticket = (next(self._tokens), session if client is None else client, session)
            self._waiting.append(ticket)
            while not self._may_start(ticket):
                self._cond.wait(timeout=self.long_s / 4)  # slots also free as requests turn long
            self._waiting.remove(ticket)
            self._running[ticket[0]] = (ticket[1], session, time.monotonic())
            return ticket[0]

    def leave(self, token: int) -> float:
        """The request ends; returns how long it ran (added to its client's and its session's use)."""
        with self._cond:
            client, session, start = self._running.pop(token)
            now = time.monotonic()
            seconds = now - start
            for key in ((client,), (client, session)):
                self._use[key] = (self._decayed(key, now) + seconds, now)
            if len(self._use) > 2 * MAX_SESSIONS:
                for key in sorted(self._use, key=lambda k: self._decayed(k, now))[: len(self._use) - MAX_SESSIONS]:
                    del self._use[key]
            self._cond.notify_all()
            return seconds


GATE = FairGate()


def fair(fn):
    """``fn`` (a function or a generator function, a Gradio handler) run past :data:`GATE`; the signature is kept,
    so Gradio still passes ``gr.Request`` and progress arguments."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            client, session = request_keys()
            token = GATE.enter(session, client)
            try:
                yield from fn(*args, **kwargs)
            finally:
                GATE.leave(token)

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        client, session = request_keys()
        token = GATE.enter(session, client)
        try:
            return fn(*args, **kwargs)
        finally:
            GATE.leave(token)

    return wrapper
