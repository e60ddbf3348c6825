"""``tool_call.correctness`` against BFCL's own AST checker on bfcl-eval's shipped data: generated cases and verdicts.

For every row of the supported categories, calls are generated from the possible answers: **right** variants (the
reference, each alternative accepted value, optional arguments omitted or written out, int for float, key order,
case and spacing, call order, dots as ``_`` under ``underscore_to_dot``), **wrong** ones (a wrong value, wrong types,
an unknown argument, a missing argument, wrong or other function names, a reversed list, no / an extra / a missing
call), **edge** values near BFCL's type and normalization rules, and seeded **fuzz** substitutions. The label is only
how a case was made: the truth is whatever BFCL says. Each case is scored by ``bfcl_eval``'s ``ast_checker`` (on the
calls as decoded values) and by ours (on the same calls rendered as ``<tool_call>`` blocks, a real JSON round trip).

BFCL's checker module is imported with its model registry (``bfcl_eval.constants.model_config``, which imports every
API client) replaced by a stub for the import only; the checker reads just ``underscore_to_dot`` from a model's config.
Used by ``tests/tasks/test_bfcl_agreement.py`` and ``benchmarks/reference_agreement.py --bfcl``. Needs
``pip install bfcl-eval==2026.3.23 --no-deps``.
"""

from __future__ import annotations

import copy
import importlib
import json
import random
import sys
import types
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mrtpo_viz.names import BFCL_CATEGORIES  # noqa: E402
from mrtpo_viz.tasks.bfcl import load_bfcl, reference_arguments  # noqa: E402
from mrtpo_viz.tasks.tool_calling import correctness_result, render_calls  # noqa: E402
from mrtpo_viz.tasks.tool_calling.schema import type_name  # noqa: E402

MODELS = {False: "agree-exact", True: "agree-dots"}
"""Stub model names: one with exact function names, one with BFCL's ``underscore_to_dot``."""
COARSE = (
    "wrong_count",
    "wrong_func_name",
    "missing_required",
    "unexpected_param",
    "type_error",
    "missing_optional",
    "cannot_find_match",
)


def load_bfcl_checker():
    """``(ast_checker, Language)`` from the installed bfcl-eval, its model registry stubbed for the import only."""
    name = "bfcl_eval.constants.model_config"
    stubbed = name not in sys.modules
    if stubbed:
        stub = types.ModuleType(name)
        stub.MODEL_CONFIG_MAPPING = {}
        sys.modules[name] = stub
    try:
        from bfcl_eval.constants.enums import Language

        module = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
    finally:
        if stubbed:  # the checker keeps its reference to the mapping; nobody else sees the stub
            del sys.modules[name]
            parent = sys.modules.get("bfcl_eval.constants")
            if parent is not None and getattr(parent, "model_config", None) is not None:
                delattr(parent, "model_config")
    for dots, model in MODELS.items():
        module.MODEL_CONFIG_MAPPING[model] = types.SimpleNamespace(underscore_to_dot=dots)
    return module.ast_checker, Language


def coarse_error(error_type: str) -> str:
    """BFCL's ``error_type`` as the class ``correctness_result`` reports."""
    for c in COARSE:
        if error_type.endswith(c) or error_type.startswith(c):
            return c
    return "value_error" if "value_error" in error_type or "checker:unclear" in error_type else error_type


# --- generated calls -----------------------------------------------------------------------------------------------


def _function(example, name):
    return next((f for f in example.meta["functions"] if f["name"] == name), None)


def base_calls(example) -> list[tuple]:
    """Per expected call: (name, reference arguments, accepted values per argument, properties, required)."""
    out = []
    for answer in example.meta["possible_answer"]:
        ((name, accepted),) = answer.items()
        params = (_function(example, name) or {}).get("parameters", {})
        out.append(
            (
                name,
                reference_arguments(accepted, _function(example, name)),
                accepted,
                params.get("properties", {}),
                params.get("required", []),
            )
        )
    return out


def _with(calls, i, name=None, args=None) -> list[tuple[str, dict]]:
    """The plain call list, call ``i`` replaced."""
    plain = [(n, copy.deepcopy(a)) for n, a, *_ in calls]
    if i is not None:
        plain[i] = (name if name is not None else plain[i][0], args if args is not None else plain[i][1])
    return plain


def _kind(props, key) -> str:
    return type_name(props.get(key, {}))


def _right_of_call(calls, i):
    name, args, accepted, props, required = calls[i]
    for k in [k for k in args if len([a for a in accepted[k] if a != ""]) > 1][:3]:
        yield "right:alternative_value", _with(calls, i, args={**args, k: [a for a in accepted[k] if a != ""][-1]})
    optional = [k for k in args if "" in accepted[k] and k not in required]
    if optional:
        yield "right:omit_optional", _with(calls, i, args={k: v for k, v in args.items() if k not in optional})
    absent = {
        k: next(a for a in v if a != "") for k, v in accepted.items() if k not in args and any(a != "" for a in v)
    }
    if absent:
        yield "right:explicit_optional", _with(calls, i, args={**args, **absent})
    ints = {
        k: int(v)
        for k, v in args.items()
        if _kind(props, k) == "float" and type(v) is float and v.is_integer() and abs(v) < 1e15
    }
    if ints:
        yield "right:int_for_float", _with(calls, i, args={**args, **ints})
    if len(args) > 1:
        yield "right:key_order", _with(calls, i, args=dict(reversed(list(args.items()))))
    strs = {
        k: v.upper().replace(" ", "  _")
        for k, v in args.items()
        if _kind(props, k) == "string" and isinstance(v, str) and v.upper() != v
    }
    if strs:
        yield "right:string_case_spacing", _with(calls, i, args={**args, **strs})


def right_variants(calls):
    yield "right:reference", _with(calls, None)
    for i in range(len(calls)):
        yield from _right_of_call(calls, i)
    if len(calls) > 1:
        yield "right:call_order", list(reversed(_with(calls, None)))


def _wrong_value(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 1 if isinstance(v, int) else v + 1.5
    if isinstance(v, str):
        return v + "zzz"
    if isinstance(v, list):
        return v + [v[0]] if v else ["zzz"]
    return {**v, "zzz": 1} if isinstance(v, dict) else "zzz"


def wrong_type_variants(calls, i):
    _, args, _, props, _ = calls[i]
    for k, v in args.items():
        t = _kind(props, k)
        if t == "integer" and type(v) is int:
            yield "wrong:type_string_for_integer", _with(calls, i, args={**args, k: str(v)})
            yield "wrong:type_float_for_integer", _with(calls, i, args={**args, k: float(v)})
        elif t == "float" and type(v) in (int, float):
            yield "wrong:type_string_for_float", _with(calls, i, args={**args, k: str(v)})
        elif t == "boolean" and type(v) is bool:
            yield "wrong:type_string_for_boolean", _with(calls, i, args={**args, k: str(v).lower()})
        elif t == "string" and isinstance(v, str):
            yield "wrong:type_list_for_string", _with(calls, i, args={**args, k: [v]})
        elif t == "array" and isinstance(v, list) and v and not isinstance(v[0], (list, dict)):
            items = [json.dumps(x) if not isinstance(x, str) else [x] for x in v]
            yield "wrong:type_item_as_string", _with(calls, i, args={**args, k: items})


def _wrong_of_call(calls, i, names):
    name, args, accepted, props, required = calls[i]
    for k in list(args)[:2]:
        yield "wrong:value", _with(calls, i, args={**args, k: _wrong_value(args[k])})
    yield from wrong_type_variants(calls, i)
    yield "wrong:extra_argument", _with(calls, i, args={**args, "zz_unknown": 1})
    req = [k for k in required if k in args]
    if req:
        yield "wrong:missing_required", _with(calls, i, args={k: v for k, v in args.items() if k != req[0]})
    needed = [k for k in args if k not in required and "" not in accepted[k]]
    if needed:
        yield "wrong:missing_answer_argument", _with(calls, i, args={k: v for k, v in args.items() if k != needed[0]})
    yield "wrong:function_name", _with(calls, i, name=name + "_x")
    if name.upper() != name:
        yield "wrong:function_name_case", _with(calls, i, name=name.upper())
    others = [n for n in names if n != name]
    if others and len(calls) == 1:
        yield "wrong:other_function", _with(calls, i, name=others[0])
    lists = [k for k, v in args.items() if isinstance(v, list) and len(v) > 1 and v[::-1] != v]
    if lists:
        yield "wrong:list_order", _with(calls, i, args={**args, lists[0]: args[lists[0]][::-1]})


def wrong_variants(calls, example):
    names = [f["name"] for f in example.meta["functions"]]
    for i in range(min(len(calls), 3)):
        yield from _wrong_of_call(calls, i, names)
    yield "wrong:no_call", []
    yield "wrong:extra_call", _with(calls, None) + [_with(calls, None)[0]]
    if len(calls) > 1:
        yield "wrong:missing_call", _with(calls, None)[:-1]


def _edge_values(kind, v, prop, accepted):
    """Substitutes near BFCL's type and normalization rules for one argument value: (label, value)."""
    items = type_name(prop.get("items"))
    if kind == "array" and isinstance(v, list) and v:
        if items == "float" and all(type(x) in (int, float) for x in v):
            yield "int_items_for_float_array", [int(x) if float(x).is_integer() else x for x in v]
        if all(isinstance(x, str) for x in v):
            yield "list_items_case", [x.upper() for x in v]
        if isinstance(v[0], dict):
            yield "dict_list_reversed", v[::-1]
            yield "dict_list_dropped", v[1:]
    if kind == "integer" and type(v) is int and v in (0, 1):
        yield "bool_for_integer", bool(v)
    if kind == "boolean" and type(v) is bool:
        yield "int_for_boolean", int(v)
    if kind == "float" and type(v) in (int, float) and float(v).is_integer():
        yield "float_as_whole_float", float(v)
    if kind in ("string", "any") and isinstance(v, str):
        if v.strip() and v.strip().replace(".", "", 1).isdigit():
            yield "number_for_numeric_string", float(v) if "." in v else int(v)
        yield "string_with_quotes", v.replace('"', "'") if '"' in v else "'" + v + "'"
        yield "string_strip_spaces", " " + v + "\t"
    if kind in ("dict", "object") and isinstance(v, dict) and v:
        k0 = next(iter(v))
        yield "dict_key_order", dict(reversed(list(v.items())))
        yield "dict_drop_key", {k: x for k, x in v.items() if k != k0}
        yield "dict_extra_key", {**v, "zz_extra": 1}
        yield "dict_value_as_string", {**v, k0: json.dumps(v[k0]) if not isinstance(v[k0], str) else v[k0].upper()}
    if "" in accepted:
        yield "explicit_null", None
        yield "explicit_empty", [] if kind == "array" else {} if kind == "dict" else ""


def edge_variants(calls):
    for i, (_name, args, accepted, props, _required) in enumerate(calls[:3]):
        for k in list(accepted)[:6]:
            for label, value in _edge_values(_kind(props, k), args.get(k, ""), props.get(k, {}), accepted[k]):
                yield "edge:" + label, _with(calls, i, args={**args, k: value})


POOL = [
    0,
    1,
    -1,
    2,
    1.0,
    2.5,
    -0.5,
    True,
    False,
    None,
    "",
    " ",
    "a",
    "A",
    "1",
    "1.0",
    "true",
    "None",
    [],
    [1],
    [1.0],
    [1, 2],
    ["a"],
    ["A", "b"],
    [""],
    [True],
    [None],
    {},
    {"a": 1},
    {"a": "A"},
    [[1]],
    [{"a": 1}],
    [{}],
]
"""Awkward values for the fuzz substitutions."""


def fuzz_variants(calls, rng: random.Random, n: int = 6):
    """Random substitutions: a pool value, another accepted value of the row, a case/type twist, or a drop."""
    row_values = [v for _, _, acc, _, _ in calls for vals in acc.values() for v in vals if v != ""]
    for _ in range(n):
        i = rng.randrange(len(calls))
        _, args, accepted, props, _ = calls[i]
        keys = sorted(set(args) | set(accepted) | set(props))
        if not keys:
            continue
        k, pick = rng.choice(keys), rng.random()
        if pick < 0.4:
            value = copy.deepcopy(rng.choice(POOL))
        elif pick < 0.7 and row_values:
            value = copy.deepcopy(rng.choice(row_values))
        elif pick < 0.85 and k in args:
            v = args[k]
            value = v.swapcase() if isinstance(v, str) else [v] if not isinstance(v, list) else v[:1] * 2
        else:
            yield "fuzz:drop", _with(calls, i, args={x: y for x, y in args.items() if x != k})
            continue
        yield "fuzz:substitute", _with(calls, i, args={**args, k: value})


def cases(example, rng: random.Random) -> list[tuple[str, list, bool]]:
    """Every generated case of one example: (label, calls ``[(name, arguments)]``, underscore_to_dot)."""
    calls = base_calls(example)
    out = [
        (label, c, False)
        for gen in (
            right_variants(calls),
            wrong_variants(calls, example),
            edge_variants(calls),
            fuzz_variants(calls, rng),
        )
        for label, c in gen
    ]
    if any("." in c[0] for c in calls):  # dots written as "_": wrong for exact names, right under underscore_to_dot
        dotted = [(n.replace(".", "_"), a) for n, a in _with(calls, None)]
        out += [("wrong:dots_as_underscores", dotted, False), ("right:dots_as_underscores", dotted, True)]
    return out


# --- both checkers -------------------------------------------------------------------------------------------------


def run_case(checker, example, calls, dots: bool) -> dict:
    """BFCL's verdict and ours on one case (BFCL's ``None`` where it raises)."""
    ast_checker, language = checker
    meta = example.meta
    try:
        res = ast_checker(
            copy.deepcopy(meta["functions"]),
            [{n: copy.deepcopy(a)} for n, a in calls],
            copy.deepcopy(meta["possible_answer"]),
            language.PYTHON,
            meta["category"],
            MODELS[dots],
        )
        bfcl_ok, bfcl_err = bool(res["valid"]), coarse_error(res.get("error_type", ""))
    except Exception as e:  # noqa: BLE001 -- BFCL raises on a few malformed inputs: that is a difference to count
        bfcl_ok, bfcl_err = None, f"crash:{type(e).__name__}"
    verdict, ours_err = correctness_result(render_calls(calls), example, underscore_to_dot=dots)
    return {
        "bfcl": bfcl_ok,
        "bfcl_err": bfcl_err,
        "ours": verdict.score == 1.0,
        "ours_err": ours_err,
        "reason": verdict.reason,
    }


def agreement(categories=BFCL_CATEGORIES, seed: int = 0, limit=None) -> list[dict]:
    """One row per generated case of every row of ``categories`` (the first ``limit`` rows of each if given)."""
    checker, rows, rng = load_bfcl_checker(), [], random.Random(seed)
    for category in categories:
        for ex in load_bfcl(category, limit=limit):
            for label, calls, dots in cases(ex, rng):
                rows.append(
                    {
                        "category": category,
                        "id": ex.meta["bfcl_id"],
                        "class": label,
                        "dots": dots,
                        "calls": calls,
                        **run_case(checker, ex, calls, dots),
                    }
                )
    return rows


def table(rows: list[dict], key: str) -> list[dict]:
    """Per value of ``key`` (category or class): cases, agreement, accepted by each, same error class where both
    reject; and a total row."""
    groups = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r)
    out = []
    for name, rs in sorted(groups.items()) + [("total", rows)]:
        both = [r for r in rs if r["bfcl"] is False and not r["ours"]]
        out.append(
            {
                key: name,
                "cases": len(rs),
                "agree": sum(r["bfcl"] == r["ours"] for r in rs),
                "agreement_%": 100.0 * sum(r["bfcl"] == r["ours"] for r in rs) / len(rs),
                "bfcl_accepts": sum(r["bfcl"] is True for r in rs),
                "ours_accepts": sum(r["ours"] for r in rs),
                "same_error_class": f"{sum(r['bfcl_err'] == r['ours_err'] for r in both)}/{len(both)}",
            }
        )
    return out
