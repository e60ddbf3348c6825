"""What a tool-calling example gives its verifiers: function schemas, possible answers, a category.

An example's ``meta`` holds, in BFCL's terms:

- ``functions``: the function docs, OpenAI style ``{"type": "function", "function": {...}}`` or BFCL style
  ``{"name", "description", "parameters": {"type": "dict", "properties", "required"}}`` (a list, or one doc);
- ``possible_answer``: BFCL's ground truth ``[{function name: {argument: [accepted values]}}]``, one entry per expected
  call, ``""`` among the accepted values meaning "may be omitted"; also accepted: the gold call(s)
  ``{"name", "arguments"}`` (each argument takes exactly its gold value) or a gold response of ``<tool_call>`` blocks;
- ``category`` (optional): BFCL's category (``parallel`` in it: any number of calls in any order; otherwise one call);
- ``underscore_to_dot`` (optional): names with dots are called with ``_`` instead (BFCL's setting for APIs that
  forbid dots in names).

The bundled examples' meta ``{"tool", "arguments", "schema"}`` reads as ``functions = [schema]``, ``possible_answer =
[{tool: {argument: [gold value]}}]`` and category ``simple``. What is missing or unusable raises
:class:`MissingArguments` with what to give. Also here: the format verifier's type rules (:func:`schema_errors`) and the
compact signature that its information shows.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from ..base import MissingArguments
from ..tool_catalog import TOOLS
from .parsing import parse_calls

CHECKER_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
    "number": float,
    "object": dict,
}
"""Declared type -> the Python type BFCL's rules expect (BFCL's Python table; OpenAI's ``number``/``object`` added)."""
_JSON_NAMES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
    type(None): "null",
}
_FITS = {
    str: lambda v: isinstance(v, str),
    int: lambda v: type(v) is int,
    float: lambda v: type(v) in (int, float),
    bool: lambda v: type(v) is bool,
    list: lambda v: isinstance(v, list),
    dict: lambda v: isinstance(v, dict),
}
"""Format's type tests: exact JSON types (a bool is no integer, ``10.0`` is no integer); an int fits a float."""


def type_name(prop: Any) -> str:
    """The declared type name (the first non-null one of a JSON-schema type list); "" when none."""
    kind = prop.get("type", "") if isinstance(prop, dict) else ""
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "")
    return kind if isinstance(kind, str) else ""


def json_type(value: Any) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


# --- reading the example -----------------------------------------------------------------------------------------


def normalize_function(doc: dict) -> dict:
    """An OpenAI-style or BFCL function doc as ``{"name", "description", "parameters": {"type", "properties",
    "required"}}``."""
    if isinstance(doc.get("function"), dict) and doc.get("type", "function") == "function":
        doc = doc["function"]
    params = doc.get("parameters") if isinstance(doc.get("parameters"), dict) else {}
    props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
    required = params.get("required") if isinstance(params.get("required"), list) else []
    return {
        "name": str(doc.get("name", "")),
        "description": doc.get("description", ""),
        "parameters": {"type": params.get("type", "object"), "properties": dict(props), "required": list(required)},
    }


def functions_from(value: Any) -> list[dict]:
    """Function docs (a list, or one doc) normalized; MissingArguments when there are none or one has no name."""
    docs = [value] if isinstance(value, dict) else value
    if not isinstance(docs, list) or not docs or not all(isinstance(d, dict) for d in docs):
        raise MissingArguments(
            "'functions' must be a non-empty list of function schemas (OpenAI-style "
            '{"type": "function", "function": {...}} or BFCL {"name", "parameters"})'
        )
    functions = [normalize_function(d) for d in docs]
    if not all(f["name"] for f in functions):
        raise MissingArguments("every function schema in 'functions' needs a 'name'")
    return functions


def _answer_of_call(call: dict) -> dict:
    return {call["name"]: {k: [v] for k, v in call["arguments"].items()}}


def _is_call(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("name"), str) and isinstance(value.get("arguments"), dict)


def answers_from(value: Any) -> list[dict]:
    """Possible answers in BFCL's form from that form, one ``{name: {arg: [accepted]}}``, gold call(s) or a gold
    ``<tool_call>`` response; MissingArguments saying what is expected otherwise."""
    if isinstance(value, str):
        calls, why = parse_calls(value, strict=False)
        if calls is None:
            raise MissingArguments(f"'possible_answer' as text must be <tool_call> blocks: {why}")
        return [_answer_of_call(c) for c in calls]
    items = [value] if isinstance(value, dict) else value
    if not isinstance(items, list) or not items:
        raise MissingArguments("'possible_answer' must be a non-empty list of expected calls")
    out = []
    for item in items:
        if _is_call(item):
            out.append(_answer_of_call(item))
        elif (
            isinstance(item, dict)
            and len(item) == 1
            and isinstance(next(iter(item.values())), dict)
            and all(isinstance(a, list) for a in next(iter(item.values())).values())
        ):
            out.append(item)
        else:
            raise MissingArguments(
                'each expected call must be {"name": ..., "arguments": {...}} or BFCL\'s '
                "{function name: {argument: [accepted values]}}, got " + json.dumps(item)[:120]
            )
    return out


def _catalogue_order(schema: Any) -> Any:
    """The built-in catalogue's copy of a schema when they are equal (its property order; the sample files store
    keys sorted), else the schema itself."""
    if not isinstance(schema, dict):
        return schema
    built_in = TOOLS.get(schema.get("name")) if isinstance(schema.get("name"), str) else None
    return built_in if built_in is not None and built_in == schema else schema


def example_functions(meta: dict) -> list[dict]:
    """The example's functions (``functions``; a catalogue tool keeps the catalogue's property order)."""
    if meta.get("functions") not in (None, "", []):
        given = meta["functions"]
        return functions_from(
            [_catalogue_order(f) for f in given] if isinstance(given, list) else _catalogue_order(given)
        )
    raise MissingArguments("the example gives no functions (tool schemas): set 'functions'")


def example_answers(meta: dict) -> list[dict]:
    """The example's possible answers (``possible_answer``)."""
    if meta.get("possible_answer") not in (None, "", []):
        return answers_from(meta["possible_answer"])
    raise MissingArguments("the example gives no gold call or possible answers: set 'possible_answer'")


def example_category(meta: dict) -> Optional[str]:
    """BFCL's category of the example (``simple`` for the bundled data), or None when not given."""
    if isinstance(meta.get("category"), str) and meta["category"]:
        return meta["category"]
    return None


def single_call(category: Optional[str]) -> bool:
    """Whether the category asks for exactly one call (BFCL's simple and multiple categories, the bundled data)."""
    return category is not None and "parallel" not in category


# --- tool_call.format's type rules -------------------------------------------------------------------------------


def _nullable(value: Any, prop: dict) -> bool:
    declared = prop.get("type")
    return value is None and bool(
        prop.get("nullable")
        or isinstance(declared, list)
        and "null" in declared
        or "default" in prop
        and prop["default"] is None
    )


def value_errors(value: Any, prop: dict, path: str) -> list[str]:
    """Type and enum errors of a value under a declared property (array items and declared keys recursively).

    Integers fit ``float``/``number``; ``any`` and unknown types fit everything; null fits a nullable property, a type
    list with ``null`` or a ``null`` default. Undeclared nested keys and nested ``required`` are not enforced (BFCL's
    own answers break them)."""
    if _nullable(value, prop):
        return []
    name = type_name(prop)
    kind = None if name == "any" else CHECKER_TYPES.get(name)
    if kind is not None and not _FITS[kind](value):
        return [f"{path} should be of type {name}, got {json_type(value)}"]
    if isinstance(prop.get("enum"), list) and not isinstance(value, (list, dict)) and value not in prop["enum"]:
        return [
            f"{path} must be one of {json.dumps(prop['enum'], ensure_ascii=False)}, got "
            f"{json.dumps(value, ensure_ascii=False)}"
        ]
    errors = []
    if isinstance(value, list) and isinstance(prop.get("items"), dict):
        for i, item in enumerate(value):
            errors += value_errors(item, prop["items"], f"{path}[{i}]")
    if isinstance(value, dict) and isinstance(prop.get("properties"), dict):
        for key, item in value.items():
            if isinstance(prop["properties"].get(key), dict):
                errors += value_errors(item, prop["properties"][key], f"{path}.{key}")
    return errors


def schema_errors(arguments: dict, function: dict) -> list[str]:
    """Missing required and unknown arguments, then the type and enum errors of the declared ones."""
    props, required = function["parameters"]["properties"], function["parameters"]["required"]
    errors = [f"missing required argument {k!r}" for k in required if k not in arguments]
    for key, value in arguments.items():
        if not isinstance(props.get(key), dict):
            errors.append(f"unknown argument {key!r}")
        else:
            errors += value_errors(value, props[key], f"argument {key!r}")
    return errors


def _describe(prop: dict) -> str:
    if "enum" in prop:
        return "|".join(json.dumps(e) for e in prop["enum"])
    kind = prop.get("type", "any") if isinstance(prop.get("type", "any"), str) else type_name(prop) or "any"
    items = prop.get("items")
    return f"{kind} of {_describe(items)}" if isinstance(items, dict) and kind in ("array", "tuple") else kind


def compact_function(function: dict) -> str:
    """``get_weather(city: string (required), unit: "celsius"|"fahrenheit")``."""
    required = set(function["parameters"]["required"])
    parts = [
        f"{k}: {_describe(p if isinstance(p, dict) else {})}" + (" (required)" if k in required else "")
        for k, p in function["parameters"]["properties"].items()
    ]
    return f"{function['name']}({', '.join(parts)})"
