"""A verifier's arguments as fields of the app (:attr:`mrtpo_viz.tasks.Verifier.arguments`): what each field shows,
the typed value of what a user typed, and the example that the chosen verifiers' values make.

Generic over ``Verifier.arguments``: every family declares its own (constraint kwargs, the gold call and tool schema,
the gold SQL and database); a verifier whose required arguments stay empty "needs input" and is neither scored nor
replayed. Each field is a text box (``FIELDS`` per verifier); its label names the argument and, for a choice, the
allowed values. An argument-less verifier still goes through ``with_args(example, {})`` (an ``ifeval`` constraint
then gets its entry in the example, so ``lowercase`` scores on a free prompt).
"""

from __future__ import annotations

import json
from typing import Any, Optional
from collections.abc import Sequence

import gradio as gr

from ..tasks import Argument, Example, MissingArguments, Verifier
from .custom_verifiers import resolve

FIELDS = 3
"""Argument fields per verifier box (the most any bundled verifier declares)."""
_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}


def field_label(v: Verifier, arg: Argument) -> str:
    """``sql.execution: database (one of company, school, shop)``; ``(optional)`` where it is not required."""
    kind = {
        "choice": f"one of {', '.join(arg.choices)}",
        "boolean": "true / false",
        "list": "comma-separated",
        "json": "JSON",
        "integer": "a whole number",
        "number": "a number",
    }.get(arg.kind, "")
    extra = [x for x in (kind, "" if arg.required else "optional") if x]
    return f"{v.name}: {arg.title}" + (f" ({'; '.join(extra)})" if extra else "")


def show_value(arg: Argument, value: Any) -> str:
    """A value as the field shows it (JSON for structures, ``true``/``false`` for booleans)."""
    if value is None:
        return ""
    if arg.kind in ("json",) or isinstance(value, (dict, list)) and arg.kind != "list":
        return json.dumps(value, ensure_ascii=False)
    if arg.kind == "list" and isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_value(v: Verifier, arg: Argument, text: str) -> Any:
    """The typed value of a field's text; a ValueError that names the verifier and the field when it is not one."""
    text = (text or "").strip()
    where = f"{v.name}: {arg.title}"
    try:
        if arg.kind == "integer":
            return int(text)
        if arg.kind == "number":
            return float(text)
        if arg.kind == "json":
            return json.loads(text)
        if arg.kind == "list":
            return json.loads(text) if text.startswith("[") else [x.strip() for x in text.split(",") if x.strip()]
    except json.JSONDecodeError as e:
        raise ValueError(f"{where} is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except ValueError:
        want = {"integer": "a whole number", "number": "a number"}.get(arg.kind, "valid JSON")
        raise ValueError(f"{where} must be {want}, got {text!r}") from None
    if arg.kind == "boolean":
        if text.lower() not in _TRUE | _FALSE:
            raise ValueError(f"{where} must be true or false, got {text!r}")
        return text.lower() in _TRUE
    if arg.kind == "choice" and text not in arg.choices:
        raise ValueError(f"{where} must be one of {', '.join(arg.choices)}, got {text!r}")
    return text


API_HINT = " (through the API, an omitted field sends the page's first value: pass \"\" for the example's own)"


def typed_values(v: Verifier, texts: Sequence[str]) -> dict[str, Any]:
    """The verifier's values from its fields (in the order of ``v.arguments``); empty fields are left out."""
    if len(v.arguments) > FIELDS:
        raise ValueError(f"{v.name} takes {len(v.arguments)} arguments; the app shows {FIELDS} fields per verifier")
    try:
        return {a.name: parse_value(v, a, t) for a, t in zip(v.arguments, texts) if (t or "").strip()}
    except ValueError as e:
        raise ValueError(f"{e}{API_HINT}") from None


def slot_texts(fields: Sequence[str], k: int) -> list[str]:
    """The texts of verifier box ``k``'s fields from all boxes' fields (``FIELDS`` each, box after box)."""
    return list(fields[k * FIELDS : (k + 1) * FIELDS])


def with_values(
    example: Example, names: Sequence[str], values: dict[str, dict[str, Any]], customs: Optional[dict] = None
) -> tuple[Example, dict]:
    """The example with each verifier's values (``values[name]``: argument -> value), and the verifiers that still
    lack required arguments: ``{name: [missing argument titles]}``. ``customs``: the session's custom verifiers.

    Every verifier's ``with_args`` is applied in turn, with ``{}`` when it takes no arguments or none was given,
    so an argument-less verifier gets what it needs (an ifeval constraint's entry)."""
    for name in names:
        example = resolve(name, customs).with_args(example, dict(values.get(name) or {}))
    needs = {}
    for name in names:  # after all of them: a value one verifier takes may be another's too (the tool schema)
        v = resolve(name, customs)
        titles = {a.name: a.title for a in v.arguments}
        if v.missing_args(example):
            needs[name] = [titles.get(m, m) for m in v.missing_args(example)]
    return example, needs


def with_typed_args(
    example: Example, names: Sequence[str], fields: Sequence[str], customs: Optional[dict] = None
) -> tuple[Example, dict]:
    """:func:`with_values` from the boxes' field texts (box ``k`` holds ``names[k]``; no fields: no values)."""
    values = (
        {n: typed_values(resolve(n, customs), slot_texts(fields, k)) for k, n in enumerate(names)} if fields else {}
    )
    return with_values(example, names, values, customs)


def information(v: Verifier, example: Example) -> Optional[str]:
    """The verifier's information for the example, or None when it needs input (missing arguments)."""
    if v.missing_args(example):
        return None
    try:
        return v.info(example)
    except MissingArguments:
        return None


def not_ready_reason(v: Verifier, example: Example, limit: int = 300) -> Optional[str]:
    """Why the verifier has no information for the example (a value it refuses: ``keyword "("``, ``num_words
    -1``), in at most ``limit`` characters; None when it has its information or only lacks arguments."""
    if v.missing_args(example):
        return None
    try:
        v.info(example)
    except MissingArguments as e:
        text = str(e).removeprefix(f"{v.name} needs input: ")
        return text if len(text) <= limit else text[: limit - 3] + "..."
    return None


def field_updates(name: Optional[str], example: Example, customs: Optional[dict] = None) -> list[dict]:
    """The ``FIELDS`` updates of one verifier box's fields: one per argument (label, the example's value, a hint),
    the rest hidden; ``name`` None hides them all."""
    v = resolve(name, customs) if name else None
    args = list(v.arguments[:FIELDS]) if v is not None else []
    have = v.args(example) if v is not None else {}
    shown = [
        gr.update(
            visible=True,
            label=field_label(v, a),
            value=show_value(a, have.get(a.name)),
            placeholder=a.description or a.title,
        )
        for a in args
    ]
    return shown + [gr.update(visible=False, value="") for _ in range(FIELDS - len(args))]
