"""The worker process of :mod:`.patterns`: runs one checked user pattern on Python's ``re`` per request.

Run as ``python -I -S pattern_worker.py`` (standard library only, no site packages). One JSON request per line on
stdin (``op``: ``search``, ``count``, ``split`` or ``spans``; ``pattern``, ``flags``, ``text``), one JSON answer per
line on stdout (``{"result": ...}`` or ``{"error": reason}``). ``re`` has no time limit of its own: the parent kills
this process when an answer is late, and its address space is capped so that a huge match state fails here with
MemoryError instead of growing the server.
"""

from __future__ import annotations

import json
import re
import sys

MEMORY_LIMIT_BYTES = 1 << 30
"""Address space of the worker (the interpreter needs ~30 MB; a match of a checked pattern far less)."""
MAX_SPANS = 100_000
"""At most this many match spans come back (a response has fewer non-empty matches than characters)."""


def _limit_memory() -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not on this platform
        pass


def run(op: str, pattern: str, flags: int, text: str):
    """The answer of ``re`` for one request, with the semantics :mod:`.patterns` documents per ``op``."""
    rx = re.compile(pattern, flags)
    if op == "search":
        return rx.search(text) is not None
    if op == "count":
        return sum(1 for _ in rx.finditer(text))
    if op == "split":
        return len(rx.split(text))
    if op == "spans":
        out = []
        for m in rx.finditer(text):
            if m.end() > m.start():
                out.append(m.span())
                if len(out) == MAX_SPANS:
                    break
        return out
    raise ValueError(f"unknown operation {op!r}")


def answer(request: dict) -> dict:
    try:
        return {"result": run(request["op"], request["pattern"], int(request["flags"]), request["text"])}
    except MemoryError:
        return {"error": "the pattern needs more memory than allowed on this response"}
    except (re.error, RecursionError, OverflowError, ValueError, KeyError, TypeError) as e:
        return {"error": f"the pattern cannot run: {type(e).__name__}: {e}"}


def main() -> None:
    _limit_memory()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            out = answer(json.loads(line))
        except ValueError as e:
            out = {"error": f"bad request: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
