"""What an example gives the tool-calling verifiers: function docs in both styles, possible answers in every accepted
form, the bundled meta, the category; the format verifier's type rules and the compact signature."""

import pytest

from mrtpo_viz.tasks.base import MissingArguments
from mrtpo_viz.tasks.tool_catalog import TOOLS
from mrtpo_viz.tasks.tool_calling.schema import (
    answers_from,
    compact_function,
    example_answers,
    example_category,
    example_functions,
    functions_from,
    json_type,
    normalize_function,
    schema_errors,
    single_call,
    type_name,
    value_errors,
)

BFCL_DOC = {"name": "f", "parameters": {"type": "dict", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}


def test_normalize_both_styles():
    assert normalize_function(BFCL_DOC) == normalize_function({"type": "function", "function": BFCL_DOC})
    assert normalize_function({"name": "g"})["parameters"] == {"type": "object", "properties": {}, "required": []}
    assert normalize_function({"name": "g", "parameters": "junk"})["parameters"]["properties"] == {}


def test_functions_from_accepts_one_doc_or_a_list_and_refuses_junk():
    assert [f["name"] for f in functions_from(BFCL_DOC)] == ["f"]
    assert [f["name"] for f in functions_from([BFCL_DOC, {"name": "g"}])] == ["f", "g"]
    for bad in ([], "f", [1], None):
        with pytest.raises(MissingArguments, match="non-empty list of function schemas"):
            functions_from(bad)


@pytest.mark.parametrize(
    "value, answers",
    [
        ([{"f": {"a": [1, ""]}}], [{"f": {"a": [1, ""]}}]),
        ({"f": {"a": [1]}}, [{"f": {"a": [1]}}]),
        ({"name": "f", "arguments": {"a": 1, "b": [1, 2]}}, [{"f": {"a": [1], "b": [[1, 2]]}}]),
        ([{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"x": "y"}}], [{"f": {}}, {"g": {"x": ["y"]}}]),
        ('<tool_call>{"name": "f", "arguments": {"a": 2}}</tool_call>', [{"f": {"a": [2]}}]),
    ],
)
def test_answers_from_every_form(value, answers):
    assert answers_from(value) == answers


@pytest.mark.parametrize("bad", [[], [{"f": {"a": 1}}], [{"f": 1}], [{"f": {}, "g": {}}], "not a call", 3])
def test_answers_from_refuses_what_it_cannot_read(bad):
    with pytest.raises(MissingArguments):
        answers_from(bad)


def test_the_bundled_meta_reads_as_one_function_one_call():
    sorted_schema = {
        **TOOLS["get_weather"],
        "parameters": {
            **TOOLS["get_weather"]["parameters"],
            "properties": dict(sorted(TOOLS["get_weather"]["parameters"]["properties"].items(), reverse=True)),
        },
    }
    meta = {
        "category": "simple",
        "functions": [sorted_schema],
        "possible_answer": [{"get_weather": {"city": ["Oslo"]}}],
    }
    (fn,) = example_functions(meta)
    assert list(fn["parameters"]["properties"]) == ["city", "unit"]  # the catalogue's order, as the information shows
    assert example_answers(meta) == [{"get_weather": {"city": ["Oslo"]}}] and example_category(meta) == "simple"
    with pytest.raises(MissingArguments, match="no functions"):  # the old {"tool", "arguments", "schema"} form
        example_functions({"tool": "set_timer"})
    with pytest.raises(MissingArguments, match="no gold call"):
        example_answers({"tool": "get_weather", "arguments": {"city": "Oslo"}, "schema": TOOLS["get_weather"]})
    custom = {**sorted_schema, "description": "mine"}
    assert example_functions({"functions": [custom]})[0]["description"] == "mine"  # a different schema is its own


def test_new_keys_take_precedence_and_absent_ones_raise():
    meta = {
        "tool": "get_weather",
        "arguments": {"city": "Oslo"},
        "functions": [BFCL_DOC],
        "possible_answer": [{"f": {"a": [1]}}],
        "category": "live_parallel",
    }
    assert example_functions(meta)[0]["name"] == "f" and example_answers(meta) == [{"f": {"a": [1]}}]
    assert example_category(meta) == "live_parallel" and example_category({}) is None
    with pytest.raises(MissingArguments, match="no functions"):
        example_functions({})
    with pytest.raises(MissingArguments, match="no gold call"):
        example_answers({"functions": [BFCL_DOC]})


def test_single_call_categories():
    assert [
        single_call(c) for c in ("simple", "multiple", "live_simple", "parallel", "live_parallel_multiple", None)
    ] == [True, True, True, False, False, False]


def test_type_helpers():
    assert type_name({"type": ["null", "integer"]}) == "integer" and type_name({}) == "" and type_name(None) == ""
    assert [json_type(v) for v in ("a", 1, 1.0, True, [], {}, None)] == [
        "string",
        "integer",
        "number",
        "boolean",
        "array",
        "object",
        "null",
    ]


@pytest.mark.parametrize(
    "value, prop, errors",
    [
        (2, {"type": "float"}, []),
        (2.0, {"type": "integer"}, ["x should be of type integer, got number"]),
        (True, {"type": "integer"}, ["x should be of type integer, got boolean"]),
        ("k", {"type": "string", "enum": ["a", "b"]}, ['x must be one of ["a", "b"], got "k"']),
        (["a", 1], {"type": "array", "items": {"type": "string"}}, ["x[1] should be of type string, got integer"]),
        (
            {"h": "yes"},
            {"type": "dict", "properties": {"h": {"type": "boolean"}}},
            ["x.h should be of type boolean, got string"],
        ),
        ({"other": 1}, {"type": "dict", "properties": {"h": {"type": "boolean"}}}, []),  # undeclared nested keys pass
        (None, {"type": "string", "default": None}, []),
        (None, {"type": ["string", "null"]}, []),
        (None, {"type": "string"}, ["x should be of type string, got null"]),
        ({"any": 1}, {"type": "any"}, []),
        (5, {"type": "weird"}, []),
    ],
)
def test_value_errors(value, prop, errors):
    assert value_errors(value, prop, "x") == errors


def test_schema_errors_and_compact_signature():
    fn = normalize_function(
        {
            "name": "g",
            "parameters": {
                "properties": {
                    "a": {"type": "integer"},
                    "b": {"type": "array", "items": {"type": "string"}},
                    "c": {"type": "string", "enum": ["x", "y"]},
                },
                "required": ["a"],
            },
        }
    )
    assert schema_errors({"b": ["s"], "z": 1}, fn) == ["missing required argument 'a'", "unknown argument 'z'"]
    assert schema_errors({"a": 1}, fn) == []
    assert compact_function(fn) == 'g(a: integer (required), b: array of string, c: "x"|"y")'
