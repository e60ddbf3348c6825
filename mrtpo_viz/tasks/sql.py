"""Text-to-SQL verifiers: ``sql.format`` and ``sql.execution``.

A response must hold one query in a fenced block::

    ```sql
    SELECT name FROM products WHERE price > 20
    ```

``sql.format`` scores the form only: exactly one fenced block (its info string ``sql``, any case), holding exactly
one statement (one trailing semicolon and comments allowed) whose main verb is SELECT (``WITH ... SELECT`` too;
keywords in any case). ``sql.execution`` runs the query of the first ```` ```sql ```` block (else of the first
fenced block, closed or not: a broken form costs ``sql.format`` only) in the read-only sandbox and compares its
rows with the gold query's: as multisets, or as lists when ``meta["ordered"]``. Numbers
compare by value (``3`` equals ``3.0``; floats to 6 decimals), so ``SUM(x) / COUNT(*)`` may stand for ``AVG(x)``.

Example meta: ``{"db": "shop", "gold_sql": "...", "ordered": bool}``; ``meta["db_path"]`` overrides the database
file, which otherwise is the bundled ``sample_data/databases/<db>.sqlite`` (:func:`.data.database_file`).

Relevant spans (character ``[start, end)`` offsets in the response):

- ``sql.format``: its decision points: the opening fence with its info string (```` ```sql ````) of the first block,
  the statement's first keyword (SELECT or WITH) and, for a WITH query, the main SELECT, and the closing fence. Points
  that are absent are left out (an empty list when the response has no fence at all).
- ``sql.execution``: the tokens of the response's query that decide its result: table and column names of the
  database (each part of ``table.column``), string and number literals, and aggregate function names. Keywords,
  punctuation and comments are left out. ``None`` when the response has no fenced block.

Decision spans (the credit study's oracle; the relevant spans above stay the localization benchmark's ground truth):

- ``sql.format``: its relevant spans and the end-of-sequence token (nothing may follow the closing fence: a second
  block fails); an empty list when the response has no fence.
- ``sql.execution``: the whole query text of the block it runs (keywords, operators, identifiers, literals: any of
  them changes the result), without the whitespace around it; ``None`` when the response has no fenced block.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Any, Optional

from .base import Argument, Example, MissingArguments, Span, Verdict, Verifier, eos_span, register
from .bundled_data import SAMPLE_DATA, database_file
from .sandbox import run_query, schema
from .sql_parsing import FENCE, fenced_blocks, main_verb, query_block, statements, tokenize

_DB_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A bundled database's name (``meta['db']``): no path separators, no dots."""
AGGREGATES = frozenset({"count", "sum", "avg", "min", "max", "total", "group_concat"})


# --------------------------------------------------------------------------------------------- sql.format
def check_format(response: str, example: Example) -> Verdict:
    blocks = fenced_blocks(response)
    if blocks and blocks[-1].close_start is None:
        return Verdict(0.0, "a ``` fence is not closed")
    if len(blocks) != 1:
        return Verdict(0.0, f"expected exactly one fenced block, found {len(blocks)}")
    if blocks[0].label.lower() != "sql":
        return Verdict(0.0, "the fenced block is not marked ```sql")
    stmts = statements(tokenize(blocks[0].body))
    if len(stmts) != 1:
        return Verdict(0.0, f"expected one SQL statement in the block, found {len(stmts)}")
    verb = main_verb(stmts[0])
    if verb is None or verb.text.lower() != "select":
        found = "no statement verb" if verb is None else verb.text.upper()
        return Verdict(0.0, f"the statement is not a SELECT query ({found})")
    return Verdict(1.0, "one ```sql block with a single SELECT statement")


def format_spans(response: str, example: Example) -> list[Span]:
    blocks = fenced_blocks(response)
    if not blocks:
        return []
    block = blocks[0]
    spans = [(block.open_start, block.open_start + len(FENCE) + len(block.label))]
    stmts = statements(tokenize(block.body, block.body_start))
    if stmts:
        first, verb = stmts[0][0], main_verb(stmts[0])
        spans.append((first.start, first.end))
        if verb is not None and verb is not first:
            spans.append((verb.start, verb.end))
    if block.close_start is not None:
        spans.append((block.close_start, block.close_start + len(FENCE)))
    return spans


def format_decision_spans(response: str, example: Example) -> list[Span]:
    """The relevant spans and the end-of-sequence token (``[]`` when the response has no fence)."""
    spans = format_spans(response, example)
    return sorted(spans + [eos_span(response)]) if spans else spans


def format_info(example: Example) -> str:
    return (
        "Answer with exactly one SQL query inside a single fenced code block that opens with ```sql and "
        "closes with ```. The block holds one SELECT statement (WITH ... SELECT is fine) and nothing else."
    )


# ------------------------------------------------------------------------------------------ sql.execution
def db_path(example: Example) -> Path:
    """The database file of an example (``meta["db_path"]`` or the bundled ``<db>.sqlite``)."""
    meta = example.meta
    if meta.get("db_path"):
        return Path(meta["db_path"])
    if not meta.get("db"):
        raise MissingArguments("a text_to_sql example needs meta['db'] (or meta['db_path'])")
    if not isinstance(meta["db"], str) or not _DB_NAME.fullmatch(meta["db"]):  # no path: only bundled databases
        raise ValueError(f"meta['db'] must name a bundled database (letters, digits, _ or -), got {meta['db']!r}")
    return database_file(meta["db"])


def _no_database(example: Example, path: Path) -> str:
    """What a missing database is called, without the folder it was looked for in."""
    if example.meta.get("db_path"):
        return f"no SQLite database file {path.name[:80]!r} (meta['db_path'])"
    return (
        f"no bundled database {str(example.meta.get('db'))[:80]!r}; the bundled ones are {', '.join(BUNDLED_DATABASES)}"
    )


def _norm(v: Any) -> Any:
    """Numbers compare by value: floats round to 6 decimals and integral floats become ints."""
    if isinstance(v, float) and math.isfinite(v):
        v = round(v, 6)
        return int(v) if v.is_integer() else v
    return v


def _norm_rows(rows) -> list[tuple]:
    return [tuple(_norm(v) for v in r) for r in rows]


GOLD_MAX_ROWS = 1000
"""A gold query may return at most this many rows (as many as a policy's query): a rollouts file brings its own
gold SQL, so it runs under the same sandbox limits as the policy's query, never with larger ones."""
GOLD_CACHE_BYTES = 16 * 2**20
"""Memory the cache of gold results may hold (values by size); a result over an eighth of it is not cached."""


class _GoldCache:
    """Least-recently-used gold results, bounded by the size of their values rather than by their number."""

    def __init__(self, max_bytes: int):
        self.max_bytes, self.used, self.entries = max_bytes, 0, OrderedDict()
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return self.entries[key][0]
        return None

    def put(self, key, rows: tuple) -> None:
        size = sum(64 + sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in r) for r in rows) + len(key[2])
        if size > self.max_bytes // 8:
            return
        with self.lock:
            if key not in self.entries:
                self.entries[key] = (rows, size)
                self.used += size
            while self.used > self.max_bytes:
                _, (_, freed) = self.entries.popitem(last=False)
                self.used -= freed


_GOLD_CACHE = _GoldCache(GOLD_CACHE_BYTES)


def gold_rows(example: Example) -> tuple:
    """Result rows of the example's gold query, run in the sandbox with a policy query's limits (cached per
    database file and query, in a cache of bounded size)."""
    gold = example.meta.get("gold_sql")
    if not gold:
        raise MissingArguments("a text_to_sql example needs meta['gold_sql']")
    if not isinstance(gold, str):
        raise ValueError("a text_to_sql example needs meta['gold_sql'], a SQL query (a string)")
    path = db_path(example)
    if not path.is_file():
        raise FileNotFoundError(_no_database(example, path))
    key = (str(path), path.stat().st_mtime_ns, gold)
    rows = _GOLD_CACHE.get(key)
    if rows is None:
        res = run_query(path, gold, max_rows=GOLD_MAX_ROWS)
        if not res.ok:
            raise ValueError(
                f"the gold query fails on the {example.meta.get('db') or path.stem} database: "
                f"{res.error} ({gold[:200]})"
            )
        rows = res.rows
        _GOLD_CACHE.put(key, rows)
    return rows


def compare_rows(got, want, ordered: bool) -> Verdict:
    """Score 1 iff the rows match (as lists when ``ordered``, else as multisets)."""
    got, want = _norm_rows(got), _norm_rows(want)
    width_got, width_want = len(got[0]) if got else None, len(want[0]) if want else None
    if got and want and width_got != width_want:
        return Verdict(0.0, f"wrong result: {width_got} columns, expected {width_want}")
    if ordered and got == want or not ordered and Counter(got) == Counter(want):
        return Verdict(1.0, f"the result matches the gold query ({len(want)} rows)")
    if Counter(got) == Counter(want):
        return Verdict(0.0, f"right rows in the wrong order ({len(want)} rows)")
    missing, extra = Counter(want) - Counter(got), Counter(got) - Counter(want)
    return Verdict(
        0.0,
        f"wrong result: {len(got)} rows, expected {len(want)} "
        f"({sum(missing.values())} expected rows missing, {sum(extra.values())} extra)",
    )


def check_execution(response: str, example: Example) -> Verdict:
    want = gold_rows(example)
    block = query_block(response)
    if block is None:
        return Verdict(0.0, "no fenced query to run")
    res = run_query(db_path(example), block.body)
    if not res.ok:
        return Verdict(0.0, res.error)
    return compare_rows(res.rows, want, bool(example.meta.get("ordered")))


def execution_spans(response: str, example: Example) -> Optional[list[Span]]:
    block = query_block(response)
    if block is None:
        return None
    names = {n.lower() for t, cols in schema(db_path(example)).items() for n in (t, *cols)}
    toks = tokenize(block.body, block.body_start)
    spans = []
    for i, t in enumerate(toks):
        word = t.text.strip('"`[]').lower() if t.kind in ("word", "ident") else None
        is_agg = t.kind == "word" and word in AGGREGATES and i + 1 < len(toks) and toks[i + 1].text == "("
        if t.kind in ("string", "number") or word in names or is_agg:
            spans.append((t.start, t.end))
    return spans


def execution_decision_spans(response: str, example: Example) -> Optional[list[Span]]:
    """The query text of the block ``sql.execution`` runs, without surrounding whitespace (None without a block)."""
    block = query_block(response)
    if block is None:
        return None
    start = block.body_start + len(block.body) - len(block.body.lstrip())
    end = block.body_start + len(block.body.rstrip())
    return [(start, end)] if end > start else []


def execution_info(example: Example, max_rows: int = 3) -> str:
    rows = gold_rows(example)
    shown = ", ".join("(" + ", ".join(repr(_norm(v)) for v in r) + ")" for r in rows[:max_rows])
    shown += f" and {len(rows) - max_rows} more" if len(rows) > max_rows else ""
    order = "in this order" if example.meta.get("ordered") else "in any order"
    count = f"{len(rows)} row" + ("" if len(rows) == 1 else "s")
    first = f": {shown}" if rows else ""
    return (
        f"The query runs on the {example.meta.get('db', 'given')} database and must return the same rows, "
        f"{order}, as the gold query {example.meta['gold_sql']}. It returns {count}{first}."
    )


BUNDLED_DATABASES = tuple(sorted(p.stem for p in (SAMPLE_DATA / "databases").glob("*.sqlite")))
"""Names of the bundled databases: the choices of ``meta["db"]``."""
EXECUTION_ARGUMENTS = (
    Argument(
        "db",
        "database",
        kind="choice",
        choices=BUNDLED_DATABASES,
        description="the bundled database the query runs on, e.g. shop",
    ),
    Argument(
        "gold_sql",
        "gold SQL",
        description="the reference query whose rows the response must return, e.g. "
        "SELECT name FROM products WHERE price > 20",
    ),
    Argument(
        "ordered",
        "order matters",
        kind="boolean",
        required=False,
        description="compare the rows in order (true when the gold query has ORDER BY); default false",
    ),
)
"""What ``sql.execution`` reads from ``example.meta`` (``sql.format`` reads nothing)."""

SQL_FORMAT = register(
    Verifier(
        name="sql.format",
        task="text_to_sql",
        title="SQL format",
        description="1 if the response holds exactly one ```sql fenced block with a single SELECT statement, else 0.",
        info_fn=format_info,
        check_fn=check_format,
        spans_fn=format_spans,
        decision_spans_fn=format_decision_spans,
    ),
    replace=True,
)

SQL_EXECUTION = register(
    Verifier(
        name="sql.execution",
        task="text_to_sql",
        title="SQL execution",
        description="1 if the query's result rows equal the gold query's (order compared only when the gold orders), "
        "run read-only in a sandbox; else 0.",
        info_fn=execution_info,
        check_fn=check_execution,
        spans_fn=execution_spans,
        arguments=EXECUTION_ARGUMENTS,
        decision_spans_fn=execution_decision_spans,
    ),
    replace=True,
)
