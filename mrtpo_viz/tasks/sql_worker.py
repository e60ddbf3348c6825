"""The process that runs untrusted SQL for :mod:`.sandbox`: standard library only, started as ``python -I -S`` on
this file, so that a query that outruns its budget can be killed and its core freed.

Why a process: SQLite checks its progress handler between virtual-machine steps, and one step can run for seconds
(a ``LIKE``/``GLOB`` of a 100 kB string against a 50 kB pattern, ``instr`` of two long strings); no handler fires
and no thread can be stopped from Python. The parent (:func:`.sandbox.run_query`) waits for the answer until the
query's wall-clock budget (plus a grace) has passed and then kills this process.

Inside, every query is still limited as before: the file is opened read-only and immutable, an authorizer permits
reads and an allow-list of pure functions only, ``SQLITE_LIMIT_LENGTH`` caps strings and blobs, the
``LIKE``/``GLOB`` pattern length is capped, SQLite's heap is capped (``PRAGMA hard_heap_limit``), the progress
handler enforces a step and time budget, and the rows fetched are capped by count and by total size.

Protocol: one JSON request per line on stdin, one JSON answer per line on stdout (bytes values as
``{"$bytes": hex}``); the process says ``ready`` once at start. It ends when stdin closes.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
import time
from pathlib import Path

SAFE_FUNCTIONS = frozenset(
    {
        "count",
        "sum",
        "avg",
        "min",
        "max",
        "total",
        "group_concat",
        "string_agg",
        "abs",
        "round",
        "lower",
        "upper",
        "length",
        "substr",
        "substring",
        "trim",
        "ltrim",
        "rtrim",
        "replace",
        "instr",
        "coalesce",
        "ifnull",
        "nullif",
        "iif",
        "typeof",
        "like",
        "glob",
        "date",
        "time",
        "datetime",
        "julianday",
        "strftime",
        "unixepoch",
        "sign",
        "quote",
        "hex",
        "char",
        "unicode",
    }
)
"""Functions a query may call. Everything else (load_extension, randomblob, zeroblob, readfile, writefile,
random, printf whose width allocates before any limit applies, sqlite_* introspection, ...) is denied."""

MAX_VALUE_BYTES = 100_000
"""Largest string or blob a query may build (``SQLITE_LIMIT_LENGTH``)."""
MAX_PATTERN_BYTES = 1_000
"""Longest ``LIKE``/``GLOB`` pattern (SQLite's default is 50,000; a gold or policy query needs a few dozen)."""
HEAP_LIMIT_BYTES = 128 * 2**20
"""SQLite's hard heap limit in this process: a sort or a join that needs more fails with 'out of memory'."""
STEPS_PER_CALL = 1000
"""The progress handler runs every this many virtual-machine instructions."""

_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, getattr(sqlite3, "SQLITE_RECURSIVE", 33)})
_ACTION_NAMES = {
    getattr(sqlite3, n): n[len("SQLITE_") :]
    for n in dir(sqlite3)
    if n.startswith(
        (
            "SQLITE_CREATE_",
            "SQLITE_DROP_",
            "SQLITE_INSERT",
            "SQLITE_UPDATE",
            "SQLITE_DELETE",
            "SQLITE_PRAGMA",
            "SQLITE_ATTACH",
            "SQLITE_DETACH",
            "SQLITE_ALTER_TABLE",
            "SQLITE_TRANSACTION",
            "SQLITE_ANALYZE",
            "SQLITE_REINDEX",
            "SQLITE_SAVEPOINT",
            "SQLITE_FUNCTION",
            "SQLITE_CREATE_VTABLE",
        )
    )
}
_PRAGMA_FUNCTION = re.compile(r"\bpragma_\w+", re.IGNORECASE)
BUDGET_MESSAGE = "the query ran past its step or time budget and was stopped"


def _make_authorizer(denied: list[str]):
    """Permit reads only (for ``SQLITE_FUNCTION`` the function name is ``arg2``); note each denial in ``denied``."""

    def authorize(action: int, arg1, arg2, _dbname, _source) -> int:  # sqlite3's five-argument callback
        if action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in SAFE_FUNCTIONS:
            return sqlite3.SQLITE_OK
        what = _ACTION_NAMES.get(action, f"action {action}")
        denied.append(" ".join(str(a) for a in (what, arg2 if action == sqlite3.SQLITE_FUNCTION else arg1) if a))
        return sqlite3.SQLITE_DENY

    return authorize


def connect(db_path: str) -> sqlite3.Connection:
    """The database read-only and immutable, with the length, pattern and attach limits set."""
    uri = f"{Path(db_path).resolve().as_uri()}?mode=ro&immutable=1"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    if hasattr(conn, "enable_load_extension"):
        conn.enable_load_extension(False)
    if hasattr(conn, "setlimit"):  # Python >= 3.11
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MAX_PATTERN_BYTES)
    return conn


def _size(value) -> int:
    return len(value) if isinstance(value, (str, bytes)) else 8


def _fetch(cur: sqlite3.Cursor, max_rows: int, max_bytes: int) -> tuple[list, str | None]:
    """At most ``max_rows`` rows and ``max_bytes`` of values, or why the result is too large."""
    rows, total = [], 0
    for row in cur:
        if len(rows) == max_rows:
            return [], f"the query returns more than {max_rows} rows"
        total += sum(_size(v) for v in row)
        if total > max_bytes:
            return [], f"the query's result is larger than {max_bytes / 2**20:g} MiB"
        rows.append(row)
    return rows, None


def execute(db: str, sql: str, max_steps: int, max_rows: int, max_bytes: int, timeout_s: float) -> dict:
    """Run one untrusted statement under every limit: ``{"rows": [...]}`` or ``{"error": reason}``."""
    conn = connect(db)
    deadline = time.monotonic() + timeout_s
    budget = {"calls": max(1, max_steps // STEPS_PER_CALL)}

    def progress() -> int:
        budget["calls"] -= 1
        return int(budget["calls"] <= 0 or time.monotonic() > deadline)  # nonzero aborts the query

    denied: list[str] = []
    conn.set_authorizer(_make_authorizer(denied))
    conn.set_progress_handler(progress, STEPS_PER_CALL)
    try:
        rows, error = _fetch(conn.execute(sql), max_rows, max_bytes)
        return {"error": error} if error else {"rows": rows}
    except sqlite3.Error as e:
        return {"error": explain(e, denied, budget["calls"] <= 0 or time.monotonic() > deadline, sql)}
    except (ValueError, OverflowError, MemoryError) as e:  # e.g. NUL characters, huge integers
        return {"error": f"the query cannot run: {e}"}
    finally:
        conn.close()


def explain(err: sqlite3.Error, denied: list[str], out_of_budget: bool, sql: str = "") -> str:
    """A readable reason for a failed query."""
    msg = str(err)
    if out_of_budget or "interrupted" in msg:
        return BUDGET_MESSAGE
    if "out of memory" in msg:
        return f"the query needs more than {HEAP_LIMIT_BYTES // 2**20} MiB of memory and was stopped"
    if "pattern too complex" in msg:
        return f"a LIKE or GLOB pattern is longer than {MAX_PATTERN_BYTES:,} bytes"
    pragma = _PRAGMA_FUNCTION.search(sql)
    if pragma:  # SQLite asks to change the schema for a table-valued pragma: say what was really refused
        return (
            f"only reading is allowed; denied: PRAGMA function {pragma.group().lower()} (table-valued "
            "pragmas are refused; read the tables themselves)"
        )
    if denied or "not authorized" in msg or "authorization denied" in msg:
        return f"only reading is allowed; denied: {denied[0] if denied else 'a non-read statement'}"
    if "one statement at a time" in msg:
        return "more than one SQL statement"
    return f"SQL error: {msg}"


def _encode(value):
    return {"$bytes": value.hex()} if isinstance(value, bytes) else value


def answer(request: dict) -> dict:
    """One request (``db``, ``sql`` and the budgets) -> its answer, never raising."""
    try:
        out = execute(
            request["db"],
            request["sql"],
            int(request["max_steps"]),
            int(request["max_rows"]),
            int(request["max_bytes"]),
            float(request["timeout_s"]),
        )
    except Exception as e:  # noqa: BLE001 -- the worker must answer every request
        return {"error": f"the query cannot run: {type(e).__name__}: {e}"}
    if "rows" in out:
        out["rows"] = [[_encode(v) for v in row] for row in out["rows"]]
    return out


def main() -> None:
    sqlite3.connect(":memory:").execute(f"PRAGMA hard_heap_limit = {HEAP_LIMIT_BYTES}")  # process-wide
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            out = answer(json.loads(line))
        except ValueError as e:  # a garbled request line: the parent's bug, still answered
            out = {"error": f"bad request: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
