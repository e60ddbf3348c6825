"""Loading examples: the bundled task families (``names.TASKS``, data inside the package) or any JSONL file.

Each JSONL row is an :meth:`Example.from_dict` object with a ``split`` field (``train`` / ``test``), or an
IFEval-format row (``prompt``, ``instruction_id_list``, ``kwargs``, optional ``key``; RLVR-style ``messages`` +
``ground_truth`` too), read as it is by :func:`.ifeval.rows.example_from_row`.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..names import TASKS
from .base import Example
from .data import task_file
from .ifeval.rows import example_from_row, is_ifeval_row


def load_examples(task: str, split: str = "test", path: str | Path | None = None) -> list[Example]:
    """Load the sample examples of a task family.

    Args:
        task: one of :data:`TASKS`.
        split: ``"train"``, ``"test"`` or ``"all"``; each JSONL row carries a ``split`` field.
        path: another JSONL file (defaults to the bundled sample data): rows in the format above, or IFEval-format
            rows (see :mod:`.ifeval.rows` for the fields and the RLVR-style variants accepted). A row without a
            ``split`` field counts as ``test``, so an IFEval file loads whole with the default split.
    Returns:
        The examples of that split, in file order.
    """
    if path is None and task not in TASKS:
        raise ValueError(f"unknown task family {task!r}; known: {', '.join(TASKS)}")
    file = Path(path) if path is not None else task_file(task)
    if not file.is_file():
        raise FileNotFoundError(f"no examples file at {file}" + ("" if path is not None else
                                "; the installed package lacks its sample data: reinstall mrtpo-viz"))
    out = []
    with file.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{file}:{lineno}: not valid JSON ({e.msg})") from None
            if split != "all" and isinstance(row, dict) and row.get("split", "test") != split:
                continue
            try:
                out.append(example_from_row(row) if is_ifeval_row(row) else Example.from_dict(row))
            except ValueError as e:
                raise ValueError(f"{file}:{lineno}: {e}") from None
    return out
