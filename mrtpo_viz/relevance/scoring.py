"""Relevance for a file of rollouts: ``python -m mrtpo_viz score ROLLOUTS.jsonl --out OUT.{csv,jsonl,parquet}``.

Input rows (JSONL, one object per line): ``{"task", "prompt", "response", "meta"?, "verifiers"?, "id"?}``;
``prompt`` is a string or chat messages, ``verifiers`` a list or a comma-separated string. A row without an id
gets ``line<N>``. A bad line is reported with its line number and skipped.

Output: ``.jsonl`` holds one :class:`Relevance` per rollout (``Relevance.to_dict()`` plus ``id`` and ``task``);
``.csv`` / ``.parquet`` hold the long frame of ``Relevance.to_frame()`` with ``id`` and ``task`` columns. The
output is rewritten through a temporary file moved into place (:mod:`mrtpo_viz.atomic`) after every batch of rollouts,
so a kill leaves the previous complete file; a rerun skips the ids already in it (resume).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from collections.abc import Iterator, Sequence

from ..atomic import atomic_path
from .rows import MAX_ROLLOUT_BYTES, Problem, RowLimits, read_rows

OUT_FORMATS = (".jsonl", ".csv", ".parquet")
FRAME_COLUMNS = (
    "id",
    "task",
    "position",
    "token",
    "token_id",
    "start",
    "end",
    "verifier",
    "score",
    "raw_score",
    "logp_with",
    "logp_without",
    "entropy",
    "in_span",
    "reward",
    "metric",
    "control",
)
"""Columns an empty table output still has (the header), so that reading it back gives an empty frame."""


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


def read_rollouts(
    path: str | os.PathLike, max_bytes: int = MAX_ROLLOUT_BYTES, limits: Optional[RowLimits] = None
) -> tuple[list[dict], list[Problem]]:
    """Read a rollouts JSONL file (the schema and limits of :mod:`.rows`; ``max_bytes`` sets ``limits.max_bytes``).

    Returns:
        (rows, problems): the valid rows in file order (each with an ``id`` and its ``line``), and ``(line number,
        message)`` for every bad line (skipped). A repeated id is a problem too (the later row is skipped).
    """
    limits = limits or RowLimits(max_bytes=max_bytes)
    return read_rows(path, limits)


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


def read_existing(out: Path, suffix: str) -> list[dict]:
    """The records already in the output (JSONL: one per rollout; tables: one per token and verifier).

    Raises:
        ValueError: the existing file cannot be read back (it names the file and what to do).
    """
    if not out.is_file():
        return []
    try:
        if suffix == ".jsonl":
            with out.open(encoding="utf-8") as fh:
                records = [json.loads(line) for line in fh if line.strip()]
        else:
            import pandas as pd

            frame = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
            records = frame.to_dict("records")
        if any(not isinstance(r, dict) or "id" not in r for r in records):
            raise ValueError("a record without an 'id'")
        return records
    except Exception as e:  # noqa: BLE001 -- a damaged file raises many kinds; all mean "cannot resume from it"
        raise ValueError(
            f"the existing output {out} cannot be read ({type(e).__name__}: {str(e)[:200]}); a run "
            "resumes from it, so move it away or delete it to start afresh"
        ) from None


def _records(rel, row: dict, suffix: str) -> list[dict]:
    if suffix == ".jsonl":
        return [{"id": row["id"], "task": row["task"], **rel.to_dict()}]
    frame = rel.to_frame()
    frame.insert(0, "task", row["task"])
    frame.insert(0, "id", row["id"])
    return frame.to_dict("records")


def write_atomic(out: Path, records: list[dict], suffix: str) -> None:
    """Write all records to a temporary file next to ``out``, then move it into place (a kill leaves the old file)."""
    with atomic_path(out) as tmp:
        if suffix == ".jsonl":
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(r) + "\n" for r in records)
        else:
            import pandas as pd

            frame = pd.DataFrame.from_records(records) if records else pd.DataFrame(columns=list(FRAME_COLUMNS))
            frame.to_csv(tmp, index=False) if suffix == ".csv" else frame.to_parquet(tmp, index=False)


# --- scoring -------------------------------------------------------------------------------------------------------


def _row_verifiers(row: dict, verifiers: Optional[Sequence[str]], limits: RowLimits) -> list[str]:
    from ..tasks import list_verifiers

    names = list(verifiers or row["verifiers"] or list_verifiers(row["task"]))
    if not names:
        raise ValueError(f"no verifiers for task {row['task']!r}: give 'verifiers' in the row or --verifiers")
    if limits.max_verifiers is not None and len(names) > limits.max_verifiers:
        raise ValueError(
            f"{len(names)} verifiers to replay; at most {limits.max_verifiers} per row here (list the "
            "ones to score in the row's 'verifiers')"
        )
    return names


def _check_tokens(policy, example, response: str, names: list[str], limits: RowLimits) -> None:
    """The row's prompt, response and information within ``limits.max_tokens`` (texts already capped in characters)."""
    from ..tasks import get_verifier

    if limits.max_tokens is None:
        return
    texts = [m["content"] for m in example.messages()] + [response] + [get_verifier(n).info(example) for n in names]
    n = sum(
        len(policy.tokenizer(t, add_special_tokens=False, split_special_tokens=True)["input_ids"]) for t in texts if t
    )
    if n > limits.max_tokens:
        raise ValueError(
            f"{n:,} tokens (prompt, response and verifier information); at most {limits.max_tokens:,} per row here"
        )


def score_rollouts(
    policy,
    path: str | os.PathLike,
    verifiers: Optional[Sequence[str]] = None,
    *,
    out: str | os.PathLike,
    metric: str = "js",
    control: str = "none",
    info_position: str = "user_end",
    batch_size: int = 16,
    limits: RowLimits = RowLimits(),
) -> Iterator[ScoreProgress]:
    """Replay every rollout of ``path`` and write the relevance to ``out``; yields progress after each rollout.

    Rollouts already in ``out`` (by id) are skipped. Every ``batch_size`` rollouts (and at the end) the output is
    rewritten atomically. Rows are read under ``limits`` (:mod:`.rows`); a row that breaks one, or whose replay
    fails (unknown verifier, meta that does not fit a verifier, missing information, ...), is reported in
    ``problems`` with its line number and skipped: the other rows are still scored.
    """
    out = Path(out)
    suffix = check_out(out)
    rows, problems = read_rows(path, limits)
    records = read_existing(out, suffix)
    have = {str(r["id"]) for r in records}
    todo = [r for r in rows if r["id"] not in have]
    progress = ScoreProgress(total=len(todo), resumed=len(rows) - len(todo), problems=problems)
    yield progress
    yield from score_rows(
        policy,
        todo,
        records,
        progress,
        verifiers,
        out=out,
        suffix=suffix,
        metric=metric,
        control=control,
        info_position=info_position,
        batch_size=batch_size,
        limits=limits,
    )


def score_rows(
    policy,
    todo: list[dict],
    records: list[dict],
    progress: ScoreProgress,
    verifiers: Optional[Sequence[str]] = None,
    *,
    out: Path,
    suffix: str,
    metric: str = "js",
    control: str = "none",
    info_position: str = "user_end",
    batch_size: int = 16,
    limits: RowLimits = RowLimits(),
    file_suffix: Optional[str] = None,
) -> Iterator[ScoreProgress]:
    """Replay ``todo`` (rows of :func:`read_rows`) in order, appending to ``records`` (shaped for an output of
    format ``suffix``) and rewriting ``out`` (in format ``file_suffix``, default ``suffix``) atomically every
    ``batch_size`` scored rows and at the end; updates and yields ``progress`` after each row. A row that fails goes
    to ``progress.problems`` with its line number (the others are still scored)."""
    from .. import tasks as _registry  # noqa: F401  (task modules register their verifiers on import)
    from .engine import replay
    from ..tasks.base import Example

    file_suffix = file_suffix or suffix
    pending = 0
    for row in todo:
        try:
            if "infos" in row:  # a logged run's row: its rewards' own information, no task verifiers
                rel = _replay_logged(policy, row, verifiers, limits, metric, control, info_position)
            else:
                example = Example(task=row["task"], prompt=row["prompt"], meta=row["meta"], id=row["id"])
                names = _row_verifiers(row, verifiers, limits)
                _check_tokens(policy, example, row["response"], names, limits)
                rel = replay(
                    policy, example, row["response"], names, metric=metric, control=control, info_position=info_position
                )
            records += _records(rel, row, suffix)
            pending += 1
            progress.scored += 1
        except (ValueError, KeyError) as e:
            progress.problems.append((row["line"], f"id {row['id']!r}: {e.args[0] if isinstance(e, KeyError) else e}"))
        except Exception as e:  # noqa: BLE001 -- one row's failure must not lose the others
            progress.problems.append(
                (
                    row["line"],
                    f"id {row['id']!r} could not be scored ({type(e).__name__}: {str(e)[:200]}); check its fields",
                )
            )
        progress.done += 1
        progress.last_id = row["id"]
        if pending >= batch_size:
            write_atomic(out, records, file_suffix)
            pending = 0
        yield progress
    if pending or not out.exists():
        write_atomic(out, records, file_suffix)


# --- rows of a logged run ------------------------------------------------------------------------------------------


def info_verifier(name: str, info: str):
    """A reward of a logged run as a verifier that only carries its information (it was scored during the run)."""
    import math

    from ..tasks import VERIFIERS, Verdict, Verifier

    return Verifier(
        name=name,
        task="custom",
        title=VERIFIERS[name].title if name in VERIFIERS else name,
        description="a reward of the run",
        info_fn=lambda ex, _i=info: _i,
        check_fn=lambda r, ex: Verdict(math.nan, "scored during the run"),
    )


def _replay_logged(policy, row: dict, verifiers, limits: RowLimits, metric: str, control: str, info_position: str):
    """One row of a logged run (``prompt`` chat messages, ``response`` text or token ids, ``infos`` and ``rewards``
    per reward) replayed with its rewards' information, within ``limits``."""
    import math

    from .engine import replay

    infos = row["infos"]
    names = list(verifiers or infos)
    unknown = [n for n in names if n not in infos]
    if unknown:
        raise ValueError(f"the run has no reward {', '.join(map(repr, unknown))}; it has {', '.join(infos) or 'none'}")
    if limits.max_verifiers is not None and len(names) > limits.max_verifiers:
        raise ValueError(f"{len(names)} rewards to replay; at most {limits.max_verifiers} per row here")
    response = row["response"]
    texts = [m["content"] for m in row["prompt"]] + [infos[n] for n in names]
    if limits.max_chars is not None:
        longest = max([len(t) for t in texts] + [len(response) if isinstance(response, str) else 0])
        if longest > limits.max_chars:
            raise ValueError(f"a text of {longest:,} characters; at most {limits.max_chars:,} here")
    if limits.max_tokens is not None:
        tok = policy.tokenizer
        n = sum(len(tok(t, add_special_tokens=False, split_special_tokens=True)["input_ids"]) for t in texts if t)
        ids = response if not isinstance(response, str) else tok(response, add_special_tokens=False)["input_ids"]
        n += len(ids)
        if n > limits.max_tokens:
            raise ValueError(
                f"{n:,} tokens (prompt, response and reward information); at most {limits.max_tokens:,} per row here"
            )
    chosen = {n: infos[n] for n in names}
    rel = replay(
        policy,
        row["prompt"],
        response,
        [info_verifier(n, i) for n, i in chosen.items()],
        infos=chosen,
        metric=metric,
        control=control,
        info_position=info_position,
    )
    rel.rewards = {n: v for n, v in row.get("rewards", {}).items() if n in names and not math.isnan(v)}
    return rel


def score_run_rows(
    policy,
    rows: Iterator[dict],
    verifiers: Optional[Sequence[str]] = None,
    *,
    out: str | os.PathLike,
    metric: str = "js",
    control: str = "none",
    info_position: str = "user_end",
    batch_size: int = 16,
    limits: RowLimits = RowLimits(),
) -> Iterator[ScoreProgress]:
    """Score the rows of a logged run (any format of :mod:`mrtpo_viz.integrations.run_formats`: each with ``id``,
    ``line``, ``task``, ``prompt``, ``response``, ``infos``, ``rewards``; or ``problem``: a row that could not be
    made) the way :func:`score_rollouts` scores a file: resumable, through :func:`score_rows`, under the same
    ``limits`` (rows, characters, tokens, rewards per row)."""
    out = Path(out)
    suffix = check_out(out)
    records = read_existing(out, suffix)
    have = {str(r["id"]) for r in records}
    todo, problems, resumed = [], [], 0
    for row in rows:
        if "problem" in row:
            problems.append((row["line"], row["problem"]))
        elif limits.max_rows is not None and len(todo) + resumed >= limits.max_rows:
            problems.append((row["line"], f"more than {limits.max_rows} rollouts; this one and later ones are skipped"))
            break
        elif row["id"] in have:
            resumed += 1
        else:
            todo.append(row)
    progress = ScoreProgress(total=len(todo), resumed=resumed, problems=problems)
    yield progress
    yield from score_rows(
        policy,
        todo,
        records,
        progress,
        verifiers,
        out=out,
        suffix=suffix,
        metric=metric,
        control=control,
        info_position=info_position,
        batch_size=batch_size,
        limits=limits,
    )
