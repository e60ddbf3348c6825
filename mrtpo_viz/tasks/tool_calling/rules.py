"""BFCL's AST-checker rules (Python categories) on decoded calls: what ``tool_call.correctness`` decides.

A call is ``{"name": str, "arguments": dict}``; a function is a normalized doc (:func:`.schema.normalize_function`);
an expected call is ``{argument: [accepted values]}``, ``""`` among them marking an argument that may be omitted. Each
check returns None when right, else a :data:`Failure` ``(error class, readable reason)``; the classes are BFCL's error
types, coarsened: wrong_count, wrong_func_name, missing_required, unexpected_param, type_error, value_error,
missing_optional, cannot_find_match (parallel), bad_example.

The rules, as BFCL's checker applies them (our own implementation of its semantics; the agreement with its code is
tested in ``tests/tasks/test_bfcl_reference.py``):

- **Calls.** ``parallel`` in the category: as many calls as expected calls, in any order, matched greedily (each
  expected call takes the first unused call that fits). ``multiple``: one call, checked against the function its
  expected name gives. Otherwise (``simple``): one call, checked against the first function.
- **Per call**, in BFCL's order: the exact name (case counts); every required argument present; every given argument
  declared *and* listed in the possible answer (so an optional argument the answer does not list may not be given);
  its type, then its value; every answer argument not given must accept ``""``.
- **Types** are exact (a bool is no integer, ``10.0`` is no integer); the one promotion is int to float for ``float``
  parameters, not inside arrays. ``any`` means a string. BFCL's "variable" rule: a value of the type of the first
  accepted value passes the type check, and whenever that type is not the declared one the value is compared
  literally. Array items are type-checked one level deep.
- **Values.** Strings are *standardized* (spaces and ``,./-_*^`` removed, lower case, ``'`` -> ``"``) and must be among
  the standardized accepted strings; lists compare item by item after standardizing their strings (order and length
  count); a dict must fit one accepted dict key by key (missing keys must accept ``""``); a list of dicts must fit an
  accepted list position by position; numbers, booleans and null by Python membership (``5 == 5.0``).
- **Where BFCL has no rule or raises** (our choices): ``number`` is ``float`` and ``object`` is ``dict``; unknown
  types are compared literally without a type check; an array without ``items`` gets no item check; malformed
  values (a non-dict in a list of dicts, a possible answer naming an unknown function) score 0 with a reason.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from .schema import CHECKER_TYPES, json_type, type_name

Failure = tuple[str, str]
"""(error class, readable reason)."""

_IGNORED_CHARS = re.compile(r"[ ,./\-_*^]")


def expected_name(name: str, underscore_to_dot: bool) -> str:
    """The name a call must use: exact, or with dots as underscores when ``underscore_to_dot``."""
    return name.replace(".", "_") if underscore_to_dot else name


# --- values ------------------------------------------------------------------------------------------------------


def standardize(text: str) -> str:
    """BFCL's string normalization: drop spaces and ``,./-_*^``, lowercase, single quotes become double quotes."""
    return _IGNORED_CHARS.sub("", text).lower().replace("'", '"')


def _std(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def _std_all(values: Any) -> list:
    return [_std(v) for v in (values if isinstance(values, (list, str)) else [values])]


def _answer_type(accepted: list) -> Optional[type]:
    """The type of the first accepted value that is not the omission marker ``""``."""
    return next((type(a) for a in accepted if a != ""), None)


def _items_fit(value: list, accepted_item: Any, inner: type) -> bool:
    if type(accepted_item) is not list:
        return True
    item_type = _answer_type(accepted_item)
    return all(type(v) is inner or (item_type is not None and type(v) is item_type) for v in value)


def _type_verdict(value: Any, accepted: list, outer: Optional[type], inner: Optional[type]) -> tuple[bool, bool]:
    """(type ok, compare literally). A value of the declared type passes (array items one level deep, against some
    accepted list); so does one of the accepted values' type (BFCL's "variable" case); both cases compare literally,
    without string normalization, when the accepted values are not of the declared type."""
    if outer is None:
        return True, True
    answer_type = _answer_type(accepted)
    literal = answer_type is not None and answer_type is not outer
    if type(value) is outer:
        items_ok = inner is None or any(_items_fit(value, a, inner) for a in accepted)
        return (True, literal) if items_ok else (False, False)
    return (True, True) if answer_type is not None and type(value) is answer_type else (False, False)


def _one_dict_fits(value: dict, answer: Any) -> bool:
    if not isinstance(answer, dict):
        return False
    if any(key not in answer or _std(v) not in _std_all(answer[key]) for key, v in value.items()):
        return False
    return all(key in value or (isinstance(opts, (list, str)) and "" in opts) for key, opts in answer.items())


def _dict_fits(value: dict, accepted: list) -> bool:
    return any(a != "" and _one_dict_fits(value, a) for a in accepted)


def _dict_list_fits(value: list, accepted: list) -> bool:
    """Same length as an accepted list, each dict fitting the accepted dict at its position."""
    return any(
        isinstance(a, (list, str))
        and len(a) == len(value)
        and all(isinstance(v, dict) and _dict_fits(v, [a[d]]) for d, v in enumerate(value))
        for a in accepted
    )


def _value_fits(value: Any, accepted: list, outer: Optional[type], inner: Optional[type], literal: bool) -> bool:
    if literal:
        return value in accepted
    if outer is dict:
        return _dict_fits(value, accepted)
    if outer is list and inner is dict:
        return _dict_list_fits(value, accepted)
    if outer is str:
        return standardize(value) in [standardize(a) for a in accepted if type(a) is str]
    if outer is list:
        return _std_all(value) in [_std_all(a) for a in accepted if isinstance(a, (list, str))]
    return value in accepted


def show_accepted(values: Any) -> str:
    """Accepted values for people: ``"a" | omitted``; dict answers one level down as ``{key: values}``."""

    def one(v):
        if v == "":
            return "omitted"
        if isinstance(v, dict) and all(isinstance(x, list) for x in v.values()):
            return "{" + ", ".join(f"{k}: {show_accepted(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list) and v and all(isinstance(d, dict) for d in v):
            return "[" + ", ".join(one(d) for d in v) + "]"
        return json.dumps(v, ensure_ascii=False)

    return " | ".join(one(v) for v in (values if isinstance(values, list) else [values]))


def _dict_mismatch(value: dict, accepted: list) -> str:
    """What differs from the first accepted dict, key by key."""
    answer = next((a for a in accepted if isinstance(a, dict)), {})
    for key, v in value.items():
        if key not in answer:
            return f"has unexpected key {key!r}"
        if _std(v) not in _std_all(answer[key]):
            return f"key {key!r} is {json.dumps(v, ensure_ascii=False)}; accepted: {show_accepted(answer[key])}"
    missing = [k for k, opts in answer.items() if k not in value and "" not in opts]
    return f"misses key {missing[0]!r}" if missing else f"matches no accepted value: {show_accepted(accepted)}"


def check_argument(key: str, value: Any, prop: dict, accepted: Any) -> Optional[Failure]:
    """None if the value passes BFCL's type and value rules for this argument, else the failure."""
    accepted = accepted if isinstance(accepted, list) else [accepted]
    name = type_name(prop)
    outer = CHECKER_TYPES.get(name)
    inner = CHECKER_TYPES.get(type_name(prop.get("items"))) if name in ("array", "tuple") else None
    if name in ("float", "number") and type(value) is int:
        value = float(value)
    ok, literal = _type_verdict(value, accepted, outer, inner)
    if not ok:
        want = name + (f" of {type_name(prop.get('items'))}" if inner else "")
        return "type_error", f"argument {key!r} should be {want}, got {json_type(value)} {json.dumps(value)}"
    if not _value_fits(value, accepted, outer, inner, literal):
        if outer is dict and not literal:
            return "value_error", f"argument {key!r} {_dict_mismatch(value, accepted)}"
        how = "" if literal or outer not in (str, list, dict) else " (case, spaces and ,./-_*^ ignored)"
        shown = json.dumps(value, ensure_ascii=False)
        return "value_error", f"argument {key!r} is {shown}; accepted{how}: {show_accepted(accepted)}"
    return None


# --- calls -------------------------------------------------------------------------------------------------------


def check_call(function: dict, call: dict, answer: dict, underscore_to_dot: bool = False) -> Optional[Failure]:
    """One call against one expected call ``{argument: [accepted]}`` of ``function``; None if it matches."""
    want = expected_name(function["name"], underscore_to_dot)
    if call["name"] != want:
        return "wrong_func_name", f"called {call['name']!r}; expected {want!r}"
    args, props = call["arguments"], function["parameters"]["properties"]
    missing = [k for k in function["parameters"]["required"] if k not in args]
    if missing:
        return "missing_required", f"{want}: missing required argument {missing[0]!r}"
    for key, value in args.items():
        if key not in props or key not in answer:
            return "unexpected_param", f"{want}: unexpected argument {key!r}"
        failure = check_argument(key, value, props[key] if isinstance(props[key], dict) else {}, answer[key])
        if failure:
            return failure[0], f"{want}: {failure[1]}"
    for key, accepted in answer.items():
        if key not in args and "" not in (accepted if isinstance(accepted, list) else [accepted]):
            return "missing_optional", f"{want}: argument {key!r} is missing (accepted: {show_accepted(accepted)})"
    return None


def call_mode(category: Optional[str], answers: list) -> str:
    """``parallel`` (any order), ``multiple`` (one call, function found by name) or ``simple`` (the first function)."""
    if category:
        return "parallel" if "parallel" in category else "multiple" if "multiple" in category else "simple"
    return "parallel" if len(answers) > 1 else "multiple"


def _find(functions: list[dict], name: str) -> Optional[dict]:
    return next((f for f in functions if f["name"] == name), None)


def _match_one(function: dict, calls: list[dict], used: set, answer: dict, dots: bool) -> Optional[Failure]:
    """Mark the first unused call that matches; else the failure against the first unused call of that name."""
    failures = []
    for j, call in enumerate(calls):
        if j not in used:
            failure = check_call(function, call, answer, dots)
            if failure is None:
                used.add(j)
                return None
            failures.append(failure)
    return next((f for f in failures if f[0] != "wrong_func_name"), failures[0] if failures else None)


def check_calls(
    functions: list[dict],
    calls: list[dict],
    answers: list,
    category: Optional[str] = None,
    underscore_to_dot: bool = False,
) -> Optional[Failure]:
    """BFCL's verdict on the whole list of calls; None if right."""
    mode = call_mode(category, answers)
    if not answers or not all(isinstance(a, dict) and len(a) == 1 for a in answers):
        return "bad_example", "the example has no usable possible answer"
    if len(calls) != (1 if mode == "simple" else len(answers)):
        return "wrong_count", f"{len(calls)} call(s); expected {1 if mode == 'simple' else len(answers)}"
    named = [next(iter(a.items())) for a in answers]
    if mode != "parallel":
        function = functions[0] if mode == "simple" and functions else _find(functions, named[0][0])
        if function is None:
            return "bad_example", f"the possible answer names unknown function {named[0][0]!r}"
        return check_call(function, calls[0], named[0][1], underscore_to_dot)
    used: set = set()
    for i, (name, answer) in enumerate(named, 1):
        function = _find(functions, name)
        if function is None:
            return "bad_example", f"the possible answer names unknown function {name!r}"
        failure = _match_one(function, calls, used, answer, underscore_to_dot)
        if failure:
            return "cannot_find_match", f"no call matches expected call {i} ({name}): {failure[1]}"
    return None
