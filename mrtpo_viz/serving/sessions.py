"""The sessions the server keeps state for, bounded in count, in bytes and in time, and grouped by client address.

A session is a hash the client chooses (Gradio's page draws one per page load, ``gradio_client`` one per client);
Gradio keeps, per session, a copy of every component's configuration (about 260 kB for this app), the results the
client has not read yet, and their event ids. Left to itself it kept 2,000 sessions whose results were never read
(+520 MB, still held after the load) and took a 512 kB session hash as a key (300 of them: +1.33 GB). The ledger:

- refuses a hash over :data:`MAX_HASH_CHARS` characters or with other characters than letters, digits, ``-`` and
  ``_`` (the hashes Gradio's clients draw are 11 to 36 such characters), so the keys take at most
  ``MAX_SESSIONS * MAX_HASH_CHARS`` bytes;
- keeps at most :data:`SESSIONS_PER_CLIENT` sessions per client address and :data:`MAX_SESSIONS` in all: a new
  session past either cap makes the least recently seen idle session of that client (of anyone, for the total)
  go, with what Gradio held for it (:mod:`.gradio_queue`); a client that draws fresh hashes in a loop only
  pushes its own sessions out;
- forgets a session unseen for :data:`SESSION_TTL_S` (with what Gradio held for it), and a session Gradio drew
  for one call of its ``/call/`` API as soon as its result was read.

The ledger is plain bookkeeping: what a session holds inside Gradio, and whether it is busy, the caller says.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

MAX_HASH_CHARS = 64
"""Longest session hash taken (Gradio's page draws 11 characters, ``gradio_client`` a 36-character uuid)."""
SESSIONS_PER_CLIENT = 32
"""Sessions kept per client address (page loads, tabs, API clients)."""
MAX_SESSIONS = 1000
"""Sessions kept in all (about 260 MB of Gradio's per-session state for this app at the cap)."""
SESSION_TTL_S = 3600.0
"""A session unseen for this long is forgotten (Gradio forgets a closed page's state after an hour too)."""
_HASH = re.compile(r"[A-Za-z0-9_-]+")


def hash_problem(value) -> str | None:
    """Why a session hash is refused, or None."""
    if not isinstance(value, str) or not value:
        return "This request's session hash is not a non-empty string."
    if len(value) > MAX_HASH_CHARS:
        return (
            f"This request's session hash has {len(value):,} characters; at most {MAX_HASH_CHARS} are taken "
            "(letters, digits, - and _)."
        )
    if not _HASH.fullmatch(value):
        return "This request's session hash holds other characters than letters, digits, - and _."
    return None


@dataclass
class _Entry:
    client: str
    seen: float
    minted: bool = False
    """Drawn by Gradio for one ``/call/`` request: forgotten once nothing of it is left to read."""


class SessionLedger:
    """Sessions by client address, least recently seen first; every method takes ``now`` (monotonic seconds)."""

    def __init__(self, per_client: int = SESSIONS_PER_CLIENT, total: int = MAX_SESSIONS, ttl_s: float = SESSION_TTL_S):
        self.per_client, self.total, self.ttl_s = per_client, total, ttl_s
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._by_client: dict[str, OrderedDict[str, None]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, session: str) -> bool:
        return session in self._entries

    def hash_bytes(self) -> int:
        """Characters of the session hashes kept (at most ``total * MAX_HASH_CHARS``)."""
        return sum(map(len, self._entries))

    def client_of(self, session: str) -> str | None:
        entry = self._entries.get(session)
        return entry.client if entry else None

    def sessions_of(self, client: str) -> list[str]:
        return list(self._by_client.get(client, ()))

    def _drop(self, session: str) -> None:
        entry = self._entries.pop(session)
        mine = self._by_client[entry.client]
        del mine[session]
        if not mine:
            del self._by_client[entry.client]

    def touch(self, client: str, session: str, now: float, minted: bool = False, busy=lambda s: False) -> list[str]:
        """Record that ``client`` uses ``session`` now; returns the sessions that go to make room (their state is
        to be dropped by the caller). A known session keeps the client that first used it. ``busy(session)``
        says whether a session has requests queued or running (such a session goes only if every other has)."""
        entry = self._entries.get(session)
        if entry is not None:
            entry.seen = now
            self._entries.move_to_end(session)
            self._by_client[entry.client].move_to_end(session)
            return []
        gone = self.expire(now)
        mine = self._by_client.get(client, ())
        if len(mine) >= self.per_client:
            gone.append(self._evict(list(mine), busy))
        if len(self._entries) >= self.total:
            gone.append(self._evict(list(self._entries), busy))
        self._entries[session] = _Entry(client, now, minted)
        self._by_client.setdefault(client, OrderedDict())[session] = None
        return gone

    def _evict(self, oldest_first: list[str], busy) -> str:
        victim = next((s for s in oldest_first if not busy(s)), oldest_first[0])
        self._drop(victim)
        return victim

    def expire(self, now: float) -> list[str]:
        """Forget the sessions unseen for ``ttl_s``; returns them."""
        gone = []
        while self._entries:
            session, entry = next(iter(self._entries.items()))
            if now - entry.seen < self.ttl_s:
                break
            self._drop(session)
            gone.append(session)
        return gone

    def settle(self, client: str, pending) -> list[str]:
        """Forget ``client``'s sessions that Gradio drew for one call and that have nothing left to read
        (``pending(session)`` is the count of its events not yet read); returns them."""
        done = [s for s in self.sessions_of(client) if self._entries[s].minted and not pending(s)]
        for session in done:
            self._drop(session)
        return done
