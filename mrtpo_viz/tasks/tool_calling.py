"""Tool-calling verifiers: ``tool_call.format`` (one well-formed call that fits its schema) and
``tool_call.correctness`` (right tool, then the fraction of gold arguments with the right value).

The response format is ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` with only whitespace around
it. Parsing uses plain string search and :mod:`json` (no regular expressions, so nothing can backtrack), and a small
scanner that records where each key and value of the call object sits in the response, for the relevant spans:

- ``tool_call.format`` -> its decision points: the opening tag ``<tool_call>``, the first ``{`` after it, the keys
  ``"name"`` and ``"arguments"`` (with their quotes) and the closing tag ``</tool_call>``, those that are present;
  None when the response has no opening tag or no ``{`` after it.
- ``tool_call.correctness`` -> the value of ``"name"`` and the value of each gold argument the call contains
  (string values without their quotes; other values as written); None when the call object cannot be scanned.
"""
from __future__ import annotations

import json
import math
from typing import Any, Optional

from .base import Span, Verdict, Verifier, register
from .tool_catalog import CLOSE_TAG, OPEN_TAG, TOOLS

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"
JSON_TYPES = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}
"""JSON-schema type name -> test of a decoded Python value."""


# --- locating the call -----------------------------------------------------------------------------------------

def block_bounds(text: str) -> Optional[tuple[int, int]]:
    """(start, end) of the first block's inner text; the end is the closing tag or the end of the text."""
    start = text.find(OPEN_TAG)
    if start == -1:
        return None
    inner = start + len(OPEN_TAG)
    close = text.find(CLOSE_TAG, inner)
    return inner, (len(text) if close == -1 else close)


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def scan_object(text: str, i: int) -> Optional[tuple[dict[str, tuple[Span, Span, Any]], int]]:
    """Scan the JSON object that starts at ``text[i] == "{"``, one level deep.

    Returns ``({key: (key_span, value_span, value)}, end)``, where ``key_span`` includes the quotes and
    ``value_span`` covers a string's content without quotes, any other value as written; or None if it is not a
    well-formed object. A repeated key keeps its last occurrence (as :func:`json.loads`).
    """
    if i >= len(text) or text[i] != "{":
        return None
    found: dict[str, tuple[Span, Span, Any]] = {}
    i = _skip_ws(text, i + 1)
    if i < len(text) and text[i] == "}":
        return found, i + 1
    try:
        while True:
            if i >= len(text) or text[i] != '"':
                return None
            key, k_end = json.decoder.scanstring(text, i + 1)
            j = _skip_ws(text, k_end)
            if j >= len(text) or text[j] != ":":
                return None
            v_start = _skip_ws(text, j + 1)
            value, v_end = _DECODER.raw_decode(text, v_start)
            quoted = isinstance(value, str)
            found[key] = ((i, k_end), (v_start + quoted, v_end - quoted), value)
            i = _skip_ws(text, v_end)
            if i < len(text) and text[i] == "}":
                return found, i + 1
            if i >= len(text) or text[i] != ",":
                return None
            i = _skip_ws(text, i + 1)
    except (ValueError, RecursionError):
        return None


def scan_call(text: str) -> Optional[dict[str, tuple[Span, Span, Any]]]:
    """The scanned call object of the first block (its first ``{`` after the tag), or None."""
    bounds = block_bounds(text)
    if bounds is None:
        return None
    brace = _skip_ws(text, bounds[0])
    scanned = scan_object(text[:bounds[1]], brace)
    return None if scanned is None else scanned[0]


# --- schema ----------------------------------------------------------------------------------------------------

def schema_errors(arguments: dict, schema: dict) -> list[str]:
    """What is wrong with ``arguments`` under a tool's ``schema`` (required, unknown keys, types, enums)."""
    props = schema.get("parameters", {}).get("properties", {})
    required = schema.get("parameters", {}).get("required", [])
    errors = [f"missing required argument {k!r}" for k in required if k not in arguments]
    for key, value in arguments.items():
        prop = props.get(key)
        if prop is None:
            errors.append(f"unknown argument {key!r}")
        elif not JSON_TYPES.get(prop.get("type"), lambda v: True)(value):
            errors.append(f"argument {key!r} should be of type {prop.get('type')}, got {type(value).__name__}")
        elif "enum" in prop and value not in prop["enum"]:
            errors.append(f"argument {key!r} must be one of {prop['enum']}, got {value!r}")
    return errors


def compact_schema(schema: dict) -> str:
    """``get_weather(city: string (required), unit: "celsius"|"fahrenheit")``."""
    params = schema.get("parameters", {})
    required = set(params.get("required", []))
    parts = []
    for key, prop in params.get("properties", {}).items():
        kind = "|".join(json.dumps(e) for e in prop["enum"]) if "enum" in prop else prop.get("type", "any")
        parts.append(f"{key}: {kind}" + (" (required)" if key in required else ""))
    return f"{schema.get('name', '?')}({', '.join(parts)})"


# --- tool_call.format -----------------------------------------------------------------------------------------

def _block_error(text: str) -> Optional[str]:
    """Why the response is not exactly one block with only whitespace around it, or None."""
    n_open, n_close = text.count(OPEN_TAG), text.count(CLOSE_TAG)
    if n_open == 0:
        return "no <tool_call> block"
    if n_open > 1 or n_close > 1:
        return f"{max(n_open, n_close)} <tool_call> blocks; exactly one is allowed"
    start, close = text.find(OPEN_TAG), text.find(CLOSE_TAG)
    if close < start:
        return "missing </tool_call> closing tag"
    if text[:start].strip() or text[close + len(CLOSE_TAG):].strip():
        return "text outside the <tool_call> block"
    return None


def parse_call(text: str) -> tuple[Optional[dict], str]:
    """The call object of the first block as ``(obj, "")``, or ``(None, why not)``."""
    bounds = block_bounds(text)
    if bounds is None:
        return None, "no <tool_call> block"
    try:
        obj = json.loads(text[bounds[0]:bounds[1]])
    except (ValueError, RecursionError):
        return None, "the block is not valid JSON"
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not isinstance(obj.get("arguments"), dict):
        return None, 'the block is not {"name": string, "arguments": object}'
    return obj, ""


def check_format(response: str, example) -> Verdict:
    """1 iff exactly one block, whitespace around it, JSON ``{"name", "arguments"}``, a known tool, schema types."""
    text = response if isinstance(response, str) else ""
    why = _block_error(text)
    obj, why_parse = (None, "") if why else parse_call(text)
    why = why or why_parse
    if not why and set(obj) != {"name", "arguments"}:
        why = f"unexpected keys {sorted(set(obj) - {'name', 'arguments'})} in the call object"
    if not why and obj["name"] not in TOOLS:
        why = f"unknown tool {obj['name']!r}"
    if why:
        return Verdict(0.0, why)
    errors = schema_errors(obj["arguments"], TOOLS[obj["name"]])
    if errors:
        return Verdict(0.0, "; ".join(errors[:3]))
    return Verdict(1.0, f"well-formed call to {obj['name']}")


def format_spans(response: str, example) -> Optional[list[Span]]:
    """Opening tag, first ``{``, the keys ``"name"`` and ``"arguments"``, closing tag (those present)."""
    text = response if isinstance(response, str) else ""
    bounds = block_bounds(text)
    if bounds is None:
        return None
    brace = _skip_ws(text, bounds[0])
    if brace >= bounds[1] or text[brace] != "{":
        return None
    spans = [(bounds[0] - len(OPEN_TAG), bounds[0]), (brace, brace + 1)]
    scanned = scan_object(text[:bounds[1]], brace)
    if scanned is not None:
        spans += [scanned[0][k][0] for k in ("name", "arguments") if k in scanned[0]]
    if text.startswith(CLOSE_TAG, bounds[1]):
        spans.append((bounds[1], bounds[1] + len(CLOSE_TAG)))
    return sorted(spans)


def format_info(example) -> str:
    schema = TOOLS.get(example.meta.get("tool")) or example.meta.get("schema") or {}
    return ('Reply with exactly one <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> block and nothing '
            f"else; the arguments must fit the schema: {compact_schema(schema)}")


# --- tool_call.correctness ------------------------------------------------------------------------------------

def same_value(gold: Any, got: Any) -> bool:
    """Normalized equality: strings casefolded and stripped, numbers numerically ("12" == 12), booleans exactly."""
    if isinstance(gold, bool) or isinstance(got, bool):
        return str(gold).strip().casefold() == str(got).strip().casefold()
    if isinstance(gold, (int, float)) or isinstance(got, (int, float)):
        try:
            return math.isclose(float(gold), float(got), rel_tol=1e-9, abs_tol=1e-9)
        except (TypeError, ValueError, OverflowError):
            return False
    if isinstance(gold, str) and isinstance(got, str):
        return gold.strip().casefold() == got.strip().casefold()
    return gold == got


def check_correctness(response: str, example) -> Verdict:
    """0 without a parseable call or with the wrong tool; else the fraction of gold arguments given correctly."""
    gold_name, gold_args = example.meta.get("tool"), example.meta.get("arguments")
    if not isinstance(gold_name, str) or not isinstance(gold_args, dict):
        return Verdict(0.0, "the example has no gold tool and arguments in meta")
    obj, why = parse_call(response if isinstance(response, str) else "")
    if obj is None:
        return Verdict(0.0, why)
    if obj["name"].strip().casefold() != gold_name.casefold():
        return Verdict(0.0, f"called {obj['name']!r}; expected {gold_name!r}")
    if not gold_args:
        return Verdict(1.0, f"right tool {gold_name}")
    wrong = [k for k, v in gold_args.items() if k not in obj["arguments"] or not same_value(v, obj["arguments"][k])]
    score = 1.0 - len(wrong) / len(gold_args)
    return Verdict(score, f"right tool; {len(gold_args) - len(wrong)}/{len(gold_args)} arguments right"
                   + (f" (wrong or missing: {', '.join(wrong)})" if wrong else ""))


def correctness_spans(response: str, example) -> Optional[list[Span]]:
    """The value of ``"name"`` and the values of the gold arguments present in the call."""
    scanned = scan_call(response if isinstance(response, str) else "")
    if scanned is None:
        return None
    spans = [scanned["name"][1]] if "name" in scanned else []
    gold = example.meta.get("arguments") or {}
    args = scanned.get("arguments")
    if args is not None and isinstance(args[2], dict):
        sub = scan_object(response, args[1][0])
        if sub is not None:
            spans += [v[1] for k, v in sub[0].items() if k in gold]
    return sorted(spans)


def correctness_info(example) -> str:
    """The gold call, arguments in schema order (the sample files store keys sorted)."""
    name, args = example.meta.get("tool"), example.meta.get("arguments") or {}
    order = list(TOOLS.get(name, {}).get("parameters", {}).get("properties", {})) + sorted(args)
    call = {"name": name, "arguments": {k: args[k] for k in dict.fromkeys(order) if k in args}}
    return f"The correct call is {json.dumps(call, ensure_ascii=False)}"


register(Verifier(
    name="tool_call.format", task="tool_calling", title="Tool-call format",
    description="1 if the response is exactly one <tool_call> block whose JSON names a known tool and whose "
                "arguments fit that tool's schema types; else 0.",
    info_fn=format_info, check_fn=check_format, spans_fn=format_spans), replace=True)
register(Verifier(
    name="tool_call.correctness", task="tool_calling", title="Tool-call correctness",
    description="0 for no parseable call or the wrong tool; otherwise the fraction of the gold arguments whose "
                "values match (strings casefolded, numbers compared numerically).",
    info_fn=correctness_info, check_fn=check_correctness, spans_fn=correctness_spans), replace=True)
