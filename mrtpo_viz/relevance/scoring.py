"""Relevance for a file of rollouts: ``python -m mrtpo_viz score ROLLOUTS.jsonl --out OUT.{csv,jsonl,parquet}``.

Input rows (JSONL, one object per line): ``{"task", "prompt", "response", "meta"?, "verifiers"?, "id"?}``;
``prompt`` is a string or chat messages, ``verifiers`` a list or a comma-separated string. A row without an id
gets ``line<N>``. A bad line is reported with its line number and skipped.

Output: ``.jsonl`` holds one :class:`Relevance` per rollout (``Relevance.to_dict()`` plus ``id`` and ``task``);
``.csv`` / ``.parquet`` hold the long frame of ``Relevance.to_frame()`` with ``id`` and ``task`` columns. The
output is rewritten through a temporary file and ``os.replace`` after every batch of rollouts, so a kill leaves
the previous complete file; a rerun skips the ids already in it (resume).
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

MAX_ROLLOUT_BYTES = 64 * 2**20
"""Largest rollouts file read (the app's Rollouts tab reads through the same function)."""
OUT_FORMATS = (".jsonl", ".csv", ".parquet")

Problem = tuple[int, str]


@dataclass
class ScoreProgress:
    """Where a scoring run stands (yielded after every rollout)."""

    done: int = 0
    """Rollouts processed in this run (scored or failed)."""
    scored: int = 0
    """Rollouts whose relevance was written."""
    total: int = 0
    """Rollouts to score in this run (valid rows not already in the output)."""
    resumed: int = 0
    """Rollouts skipped because the output already has them."""
    problems: list[Problem] = field(default_factory=list)
    """(line number, message) of bad lines and rows whose replay failed."""
    last_id: str = ""


def _check_row(row: Any, lineno: int) -> dict:
    """A valid rollout row (with an id) or ValueError saying what is wrong."""
    if not isinstance(row, dict):
        raise ValueError("not a JSON object")
    missing = [k for k in ("task", "prompt", "response") if k not in row]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)}")
    if not isinstance(row["prompt"], (str, list)) or not row["prompt"]:
        raise ValueError("'prompt' must be a non-empty string or a list of chat messages")
    if not isinstance(row["response"], str) or not row["response"]:
        raise ValueError("'response' must be a non-empty string")
    if not isinstance(row.get("meta") or {}, dict):
        raise ValueError("'meta' must be an object")
    if "db_path" in (row.get("meta") or {}):  # a file must not point the SQL verifier at any database on the machine
        raise ValueError("'meta.db_path' is not accepted in a rollouts file; name a bundled database with 'meta.db'")
    verifiers = row.get("verifiers") or []
    if isinstance(verifiers, str):
        verifiers = [v.strip() for v in verifiers.split(",") if v.strip()]
    return {**row, "id": str(row.get("id") or f"line{lineno}"), "verifiers": list(verifiers),
            "meta": dict(row.get("meta") or {})}


def read_rollouts(path: str | os.PathLike, max_bytes: int = MAX_ROLLOUT_BYTES) -> tuple[list[dict], list[Problem]]:
    """Read a rollouts JSONL file.

    Returns:
        (rows, problems): the valid rows in file order (each with an ``id``), and ``(line number, message)`` for
        every bad line (skipped). A repeated id is a problem too (the later row is skipped).
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no rollouts file at {file}")
    size = file.stat().st_size
    if size > max_bytes:
        raise ValueError(f"{file.name} is {size / 2**20:.1f} MiB; the limit is {max_bytes / 2**20:.0f} MiB "
                         "(split the file)")
    rows, problems, seen = [], [], set()
    with file.open(encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = _check_row(json.loads(line), lineno)
            except json.JSONDecodeError as e:
                problems.append((lineno, f"not valid JSON ({e.msg})"))
                continue
            except ValueError as e:
                problems.append((lineno, str(e)))
                continue
            if row["id"] in seen:
                problems.append((lineno, f"repeated id {row['id']!r}"))
                continue
            seen.add(row["id"])
            rows.append({**row, "line": lineno})
    return rows, problems


# --- output --------------------------------------------------------------------------------------------------------

def check_out(out: Path) -> str:
    suffix = out.suffix.lower()
    if suffix not in OUT_FORMATS:
        raise ValueError(f"unknown output format {suffix or out.name!r}; use one of {', '.join(OUT_FORMATS)}")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ValueError("writing .parquet needs pyarrow (pip install pyarrow); or use .csv or .jsonl") from None
    return suffix


def _read_existing(out: Path, suffix: str) -> list[dict]:
    """The records already in the output (JSONL: one per rollout; tables: one per token and verifier)."""
    if not out.is_file():
        return []
    if suffix == ".jsonl":
        with out.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    import pandas as pd

    frame = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    return frame.to_dict("records")


def _records(rel, row: dict, suffix: str) -> list[dict]:
    if suffix == ".jsonl":
        return [{"id": row["id"], "task": row["task"], **rel.to_dict()}]
    frame = rel.to_frame()
    frame.insert(0, "task", row["task"])
    frame.insert(0, "id", row["id"])
    return frame.to_dict("records")


def write_atomic(out: Path, records: list[dict], suffix: str) -> None:
    """Write all records to a temporary file next to ``out``, then ``os.replace`` it (a kill leaves the old file)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        if suffix == ".jsonl":
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(r) + "\n" for r in records)
        else:
            import pandas as pd

            frame = pd.DataFrame.from_records(records)
            frame.to_csv(tmp, index=False) if suffix == ".csv" else frame.to_parquet(tmp, index=False)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# --- scoring -------------------------------------------------------------------------------------------------------

def _row_verifiers(row: dict, verifiers: Optional[Sequence[str]]) -> list[str]:
    from ..tasks import list_verifiers

    names = list(verifiers or row["verifiers"] or list_verifiers(row["task"]))
    if not names:
        raise ValueError(f"no verifiers for task {row['task']!r}: give 'verifiers' in the row or --verifiers")
    return names


def score_rollouts(policy, path: str | os.PathLike, verifiers: Optional[Sequence[str]] = None, *,
                   out: str | os.PathLike, metric: str = "js", control: str = "none",
                   info_position: str = "user_end", batch_size: int = 16) -> Iterator[ScoreProgress]:
    """Replay every rollout of ``path`` and write the relevance to ``out``; yields progress after each rollout.

    Rollouts already in ``out`` (by id) are skipped. Every ``batch_size`` rollouts (and at the end) the output is
    rewritten atomically. A row whose replay fails (unknown verifier, missing information, ...) is reported in
    ``problems`` with its line number and skipped.
    """
    from .. import tasks as _registry  # noqa: F401  (task modules register their verifiers on import)
    from .engine import replay
    from ..tasks.base import Example

    out = Path(out)
    suffix = check_out(out)
    rows, problems = read_rollouts(path)
    records = _read_existing(out, suffix)
    have = {str(r["id"]) for r in records}
    todo = [r for r in rows if r["id"] not in have]
    progress = ScoreProgress(total=len(todo), resumed=len(rows) - len(todo), problems=problems)
    pending = 0
    yield progress
    for row in todo:
        example = Example(task=row["task"], prompt=row["prompt"], meta=row["meta"], id=row["id"])
        try:
            rel = replay(policy, example, row["response"], _row_verifiers(row, verifiers), metric=metric,
                         control=control, info_position=info_position)
            records += _records(rel, row, suffix)
            pending += 1
            progress.scored += 1
        except (ValueError, KeyError) as e:
            progress.problems.append((row["line"], f"id {row['id']!r}: {e}"))
        progress.done += 1
        progress.last_id = row["id"]
        if pending >= batch_size:
            write_atomic(out, records, suffix)
            pending = 0
        yield progress
    if pending or not out.exists():
        write_atomic(out, records, suffix)
