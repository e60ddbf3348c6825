"""Strict and loose evaluation of IFEval instructions, as the official ``utils.test_instruction_following_*``.

- **strict** (the default): the checker on the response as is; a blank response fails every instruction;
- **loose**: also tries the response with its first line, its last line, or both removed (each then stripped), and
  each of those four with every ``*`` removed; it passes if any non-blank variant passes.

Departures from the official code, each for a reason (listed in docs/tasks.md, "Differences from the references"):
kwargs are required (:mod:`.instructions`); deeply nested JSON (``[`` x 100,000) fails instead of raising
``RecursionError``; a kwarg pattern that runs past its time budget fails with a reason instead of hanging; a
non-string response fails instead of raising; langdetect is seeded (``seed = 0``) so that a verdict on short or
ambiguous text does not change from run to run.
"""

from __future__ import annotations

from typing import Any

from .instruction_checks import CHECKS, PatternError, PatternTimeout, Result
from .instructions import KwargsError, instruction, validate_kwargs
from .spans import SPANS, Span, ending_decides


def loose_variants(response: str) -> list[tuple[str, str]]:
    """The official loose-mode variants of ``response``, labelled, in the official order."""
    lines = response.split("\n")
    cut = [
        ("as is", response),
        ("first line removed", "\n".join(lines[1:]).strip()),
        ("last line removed", "\n".join(lines[:-1]).strip()),
        ("first and last lines removed", "\n".join(lines[1:-1]).strip()),
    ]
    return (
        cut[:1]
        + [("'*' removed", response.replace("*", ""))]
        + cut[1:]
        + [(f"{label}, '*' removed", text.replace("*", "")) for label, text in cut[1:]]
    )


def _run(checker, text: str, kwargs: dict) -> Result:
    try:
        return checker(text, kwargs)
    except (PatternTimeout, PatternError) as e:
        return False, str(e)


def check(key: str, response: Any, kwargs: Any, *, loose: bool = False) -> Result:
    """Official verdict ``(passed, reason)`` of instruction ``key`` (an id or a verifier name) on ``response``.

    Strict by default; ``loose=True`` for the official loose mode. Raises :class:`KwargsError` for bad kwargs."""
    inst, kw = instruction(key), validate_kwargs(key, kwargs)
    if not isinstance(response, str):
        return False, "the response is not a string"
    checker = CHECKS[inst.id]
    if not loose:
        return _run(checker, response, kw) if response.strip() else (False, "empty response")
    first_reason = "empty response"
    for i, (label, text) in enumerate(loose_variants(response)):
        if text.strip():
            ok, reason = _run(checker, text, kw)
            if ok:
                return True, reason if i == 0 else f"{reason} (loose: {label})"
            first_reason = reason if i == 0 else first_reason
    return False, first_reason


def relevant_spans(key: str, response: Any, kwargs: Any) -> list[Span]:
    """Relevant spans of ``response`` for instruction ``key`` (strict reading; ``[]`` when a kwarg pattern runs past
    its time budget); raises :class:`KwargsError` for bad kwargs."""
    inst, kw = instruction(key), validate_kwargs(key, kwargs)
    try:
        return SPANS[inst.id](response if isinstance(response, str) else "", kw)
    except (PatternTimeout, PatternError):
        return []


def decision_spans(key: str, response: Any, kwargs: Any) -> list[Span]:
    """Decision spans of ``response`` for instruction ``key``: its relevant spans, plus the end-of-sequence token
    ``[len(response), len(response) + 1)`` where ending the response decides the verdict (an end phrase, closing
    quotes, a JSON body, an exact count or an upper limit on a count: :func:`.spans.ending_decides`); raises
    :class:`KwargsError` for bad kwargs."""
    inst, kw = instruction(key), validate_kwargs(key, kwargs)
    spans = relevant_spans(inst.id, response, kw)
    if not ending_decides(inst.id, kw):
        return spans
    n = len(response) if isinstance(response, str) else 0
    return sorted(set(spans) | {(n, n + 1)})


def evaluate(ids: list[str], kwargs_list: list[Any], response: str, *, loose: bool = False) -> list[Result]:
    """Verdicts for an IFEval row's instructions (``instruction_id_list`` and its aligned ``kwargs``)."""
    if len(ids) != len(kwargs_list):
        raise KwargsError(f"{len(ids)} instruction ids but {len(kwargs_list)} kwargs entries")
    return [check(i, response, kw, loose=loose) for i, kw in zip(ids, kwargs_list)]
