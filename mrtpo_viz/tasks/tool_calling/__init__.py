"""Tool-calling verifiers with BFCL's semantics for any tool: ``tool_call.format`` and ``tool_call.correctness``.

The response format is one or more ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks. The functions
(OpenAI-style or BFCL function docs) and the possible answers come from the example (:mod:`.schema`); format checks the
calls against the schemas only, correctness applies the rules of BFCL's AST checker (:mod:`.rules`, our own
implementation, tested against BFCL's code). :mod:`.parsing` finds and decodes the blocks, :mod:`.verdicts` holds the
verdicts, spans and information texts. The bundled examples are in BFCL's form too (one function, one expected call
with one value per argument, category ``simple``); their information texts are those the bundled policy was trained
on.

Each verifier declares its :class:`Argument` s (``functions``, and for correctness ``possible_answer``; ``category``
optional), so a free prompt can be given them: ``verifier.with_args(example, {"functions": [...], ...})``.
"""

from __future__ import annotations

from typing import Any

from ...names import TOOL_CATEGORIES
from ..base import Argument, Example, MissingArguments, Verifier, register
from .verdicts import (
    check_correctness,
    check_format,
    correctness_info,
    correctness_result,
    correctness_spans,
    format_decision_spans,
    format_info,
    format_spans,
)
from .parsing import parse_calls, render_calls
from .schema import answers_from, example_answers, example_category, example_functions, functions_from

FUNCTIONS = Argument(
    "functions",
    "Functions (tool schemas)",
    kind="json",
    description='A list of function schemas, OpenAI style [{"type": "function", "function": {"name": "get_weather", '
    '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]'
    ' or BFCL style [{"name": ..., "parameters": {"type": "dict", ...}}].',
)
POSSIBLE_ANSWER = Argument(
    "possible_answer",
    "Gold call or possible answers",
    kind="json",
    description='The gold call(s) [{"name": "get_weather", "arguments": {"city": "Paris"}}] (each argument takes '
    'exactly that value), or BFCL\'s possible answers [{"get_weather": {"city": ["Paris", "Paris, '
    'France"], "unit": ["", "celsius"]}}] ("" = may be omitted).',
)
CATEGORY = Argument(
    "category",
    "Category",
    kind="choice",
    choices=TOOL_CATEGORIES,
    required=False,
    description="simple or multiple: exactly one call; parallel or parallel_multiple: one call per expected call, "
    "any order. Default: one call unless the possible answer has several.",
)
_READERS = {"functions": example_functions, "possible_answer": example_answers, "category": example_category}
_PARSERS = {"functions": functions_from, "possible_answer": answers_from}


def tool_args(verifier: Verifier, example: Example) -> dict[str, Any]:
    """The example's values of the verifier's arguments (the bundled ``tool``/``arguments``/``schema`` converted);
    an absent or unusable one is left out."""
    out = {}
    for arg in verifier.arguments:
        try:
            value = _READERS[arg.name](example.meta)
        except MissingArguments:
            continue
        if value is not None:
            out[arg.name] = value
    return out


def with_tool_args(verifier: Verifier, example: Example, values: dict[str, Any]) -> Example:
    """The example with these values set in ``meta``, checked first (a ValueError says what is wrong)."""
    from dataclasses import replace

    checked = {}
    for name, value in values.items():
        if name == "category":
            if value not in (None, "") and value not in TOOL_CATEGORIES:
                raise ValueError(f"unknown category {value!r}; choose one of {list(TOOL_CATEGORIES)}")
            checked[name] = value or None
        else:
            checked[name] = _PARSERS[name](value)  # MissingArguments (a ValueError) says what is expected
    return replace(example, meta={**example.meta, **checked})


FORMAT = register(
    Verifier(
        name="tool_call.format",
        task="tool_calling",
        title="Tool-call format",
        description="1 if the response is closed <tool_call> blocks and nothing else (exactly one where one call is "
        "asked for), each JSON {name, arguments} naming one of the example's functions, with its required "
        "arguments, no unknown argument and values of the declared types and enums; else 0.",
        info_fn=format_info,
        check_fn=check_format,
        spans_fn=format_spans,
        arguments=(FUNCTIONS, CATEGORY),
        args_fn=tool_args,
        with_args_fn=with_tool_args,
        decision_spans_fn=format_decision_spans,
    ),
    replace=True,
)
CORRECTNESS = register(
    Verifier(
        name="tool_call.correctness",
        task="tool_calling",
        title="Tool-call correctness",
        description="1 if the calls match the possible answers under BFCL's AST rules (exact names, required and no "
        "unexpected arguments, exact types, each value among the accepted ones, strings ignoring case, "
        "spaces and ,./-_*^; any order for parallel calls); else 0, with the call and argument that fail.",
        info_fn=correctness_info,
        check_fn=check_correctness,
        spans_fn=correctness_spans,
        arguments=(FUNCTIONS, POSSIBLE_ANSWER, CATEGORY),
        args_fn=tool_args,
        with_args_fn=with_tool_args,
    ),
    replace=True,
)

__all__ = [
    "CORRECTNESS",
    "FORMAT",
    "check_correctness",
    "check_format",
    "correctness_info",
    "correctness_result",
    "correctness_spans",
    "format_decision_spans",
    "format_info",
    "format_spans",
    "parse_calls",
    "render_calls",
    "tool_args",
    "with_tool_args",
]
