"""Loading examples: the bundled task families (``names.TASKS``, data inside the package), BFCL (from the installed
``bfcl-eval``, :mod:`.bfcl`) or any JSONL file.

Each JSONL row is an :meth:`Example.from_dict` object with a ``split`` field (``train`` / ``test``), or an
IFEval-format row (``prompt``, ``instruction_id_list``, ``kwargs``, optional ``key``; RLVR-style ``messages`` +
``ground_truth`` too), read as it is by :func:`.ifeval.row_format.example_from_row`.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..guards import nesting_depth
from ..names import BFCL_TASK, STUDY_TASKS, TASKS
from .base import Example
from .bundled_data import task_file
from .ifeval.row_format import example_from_row, is_ifeval_row


def available_tasks() -> list[str]:
    """The task families that load here: the bundled :data:`TASKS`, and ``bfcl`` when bfcl-eval is installed."""
    from .bfcl import installed

    return list(TASKS) + ([BFCL_TASK] if installed() else [])


def load_examples(
    task: str,
    split: str = "test",
    path: str | Path | None = None,
    *,
    category: str | None = None,
    limit: int | None = None,
) -> list[Example]:
    """Load the sample examples of a task family.

    Args:
        task: one of :data:`TASKS` or :data:`STUDY_TASKS`, or ``"bfcl"`` (needs ``pip install mrtpo-viz[bfcl]``).
        split: ``"train"``, ``"test"`` or ``"all"``; each JSONL row carries a ``split`` field (BFCL has one
            evaluation set: every split gives all its rows).
        path: another JSONL file (defaults to the bundled sample data): rows in the format above, or IFEval-format
            rows (see :mod:`.ifeval.row_format` for the fields and the RLVR-style variants accepted). A row without a
            ``split`` field counts as ``test``, so an IFEval file loads whole with the default split.
        category: BFCL's category (``names.BFCL_CATEGORIES``; default ``simple_python``); only for ``bfcl``.
        limit: only the first ``limit`` examples; only for ``bfcl``.
    Returns:
        The examples of that split, in file order.
    """
    if task == BFCL_TASK and path is None:
        from .bfcl import load_bfcl

        if split not in ("train", "test", "all"):
            raise ValueError(f"unknown split {split!r}; choose train, test or all (the same rows for BFCL)")
        return load_bfcl(*([category] if category is not None else []), limit=limit)
    if category is not None or limit is not None:
        raise ValueError(f"'category' and 'limit' are options of the bfcl task family, not of {task!r}")
    if path is None and task not in TASKS + STUDY_TASKS:
        known = available_tasks()
        hint = "" if BFCL_TASK in known else f" ({BFCL_TASK} after pip install mrtpo-viz[bfcl])"
        raise ValueError(f"unknown task family {task!r}; known: {', '.join(known)}{hint}")
    file = Path(path) if path is not None else task_file(task)
    if not file.is_file():
        raise FileNotFoundError(
            f"no examples file at the path given ({file.name!r})"
            if path is not None
            else f"no examples file {file.name!r} in the installed package (its sample data is "
            "missing): reinstall mrtpo-viz"
        )
    if file.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(
            f"{file.name} is {file.stat().st_size / 2**20:.0f} MiB; an examples file here has at most "
            f"{MAX_FILE_BYTES // 2**20} MiB: split it"
        )
    out = []
    with file.open(encoding="utf-8-sig") as fh:  # a byte-order mark on line 1 is skipped
        for lineno, line in _lines(fh, file.name):
            if not line.strip():
                continue
            try:
                row = _row(line)
                if split != "all" and isinstance(row, dict) and row.get("split", "test") != split:
                    continue
                out.append(example_from_row(row) if is_ifeval_row(row) else Example.from_dict(row))
            except (ValueError, TypeError, RecursionError, MemoryError) as e:
                raise ValueError(f"{file.name}:{lineno}: {_short(e)}") from None
    return out


MAX_FILE_BYTES = 1024 * 2**20
"""Size of one examples file (IFEval's 541 rows are 0.3 MiB)."""
MAX_LINE_CHARS = 2**20
"""Characters of one row (line) of an examples file."""
MAX_LINES = 2_000_000
"""Lines of one examples file."""
MAX_DEPTH = 32
"""Nesting of one row (IFEval's rows nest 3 levels)."""


def _lines(fh, name: str):
    """(line number, line) of a text file, each line read up to :data:`MAX_LINE_CHARS` (a longer one is refused
    before the rest of it is read)."""
    lineno = 0
    while line := fh.readline(MAX_LINE_CHARS + 1):
        lineno += 1
        if len(line) > MAX_LINE_CHARS:
            raise ValueError(f"{name}:{lineno}: the line is longer than {MAX_LINE_CHARS:,} characters")
        if lineno > MAX_LINES:
            raise ValueError(f"{name}: more than {MAX_LINES:,} lines; split the file")
        yield lineno, line


def _row(line: str):
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON ({e.msg})") from None
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    if nesting_depth(row, MAX_DEPTH) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return row


def _short(err: BaseException, limit: int = 300) -> str:
    text = str(err) or type(err).__name__
    if isinstance(err, RecursionError):
        text = f"nested deeper than {MAX_DEPTH} levels"
    elif isinstance(err, MemoryError):
        text = "too large to read"
    return text if len(text) <= limit else text[: limit - 3] + "..."
