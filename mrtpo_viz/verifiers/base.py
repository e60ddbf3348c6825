"""The Verifier contract and the registry of verifiers.

A verifier scores one reward of a response (``check`` -> score in [0, 1] and a short reason), says what it checks
(``info``: its *verifier information*, the text the replay inserts into the prompt) and, where it can, which
character spans of the response decide its verdict (``spans``: the ground truth of the localization benchmark).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from ..tasks import Example

Span = tuple[int, int]


@dataclass(frozen=True)
class Verdict:
    """A verifier's result for one response."""

    score: float
    """Reward in [0, 1]."""
    reason: str
    """One short readable sentence that says why."""


@dataclass(frozen=True)
class Verifier:
    """One verifiable reward."""

    name: str
    """Dotted name, e.g. ``tool_call.format``, ``sql.execution``, ``ifeval.no_comma``."""
    task: str
    """Task family it belongs to (``tool_calling``, ``text_to_sql``, ``instruction_following``) or ``custom``."""
    title: str
    """Short human title, shown in the UI and used in the information block ``[Verifier: {title}]``."""
    description: str
    """One or two sentences: what it checks and how it scores."""
    info_fn: Callable[["Example"], str]
    """Example -> verifier information text."""
    check_fn: Callable[[str, "Example"], Verdict]
    """(response, example) -> Verdict. Never raises on bad responses: returns score 0 with a reason."""
    spans_fn: Optional[Callable[[str, "Example"], Optional[list[Span]]]] = None
    """(response, example) -> character spans ``[start, end)`` that decide the verdict, or None if unknown."""

    def __post_init__(self):
        if not self.name or " " in self.name:
            raise ValueError(f"verifier name must be a non-empty dotted name without spaces, got {self.name!r}")

    def info(self, example: "Example") -> str:
        return self.info_fn(example)

    def check(self, response: str, example: "Example") -> Verdict:
        return self.check_fn(response, example)

    def score(self, response: str, example: "Example") -> float:
        return float(self.check_fn(response, example).score)

    def relevant_spans(self, response: str, example: "Example") -> Optional[list[Span]]:
        return None if self.spans_fn is None else self.spans_fn(response, example)

    @classmethod
    def from_trl(cls, fn: Callable, name: str, info, title: Optional[str] = None, task: str = "custom") -> "Verifier":
        """Wrap a TRL reward function ``fn(completions, **kwargs) -> list[float | None]`` (see ``custom.py``)."""
        from .custom import verifier_from_trl
        return verifier_from_trl(fn, name=name, info=info, title=title, task=task)

    def as_trl_reward(self) -> Callable:
        """This verifier as a TRL reward function ``fn(prompts, completions, **columns)`` (see ``custom.py``)."""
        from .custom import as_trl_reward
        return as_trl_reward(self)


VERIFIERS: dict[str, Verifier] = {}
"""Registry: name -> Verifier. Task modules add theirs on import of :mod:`mrtpo_viz.verifiers`."""


def register(verifier: Verifier, *, replace: bool = False) -> Verifier:
    """Add a verifier to the registry (``replace=True`` to overwrite one of the same name)."""
    if verifier.name in VERIFIERS and not replace:
        raise ValueError(f"a verifier named {verifier.name!r} is already registered")
    VERIFIERS[verifier.name] = verifier
    return verifier


def list_verifiers(task: str | None = None) -> list[str]:
    """Registered verifier names, for one task family or all."""
    return [n for n, v in VERIFIERS.items() if task is None or v.task == task]


def get_verifier(name: str) -> Verifier:
    """Look a verifier up by name; a clear error lists the known names."""
    try:
        return VERIFIERS[name]
    except KeyError:
        known = ", ".join(sorted(VERIFIERS)) or "(none registered)"
        raise KeyError(f"unknown verifier {name!r}; known verifiers: {known}") from None
