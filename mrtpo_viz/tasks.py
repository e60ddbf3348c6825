"""Examples and task families.

An :class:`Example` is one prompt of a task family with what its verifiers need (``meta``) and, for the sample
data, a gold reference response. Task families are ``tool_calling``, ``text_to_sql`` and
``instruction_following``; their sample data lives in ``sample_data/tasks/<task>.jsonl``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

Messages = list[dict[str, str]]
Prompt = Union[str, Messages]

TASKS: tuple[str, ...] = ("tool_calling", "text_to_sql", "instruction_following")
"""The task families, in the order the UI and CLI show them."""

SAMPLE_DATA = Path(__file__).resolve().parent.parent / "sample_data"
"""Root of the bundled sample data (tasks, databases, rollouts, the tiny policy)."""


@dataclass(frozen=True)
class Example:
    """One prompt of a task family."""

    task: str
    """Task family name, one of :data:`TASKS` (or a custom name)."""
    prompt: Prompt
    """A user message string, or a list of chat messages ``{"role", "content"}``."""
    meta: dict[str, Any] = field(default_factory=dict)
    """What the verifiers need: gold call, gold SQL and database, constraint arguments."""
    id: str = ""
    """Stable identifier, e.g. ``tool_calling-test-0007``."""
    reference: str | None = None
    """A gold reference response that scores 1 on every verifier of the example."""
    verifiers: tuple[str, ...] = ()
    """Names of the verifiers that apply to this example (dotted, e.g. ``tool_call.format``)."""

    def messages(self) -> Messages:
        """The prompt as chat messages (a plain string becomes one user message)."""
        if isinstance(self.prompt, str):
            return [{"role": "user", "content": self.prompt}]
        return [dict(m) for m in self.prompt]

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "id": self.id, "prompt": self.prompt, "meta": self.meta,
                "reference": self.reference, "verifiers": list(self.verifiers)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Example":
        if not isinstance(d, dict) or "prompt" not in d or "task" not in d:
            raise ValueError("an example needs at least the fields 'task' and 'prompt'")
        return cls(task=str(d["task"]), prompt=d["prompt"], meta=dict(d.get("meta") or {}),
                   id=str(d.get("id", "")), reference=d.get("reference"),
                   verifiers=tuple(d.get("verifiers") or ()))


def task_file(task: str) -> Path:
    return SAMPLE_DATA / "tasks" / f"{task}.jsonl"


def load_examples(task: str, split: str = "test", path: str | Path | None = None) -> list[Example]:
    """Load the sample examples of a task family.

    Args:
        task: one of :data:`TASKS`.
        split: ``"train"``, ``"test"`` or ``"all"``; each JSONL row carries a ``split`` field.
        path: another JSONL file in the same format (defaults to the bundled sample data).
    Returns:
        The examples of that split, in file order.
    """
    if path is None and task not in TASKS:
        raise ValueError(f"unknown task family {task!r}; known: {', '.join(TASKS)}")
    file = Path(path) if path is not None else task_file(task)
    if not file.is_file():
        raise FileNotFoundError(f"no sample data at {file}; run `python scripts/make_sample_data.py`")
    out = []
    with file.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{file}:{lineno}: not valid JSON ({e.msg})") from None
            if split != "all" and row.get("split", "test") != split:
                continue
            out.append(Example.from_dict(row))
    return out
