"""A read-only sandbox for running untrusted SQL (a policy's query) against a bundled SQLite database.

Layers, each enough on its own for some attacks and together for all we test:

1. the file is opened through a URI with ``mode=ro&immutable=1``: SQLite cannot write it, nor take locks on it;
2. an authorizer permits only SELECT, column reads, WITH RECURSIVE and an allow-list of pure functions, so writes,
   ATTACH, PRAGMA, ``load_extension`` and blob makers are refused at compile time;
3. limits: ``SQLITE_LIMIT_LENGTH`` caps any string or blob (a huge ``randomblob``/``printf`` fails), no attached
   databases, a progress handler stops the virtual machine after ``max_steps`` instructions or ``timeout_s``
   seconds (a recursive CTE without end), and at most ``max_rows`` rows are fetched.

:func:`run_query` never raises for a bad query: it returns a :class:`QueryResult` with ``error`` set.
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

SAFE_FUNCTIONS = frozenset({
    "count", "sum", "avg", "min", "max", "total", "group_concat", "string_agg",
    "abs", "round", "lower", "upper", "length", "substr", "substring", "trim", "ltrim", "rtrim", "replace",
    "instr", "coalesce", "ifnull", "nullif", "iif", "typeof", "like", "glob",
    "date", "time", "datetime", "julianday", "strftime", "unixepoch", "sign", "quote", "hex", "char", "unicode",
})
"""Functions a query may call. Everything else (load_extension, randomblob, zeroblob, readfile, writefile,
random, printf whose width allocates before any limit applies, sqlite_* introspection, ...) is denied."""

_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, getattr(sqlite3, "SQLITE_RECURSIVE", 33)})
_STEPS_PER_CALL = 1000
"""The progress handler runs every this many virtual-machine instructions."""
MAX_VALUE_BYTES = 100_000
"""Largest string or blob a query may build (``SQLITE_LIMIT_LENGTH``)."""


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


_ACTION_NAMES = {getattr(sqlite3, n): n[len("SQLITE_"):] for n in dir(sqlite3) if n.startswith((
    "SQLITE_CREATE_", "SQLITE_DROP_", "SQLITE_INSERT", "SQLITE_UPDATE", "SQLITE_DELETE", "SQLITE_PRAGMA",
    "SQLITE_ATTACH", "SQLITE_DETACH", "SQLITE_ALTER_TABLE", "SQLITE_TRANSACTION", "SQLITE_ANALYZE",
    "SQLITE_REINDEX", "SQLITE_SAVEPOINT", "SQLITE_FUNCTION", "SQLITE_CREATE_VTABLE"))}


def _make_authorizer(denied: list[str]):
    """Permit reads only (for ``SQLITE_FUNCTION`` the function name is ``arg2``); note each denial in ``denied``."""
    def authorize(action: int, arg1, arg2, dbname, source) -> int:
        if action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in SAFE_FUNCTIONS:
            return sqlite3.SQLITE_OK
        what = _ACTION_NAMES.get(action, f"action {action}")
        denied.append(" ".join(str(a) for a in (what, arg2 if action == sqlite3.SQLITE_FUNCTION else arg1) if a))
        return sqlite3.SQLITE_DENY
    return authorize


def _connect(db_path: Path) -> sqlite3.Connection:
    uri = f"{db_path.resolve().as_uri()}?mode=ro&immutable=1"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    if hasattr(conn, "enable_load_extension"):
        conn.enable_load_extension(False)
    if hasattr(conn, "setlimit"):  # Python >= 3.11
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    return conn


def _check_path(db_path) -> Path:
    path = Path(db_path)
    if not path.is_file():
        raise FileNotFoundError(f"no SQLite database at {path}; run `python scripts/make_sample_data.py`")
    return path


def run_query(db_path: str | Path, sql: str, *, max_steps: int = 2_000_000, max_rows: int = 1000,
              timeout_s: float = 1.0) -> QueryResult:
    """Run one untrusted statement read-only.

    Args:
        db_path: an existing SQLite file (a missing file raises FileNotFoundError: that is the caller's bug).
        sql: one statement; a second statement, a write, ATTACH or PRAGMA gives an error result.
        max_steps: virtual-machine instructions before the query is stopped.
        max_rows: more result rows than this is an error.
        timeout_s: wall-clock budget, checked with the step budget.
    Returns:
        QueryResult with ``rows`` (tuple of tuples) or ``error``.
    """
    path = _check_path(db_path)
    if not isinstance(sql, str) or not sql.strip():
        return QueryResult(None, "empty query")
    conn = _connect(path)
    deadline = time.monotonic() + timeout_s
    budget = {"calls": max(1, max_steps // _STEPS_PER_CALL)}

    def progress() -> int:
        budget["calls"] -= 1
        return int(budget["calls"] <= 0 or time.monotonic() > deadline)  # nonzero aborts the query

    denied: list[str] = []
    conn.set_authorizer(_make_authorizer(denied))
    conn.set_progress_handler(progress, _STEPS_PER_CALL)
    try:
        cur = conn.execute(sql)
        rows = cur.fetchmany(max_rows + 1)
        if len(rows) > max_rows:
            return QueryResult(None, f"the query returns more than {max_rows} rows")
        return QueryResult(tuple(tuple(r) for r in rows))
    except sqlite3.Error as e:
        return QueryResult(None, _explain(e, denied, budget["calls"] <= 0 or time.monotonic() > deadline))
    except (ValueError, OverflowError, MemoryError) as e:  # e.g. NUL characters, huge integers
        return QueryResult(None, f"the query cannot run: {e}")
    finally:
        conn.close()


def _explain(err: sqlite3.Error, denied: list[str], out_of_budget: bool) -> str:
    msg = str(err)
    if out_of_budget or "interrupted" in msg:
        return "the query ran past its step or time budget and was stopped"
    if denied or "not authorized" in msg or "authorization denied" in msg:
        return f"only reading is allowed; denied: {denied[0] if denied else 'a non-read statement'}"
    if "one statement at a time" in msg:
        return "more than one SQL statement"
    return f"SQL error: {msg}"


@lru_cache(maxsize=64)
def _schema_cached(path: str, mtime_ns: int) -> dict[str, tuple[str, ...]]:
    conn = _connect(Path(path))
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {t: tuple(r[1] for r in conn.execute("SELECT * FROM pragma_table_info(?)", (t,))) for t in tables}
    finally:
        conn.close()


def schema(db_path: str | Path) -> dict[str, tuple[str, ...]]:
    """Table name -> column names of a database (trusted introspection, without the authorizer)."""
    path = _check_path(db_path)
    return _schema_cached(str(path.resolve()), path.stat().st_mtime_ns)
