"""A read-only sandbox for running untrusted SQL (a policy's query, a rollout's gold query) against a SQLite file.

Layers, each enough on its own for some attacks and together for all we test:

1. the file is opened through a URI with ``mode=ro&immutable=1``: SQLite cannot write it, nor take locks on it;
2. an authorizer permits only SELECT, column reads, WITH RECURSIVE and an allow-list of pure functions, so writes,
   ATTACH, PRAGMA, ``load_extension`` and blob makers are refused at compile time;
3. limits: ``SQLITE_LIMIT_LENGTH`` caps any string or blob, ``LIKE``/``GLOB`` patterns are capped, SQLite's heap
   is capped, a progress handler stops the virtual machine after ``max_steps`` instructions or ``timeout_s``
   seconds, and the rows fetched are capped by count (``max_rows``) and total size (``max_bytes``);
4. the query runs in a separate worker process (:mod:`.sql_worker`), which is killed when it has not answered
   ``KILL_GRACE_S`` after its wall-clock budget: one virtual-machine step can run for seconds (a ``LIKE`` of a
   100 kB string against a long pattern), and only a kill stops it and frees the core. Idle workers are reused
   (a query costs a round trip of about a millisecond); at most ``MAX_WORKERS`` run at once.

:func:`run_query` never raises for a bad query: it returns a :class:`QueryResult` with ``error`` set.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from . import sql_worker
from .sql_worker import MAX_VALUE_BYTES, SAFE_FUNCTIONS  # noqa: F401 (re-exported)

MAX_RESULT_BYTES = 1 * 2**20
"""Default cap on the total size of a result's values (strings and blobs by length, numbers as 8 bytes)."""
KILL_GRACE_S = 1.0
"""How long after its budget a query may take to answer before its worker is killed."""
START_TIMEOUT_S = 30.0
"""How long a new worker may take to start (a busy machine)."""
MAX_WORKERS = 4
"""Queries running at once; more wait for a free worker."""


@dataclass(frozen=True)
class QueryResult:
    """Rows of a query, or why there are none."""

    rows: Optional[tuple[tuple[Any, ...], ...]]
    """Result rows (``None`` when the query failed)."""
    error: Optional[str] = None
    """Readable reason when the query failed."""

    @property
    def ok(self) -> bool:
        return self.error is None


class _Worker:
    """One ``python -I -S <script>`` process (by default ``sql_worker.py``) and its pipes."""

    def __init__(self, script: str = sql_worker.__file__):
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        self.buffer = b""
        if self.read_line(time.monotonic() + START_TIMEOUT_S) != b"ready":
            self.kill()
            raise RuntimeError(f"the worker process {Path(script).stem} did not start")

    def read_line(self, deadline: float) -> Optional[bytes]:
        """The next line from the worker, or None if none came before ``deadline`` (or the worker died)."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def ask(self, request: dict, deadline: float) -> Optional[dict]:
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        except (BrokenPipeError, OSError):
            return None
        line = self.read_line(deadline)
        try:
            return None if line is None else json.loads(line)
        except ValueError:  # a garbled answer: treat the worker as broken (the caller kills it)
            return None

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            pipe.close()


class _Pool:
    """Idle workers for reuse; a worker that timed out or failed is killed, never returned."""

    def __init__(self, size: int, script: str = sql_worker.__file__):
        self.idle: list[_Worker] = []
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(size)
        self.script = script

    def run(self, request: dict, budget_s: float) -> Optional[dict]:
        """The worker's answer, or None when it did not answer within ``budget_s`` of receiving the request (it is
        then killed: the core is free). A worker's start-up does not count against the budget."""
        with self.slots:
            with self.lock:
                worker = self.idle.pop() if self.idle else None
            worker = worker or _Worker(self.script)
            answer = worker.ask(request, time.monotonic() + budget_s)
            if answer is None:
                worker.kill()
                return None
            with self.lock:
                self.idle.append(worker)
            return answer

    def close(self) -> None:
        with self.lock:
            workers, self.idle = self.idle, []
        for w in workers:
            w.kill()


_POOL = _Pool(MAX_WORKERS)
atexit.register(_POOL.close)


def _check_path(db_path) -> Path:
    path = Path(db_path)
    if not path.is_file():
        raise FileNotFoundError(f"no SQLite database file {path.name[:80]!r}")
    return path


def _decode(value):
    return bytes.fromhex(value["$bytes"]) if isinstance(value, dict) else value


def run_query(
    db_path: str | Path,
    sql: str,
    *,
    max_steps: int = 2_000_000,
    max_rows: int = 1000,
    timeout_s: float = 1.0,
    max_bytes: int = MAX_RESULT_BYTES,
) -> QueryResult:
    """Run one untrusted statement read-only, in a worker process that is killed if it overruns.

    Args:
        db_path: an existing SQLite file (a missing file raises FileNotFoundError: that is the caller's bug).
        sql: one statement; a second statement, a write, ATTACH or PRAGMA gives an error result.
        max_steps: virtual-machine instructions before the query is stopped.
        max_rows: more result rows than this is an error.
        timeout_s: wall-clock budget; the worker is killed ``KILL_GRACE_S`` after it.
        max_bytes: total size of the result's values (see ``MAX_RESULT_BYTES``).
    Returns:
        QueryResult with ``rows`` (tuple of tuples) or ``error``.
    """
    path = _check_path(db_path)
    if not isinstance(sql, str) or not sql.strip():
        return QueryResult(None, "empty query")
    request = {
        "db": str(path.resolve()),
        "sql": sql,
        "max_steps": max_steps,
        "max_rows": max_rows,
        "max_bytes": max_bytes,
        "timeout_s": timeout_s,
    }
    answer = _POOL.run(request, timeout_s + KILL_GRACE_S)
    if answer is None:
        return QueryResult(None, sql_worker.BUDGET_MESSAGE)
    if "error" in answer:
        return QueryResult(None, answer["error"])
    return QueryResult(tuple(tuple(_decode(v) for v in row) for row in answer["rows"]))


@lru_cache(maxsize=64)
def _schema_cached(path: str, _mtime_ns: int) -> dict[str, tuple[str, ...]]:
    """The schema of ``path``; ``_mtime_ns`` is only part of the cache key (a rewritten file is read again)."""
    conn = sql_worker.connect(path)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        return {t: tuple(r[1] for r in conn.execute("SELECT * FROM pragma_table_info(?)", (t,))) for t in tables}
    finally:
        conn.close()


def schema(db_path: str | Path) -> dict[str, tuple[str, ...]]:
    """Table name -> column names of a database (trusted introspection, in this process, without the authorizer)."""
    path = _check_path(db_path)
    return _schema_cached(str(path.resolve()), path.stat().st_mtime_ns)
