"""One :class:`~mrtpo_viz.tasks.base.Verifier` per IFEval instruction, reading its kwargs from the example.

An example holds its constraints as IFEval does, one entry per instruction: ``meta["constraints"] = [{"id":
"length_constraints:number_words", "kwargs": {"num_words": 50, "relation": "less than"}}, ...]`` (``id`` may also
be the verifier name, ``ifeval.word_count``). A verifier uses every entry of its own instruction:

- **one entry** (IFEval's rows never repeat an id): the official verdict, the official description;
- **several entries of the same id** (say ``at least 20`` and ``less than 41`` words, a range IFEval cannot say in
  one instruction): the score is 1 only if the response follows all of them (IFEval's prompt-level rule), the
  information is their descriptions one after the other, the spans are their union;
- **no entry**: an instruction without kwargs (``no_comma``, ``title``, ...) applies as it is; one with kwargs needs
  input: ``info()`` raises :class:`~mrtpo_viz.tasks.base.MissingArguments` and ``check()`` gives score NaN with a
  reason that starts with "needs input" (training treats NaN as "does not apply"). Malformed kwargs do the same.

Decision spans (the credit study's oracle) are the relevant spans plus the end-of-sequence token where ending the
response decides the verdict (:func:`.evaluation.decision_spans`); the union over entries, as the relevant spans.

Strict mode is the default (the registered verifiers); ``verifier(name, loose=True)`` gives the official loose mode
as a verifier named ``<name>.loose`` (not registered unless :func:`register_loose` is called).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Optional

from ..base import Example, Span, Verdict, Verifier, register
from . import evaluation as E
from .instructions import INSTRUCTIONS, Instruction, KwargsError, arguments, describe, instruction

LEGACY_HINT = (
    "entries are IFEval's {'id', 'kwargs'} (the {'name', 'args'} entries of mrtpo-viz 0.2 are no longer "
    "read: regenerate the data or convert it)"
)


def _matches(item: dict, inst: Instruction) -> bool:
    return item.get("id") in (inst.id, inst.name)


def _items(example: Any) -> list[dict]:
    """The example's constraint entries; KwargsError when ``meta["constraints"]`` is malformed."""
    items = (getattr(example, "meta", None) or {}).get("constraints")
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(i, dict) and "id" in i for i in items):
        raise KwargsError(f"meta['constraints'] must be a list of constraint entries; {LEGACY_HINT}")
    return items


def constraint_kwargs(example: Any, key: str) -> list[dict]:
    """The kwargs of every entry of instruction ``key`` (an id or a verifier name) in the example, in order.

    An instruction without kwargs and without an entry gives ``[{}]`` (it applies as it is); one with kwargs and
    without an entry raises :class:`KwargsError` ("needs input"), as does a malformed entry."""
    inst = instruction(key)
    found = [item.get("kwargs") for item in _items(example) if _matches(item, inst)]
    if found:
        return [{} if kw is None else kw for kw in found]
    if inst.params:
        raise KwargsError(
            f"the example has no {inst.id!r} constraint with its kwargs "
            f"{[p for p, _ in inst.params]} in meta['constraints']"
        )
    return [{}]


def _check(inst: Instruction, loose: bool):
    def check(response: str, example: Example) -> Verdict:
        try:
            results = [E.check(inst.id, response, kw, loose=loose) for kw in constraint_kwargs(example, inst.id)]
        except KwargsError as e:
            return Verdict(math.nan, f"needs input: {e}")
        ok = all(passed for passed, _ in results)
        return Verdict(float(ok), "; ".join(reason for _, reason in results))

    return check


def _info(inst: Instruction):
    def info(example: Example) -> str:
        try:
            return " ".join(describe(inst.id, kw) for kw in constraint_kwargs(example, inst.id))
        except KwargsError as e:
            raise KwargsError(f"{inst.name} needs input: {e}") from None

    return info


def _spans(inst: Instruction, of=E.relevant_spans):
    """The instruction's spans (``of``: ``E.relevant_spans`` or ``E.decision_spans``) over its kwargs in the
    example, or None when the example lacks them."""

    def spans(response: str, example: Example) -> Optional[list[Span]]:
        try:
            return sorted({s for kw in constraint_kwargs(example, inst.id) for s in of(inst.id, response, kw)})
        except KwargsError:
            return None

    return spans


def _args(verifier: Verifier, example: Example) -> dict[str, Any]:
    """The kwargs of the example's first entry of this instruction (None values dropped; {} if absent)."""
    inst = instruction(verifier.name.removesuffix(".loose"))
    try:
        items = _items(example)
    except KwargsError:
        return {}
    kw = next((item.get("kwargs") for item in items if _matches(item, inst)), None)
    return {k: v for k, v in kw.items() if v is not None} if isinstance(kw, dict) else {}


def _with_args(verifier: Verifier, example: Example, values: dict[str, Any]) -> Example:
    """The example with these kwargs in its first entry of this instruction (an entry is added if there is none)."""
    inst = instruction(verifier.name.removesuffix(".loose"))
    items = [dict(i) for i in _items(example)]
    at = next((n for n, item in enumerate(items) if _matches(item, inst)), None)
    if at is None:
        items.append({"id": inst.id, "kwargs": dict(values)})
    else:
        items[at]["kwargs"] = {**(items[at].get("kwargs") or {}), **values}
    return replace(example, meta={**example.meta, "constraints": items})


def make_verifier(inst: Instruction, loose: bool = False) -> Verifier:
    """The verifier of one instruction, strict (named ``ifeval.<name>``) or loose (``ifeval.<name>.loose``)."""
    mode = "loose" if loose else "strict"
    needs = f"; NaN ('needs input') without its kwargs {[p for p, _ in inst.params]}" if inst.params else ""
    origin = "IFEval's" if inst.official else "our extension"
    return Verifier(
        name=inst.name + (".loose" if loose else ""),
        task="instruction_following",
        title=inst.title + (" (loose)" if loose else ""),
        description=(
            f"1 if the response follows {origin} instruction {inst.id!r} ({mode} mode, official "
            f"semantics), else 0; a blank response scores 0{needs}."
        ),
        info_fn=_info(inst),
        check_fn=_check(inst, loose),
        spans_fn=_spans(inst),
        arguments=arguments(inst),
        args_fn=_args,
        with_args_fn=_with_args,
        decision_spans_fn=_spans(inst, E.decision_spans),
    )


def verifier(key: str, *, loose: bool = False) -> Verifier:
    """The verifier of instruction ``key`` (an official id, ``mrtpo:starts_with`` or a verifier name), strict by
    default; ``loose=True`` gives the official loose mode (named ``<name>.loose``)."""
    return make_verifier(instruction(key.removesuffix(".loose") if isinstance(key, str) else key), loose=loose)


def register_all() -> list[str]:
    """Register the strict verifiers (done on import of :mod:`mrtpo_viz.tasks`); returns their names."""
    return [register(make_verifier(inst), replace=True).name for inst in INSTRUCTIONS]


def register_loose() -> list[str]:
    """Also register the loose-mode verifiers ``ifeval.<name>.loose`` (for the CLI, TRL or the app by name)."""
    return [register(make_verifier(inst, loose=True), replace=True).name for inst in INSTRUCTIONS]


def verifier_names(ids: list[str]) -> tuple[str, ...]:
    """The verifier names of a list of instruction ids, each once, in order of first appearance."""
    return tuple(dict.fromkeys(instruction(i).name for i in ids))
