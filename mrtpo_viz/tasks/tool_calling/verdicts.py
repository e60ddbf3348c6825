"""``tool_call.format`` and ``tool_call.correctness`` as functions of (response, example): verdicts, spans, information.

- **format** reads only the functions (and the category): closed ``<tool_call>`` blocks with only whitespace around
  them (exactly one where the category asks for one call: BFCL's simple and multiple categories and the bundled
  data; one or more otherwise), each a JSON object with exactly ``name`` and ``arguments``, naming one of the
  functions, with its required arguments, no undeclared argument, and values of the declared types and enums
  (:func:`.schema.schema_errors`). Never the answers.
- **correctness** reads the functions, the possible answers and the category and applies BFCL's AST rules
  (:mod:`.rules`): 1 or 0, with a reason that names the call and the argument. Text around the blocks, a missing
  closing tag and extra keys in a block are left to format.

An example without what a verifier needs (a free prompt, say) gets no placeholder: its information raises
:class:`MissingArguments` and its check scores NaN ("needs input") with what to give.

Relevant spans, per block:

- format -> the opening tag, the first ``{``, the keys ``"name"`` and ``"arguments"`` (with their quotes) and the
  closing tag, those present; None when no block has a ``{``;
- correctness -> the value of ``"name"`` and the values of the arguments that the possible answer lists for that
  function (of any expected call when the name matches none); strings without their quotes; None when no call
  object can be scanned.

Decision spans (the credit study's oracle; the relevant spans stay the localization ground truth):

- format -> its relevant spans, every argument value as written (a string with its quotes: the schema's types and
  enums decide the verdict) and the end-of-sequence token (nothing may follow the last block); None as the relevant
  spans;
- correctness -> its relevant spans.
"""

from __future__ import annotations

import json
import math
from typing import Any, Optional

from ..base import MissingArguments, Span, Verdict, eos_span
from .parsing import argument_scan, parse_calls, scanned_blocks
from .rules import call_mode, check_calls, expected_name, show_accepted
from .schema import compact_function, example_answers, example_category, example_functions, schema_errors, single_call


def _meta(example: Any) -> dict:
    meta = example.get("meta", example) if isinstance(example, dict) else getattr(example, "meta", None)
    return meta if isinstance(meta, dict) else {}


def _dots(meta: dict, underscore_to_dot: Optional[bool]) -> bool:
    return bool(meta.get("underscore_to_dot")) if underscore_to_dot is None else underscore_to_dot


def needs_input(err: MissingArguments) -> Verdict:
    """The verdict of a verifier that lacks its arguments: NaN (does not apply) and what to give."""
    return Verdict(math.nan, f"needs input: {err}")


# --- tool_call.format --------------------------------------------------------------------------------------------


def check_format(response: Any, example: Any, underscore_to_dot: Optional[bool] = None) -> Verdict:
    """1 iff the blocks are well formed and their calls name the example's functions and fit their schemas."""
    meta = _meta(example)
    try:
        functions = example_functions(meta)
    except MissingArguments as err:
        return needs_input(err)
    calls, why = parse_calls(response, strict=True, single=single_call(example_category(meta)))
    if calls is None:
        return Verdict(0.0, why)
    known = {expected_name(f["name"], _dots(meta, underscore_to_dot)): f for f in functions}
    for k, call in enumerate(calls, 1):
        where = f"call {k} ({call['name']}): " if len(calls) > 1 else ""
        if call["name"] not in known:
            return Verdict(0.0, f"{where}unknown function {call['name']!r}; known: {', '.join(sorted(known))}")
        errors = schema_errors(call["arguments"], known[call["name"]])
        if errors:
            return Verdict(0.0, where + "; ".join(errors[:3]))
    return Verdict(1.0, f"well-formed call{'s' if len(calls) > 1 else ''} to {', '.join(c['name'] for c in calls)}")


def format_spans(response: Any, example: Any) -> Optional[list[Span]]:
    """Per block: opening tag, first ``{``, the keys ``"name"`` and ``"arguments"``, closing tag (those present)."""
    text, spans = (response if isinstance(response, str) else ""), []
    for (start, inner, end, block_end), brace, scanned in scanned_blocks(text):
        if brace is None:
            continue
        spans += [(start, inner), (brace, brace + 1)] + ([(end, block_end)] if block_end > end else [])
        if scanned is not None:
            spans += [scanned[k][0] for k in ("name", "arguments") if k in scanned]
    return sorted(spans) or None


def format_decision_spans(response: Any, example: Any) -> Optional[list[Span]]:
    """The relevant spans, every argument value as written (strings with their quotes) and the end-of-sequence token
    (``eos_span``); None where the relevant spans are None."""
    text = response if isinstance(response, str) else ""
    spans = format_spans(text, example)
    if spans is None:
        return None
    for _, _, scanned in scanned_blocks(text):
        if scanned is not None:
            for _, (start, end), value in argument_scan(text, scanned).values():
                quoted = isinstance(value, str)
                spans.append((start - quoted, end + quoted))
    return sorted(set(spans + [eos_span(text)]))


def format_info(example: Any) -> str:
    """The reply format and the functions' compact signatures (raises MissingArguments without functions)."""
    meta = _meta(example)
    functions = example_functions(meta)
    signatures = "; ".join(compact_function(f) for f in functions)
    if single_call(example_category(meta)) and len(functions) == 1:
        return (
            'Reply with exactly one <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> block and '
            f"nothing else; the arguments must fit the schema: {signatures}"
        )
    if single_call(example_category(meta)):
        return (
            'Reply with exactly one <tool_call>{"name": "<function>", "arguments": {...}}</tool_call> block and '
            f"nothing else; it must name one of these functions and fit its parameters: {signatures}"
        )
    return (
        'Reply with one or more <tool_call>{"name": "<function>", "arguments": {...}}</tool_call> blocks, one '
        f"per call, and nothing else; each call must name one of these functions and fit its parameters: "
        f"{signatures}"
    )


# --- tool_call.correctness ---------------------------------------------------------------------------------------


def correctness_result(response: Any, example: Any, underscore_to_dot: Optional[bool] = None) -> tuple[Verdict, str]:
    """The verdict and its error class: ``""`` when right, ``needs_input``, ``parse`` when no block decodes, else
    BFCL's coarsened error type (:mod:`.rules`)."""
    meta = _meta(example)
    try:
        functions, answers = example_functions(meta), example_answers(meta)
    except MissingArguments as err:
        return needs_input(err), "needs_input"
    calls, why = parse_calls(response, strict=False)
    if calls is None:
        return Verdict(0.0, why), "wrong_count" if why == "no <tool_call> block" else "parse"
    failure = check_calls(functions, calls, answers, example_category(meta), _dots(meta, underscore_to_dot))
    if failure:
        return Verdict(0.0, failure[1]), failure[0]
    return Verdict(1.0, f"matches the possible answer ({', '.join(c['name'] for c in calls)})"), ""


def check_correctness(response: Any, example: Any, underscore_to_dot: Optional[bool] = None) -> Verdict:
    """1 iff the calls match the possible answers under BFCL's AST rules; else 0 with the call, argument and why."""
    return correctness_result(response, example, underscore_to_dot)[0]


def _answer_keys(meta: dict) -> dict[str, set]:
    """Expected name (as the call must write it) -> the argument names its possible answers list."""
    keys: dict[str, set] = {}
    for answer in example_answers(meta):
        for name, args in answer.items():
            keys.setdefault(expected_name(name, _dots(meta, None)), set()).update(args)
    return keys


def correctness_spans(response: Any, example: Any) -> Optional[list[Span]]:
    """Per block: the value of ``"name"`` and the values of the arguments the possible answer lists."""
    text, meta = (response if isinstance(response, str) else ""), _meta(example)
    try:
        keys = _answer_keys(meta)
    except MissingArguments:
        return None
    every, spans, seen = set().union(*keys.values()), [], False
    for _, _, scanned in scanned_blocks(text):
        if scanned is None:
            continue
        seen, name = True, scanned.get("name", (None, None, None))
        spans += [name[1]] if "name" in scanned else []
        wanted = keys.get(name[2], every) if isinstance(name[2], str) else every
        spans += [v[1] for k, v in argument_scan(text, scanned).items() if k in wanted]
    return sorted(spans) if seen else None


def _exact(args: dict) -> bool:
    """Whether every argument accepts exactly one value, given (not ``""``) and not a nested possible answer."""
    return all(
        isinstance(v, list)
        and len(v) == 1
        and v[0] != ""
        and not isinstance(v[0], dict)
        and not (isinstance(v[0], list) and any(isinstance(x, dict) for x in v[0]))
        for v in args.values()
    )


def _gold_call(name: str, args: dict, functions: list[dict]) -> str:
    """The one right call as JSON, arguments in the schema's order, then the rest sorted."""
    function = next((f for f in functions if f["name"] == name), {"parameters": {"properties": {}}})
    order = list(function["parameters"]["properties"]) + sorted(args)
    call = {"name": name, "arguments": {k: args[k][0] for k in dict.fromkeys(order) if k in args}}
    return json.dumps(call, ensure_ascii=False)


def correctness_info(example: Any) -> str:
    """The gold call where the answer is one call with one value per argument; else every expected call with the
    accepted values of each argument (raises MissingArguments without functions or answers)."""
    meta = _meta(example)
    functions, answers = example_functions(meta), example_answers(meta)
    named = [(name, args) for a in answers for name, args in a.items()]
    if len(named) == 1 and _exact(named[0][1]):
        return f"The correct call is {_gold_call(*named[0], functions)}"
    calls = [f"{name}({', '.join(f'{k}={show_accepted(v)}' for k, v in args.items())})" for name, args in named]
    order = " in any order" if call_mode(example_category(meta), answers) == "parallel" and len(calls) > 1 else ""
    return (
        f"The correct answer is {len(calls)} call(s){order}: "
        + "; ".join(calls)
        + ". Each argument takes one of the values listed (| separates them; 'omitted' means it may be left out);"
        " strings match ignoring case, spaces and ,./-_*^; no other argument may be given."
    )
