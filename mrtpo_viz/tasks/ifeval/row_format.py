"""IFEval-format rows as Examples: ``load_examples("instruction_following", path=...)`` reads them as they are.

Accepted fields (one JSON object per line):

- **IFEval** (``google/IFEval``, lm-eval's ``ifeval`` task): ``prompt`` (a string), ``instruction_id_list`` (official
  ids), ``kwargs`` (a list of dicts aligned with the ids; keys that are None are dropped, as the HF dataset pads every
  row with all kwarg names), optional ``key`` (kept as ``meta["key"]`` and used as the example id). ``kwargs`` (the
  list, or each entry) may also be a JSON string; a missing ``kwargs`` means ``{}`` for every id.
- **RLVR-style** (open-instruct's IFEval sets: ``messages`` + ``ground_truth``): the prompt is ``messages`` (chat
  messages) when there is no ``prompt``; ``ground_truth`` is a dict ``{"instruction_id": [...], "kwargs": [...]}``,
  or a list whose first element is one, given as an object, a JSON string or a Python-literal string (these sets
  write ``None``). ``instruction_id`` is also accepted in place of ``instruction_id_list`` at the top level.
- Not accepted: RLVR-IFeval's older ``{"func_name": ...}`` ground truth (open-instruct's own checker functions, not
  IFEval's) and instruction ids beyond the 25 official ones and ``mrtpo:starts_with`` (IFEvalG/IFBench ids such as
  ``count:word_count_range``): both are a ``ValueError`` that names them.

Kwargs are not validated here: a row whose kwargs are missing or malformed loads, and its verifier says "needs input"
(score NaN) for that example only. Rows carry no gold response, so ``reference`` is None unless the row has one.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from ..base import Example
from .instructions import instruction
from .verifiers import verifier_names

ID_FIELDS = ("instruction_id_list", "instruction_id")


def is_ifeval_row(row: Any) -> bool:
    """A row in one of the accepted IFEval formats (not an mrtpo-viz Example row, which has ``task``)."""
    return isinstance(row, dict) and "task" not in row and (any(f in row for f in ID_FIELDS) or "ground_truth" in row)


def _decoded(value: Any, what: str) -> Any:
    """A JSON (or, for RLVR sets, Python-literal) string decoded; anything else as it is."""
    if not isinstance(value, str):
        return value
    if len(value) > MAX_LITERAL_CHARS:
        raise ValueError(f"{what} is a string of {len(value):,} characters; at most {MAX_LITERAL_CHARS:,}")
    try:
        return json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        pass
    if _bracket_depth(value) > MAX_LITERAL_DEPTH:
        raise ValueError(f"{what} is nested deeper than {MAX_LITERAL_DEPTH} levels")
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        raise ValueError(f"{what} is a string that is neither JSON nor a Python literal: {value[:80]!r}") from None


MAX_LITERAL_CHARS = 65_536
"""Characters of a JSON or Python-literal string field (``kwargs``, ``ground_truth``): real ones are under 1 KB."""
MAX_LITERAL_DEPTH = 32
"""Nesting of such a field, checked before it is parsed."""


def _bracket_depth(text: str) -> int:
    """An upper bound of a literal's nesting (brackets inside its strings count too), without parsing it."""
    depth = deepest = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


def _shown(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ground_truth(row: dict) -> tuple[Any, Any]:
    """(ids, kwargs) from an RLVR-style ``ground_truth``."""
    truth = _decoded(row["ground_truth"], "ground_truth")
    if isinstance(truth, list):
        truth = _decoded(truth[0], "ground_truth[0]") if truth else None
    if isinstance(truth, dict) and "func_name" in truth:
        raise ValueError(
            "ground_truth uses RLVR-IFeval's 'func_name' format (open-instruct's own checkers, not "
            "IFEval's instructions); it is not supported"
        )
    if not isinstance(truth, dict) or not any(f in truth for f in ID_FIELDS):
        raise ValueError("ground_truth must hold {'instruction_id': [...], 'kwargs': [...]}")
    return next(truth[f] for f in ID_FIELDS if f in truth), truth.get("kwargs")


def _ids_and_kwargs(row: dict) -> tuple[list[str], list[Any]]:
    if any(f in row for f in ID_FIELDS):
        ids, kwargs = next(row[f] for f in ID_FIELDS if f in row), row.get("kwargs")
    else:
        ids, kwargs = _ground_truth(row)
    ids = _decoded(ids, "instruction_id_list")
    ids = [ids] if isinstance(ids, str) else ids
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise ValueError(f"instruction_id_list must be a non-empty list of instruction ids, got {_shown(ids)}")
    kwargs = _decoded(kwargs, "kwargs")
    if kwargs is None:
        kwargs = [{}] * len(ids)
    elif isinstance(kwargs, list):
        kwargs = [_decoded(k, "kwargs entry") for k in kwargs]
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        raise ValueError(f"{len(ids)} instruction ids but kwargs is {_shown(kwargs)}: give one kwargs dict per id")
    return ids, kwargs


def _prompt(row: dict) -> Any:
    prompt = row.get("prompt", row.get("messages"))
    if isinstance(prompt, str) and prompt.strip():
        return prompt
    if isinstance(prompt, list) and prompt and all(isinstance(m, dict) and "content" in m for m in prompt):
        return [{"role": str(m.get("role", "user")), "content": str(m["content"])} for m in prompt]
    raise ValueError("an IFEval row needs a non-blank 'prompt' string (or 'messages', a list of chat messages)")


def example_from_row(row: dict) -> Example:
    """An :class:`Example` from an IFEval-format row (see the module docstring); ValueError if it is not one."""
    ids, kwargs = _ids_and_kwargs(row)
    unknown = [i for i in ids if not _known(i)]
    if unknown:
        raise ValueError(
            f"unknown IFEval instruction id(s) {_shown(unknown)}; this version knows the 25 official ids "
            "and 'mrtpo:starts_with'"
        )
    constraints = [{"id": instruction(i).id, "kwargs": _without_none(kw)} for i, kw in zip(ids, kwargs)]
    meta: dict = {"constraints": constraints}
    key = row.get("key", row.get("id"))
    if key is not None:
        meta["key"] = key
    return Example(
        task="instruction_following",
        prompt=_prompt(row),
        meta=meta,
        id="" if key is None else str(key),
        reference=row.get("reference"),
        verifiers=verifier_names(ids),
    )


def _without_none(kwargs: Any) -> Any:
    """A kwargs dict without its None values (the HF dataset pads each with every kwarg name); other values as is
    (the verifier reports them)."""
    if kwargs is None:
        return {}
    return {k: v for k, v in kwargs.items() if v is not None} if isinstance(kwargs, dict) else kwargs


def _known(key: str) -> bool:
    try:
        instruction(key)
    except ValueError:
        return False
    return True
