"""BFCL's AST rules on decoded calls, case by case (the agreement with BFCL's own code on its data is in
tests/tasks/test_bfcl_agreement.py)."""

import pytest

from mrtpo_viz.tasks.tool_calling.rules import (
    call_mode,
    check_argument,
    check_call,
    check_calls,
    expected_name,
    show_accepted,
    standardize,
)
from mrtpo_viz.tasks.tool_calling.schema import normalize_function

FN = normalize_function(
    {
        "name": "weather.get",
        "parameters": {
            "type": "dict",
            "required": ["city"],
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "scale": {"type": "float"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "temps": {"type": "array", "items": {"type": "float"}},
                "opts": {"type": "dict", "properties": {"hourly": {"type": "boolean"}}},
                "mode": {"type": "any"},
            },
        },
    }
)
ANSWER = {
    "city": ["Paris", "Paris, France"],
    "days": [3, ""],
    "scale": [2.0],
    "tags": [["a", "b"]],
    "temps": ["", [1.5, 2.0]],
    "opts": ["", {"hourly": [True, ""]}],
    "mode": ["", "fast"],
}
GOOD = {"city": "Paris", "scale": 2.0, "tags": ["a", "b"]}


def test_standardize_is_bfcls():
    assert standardize(" Paris, Fr-a_n.c/e*^ ") == "parisfrance"
    assert standardize("It's") == 'it"s' and standardize("a:b\tc") == "a:b\tc"  # ':' and tabs are kept


@pytest.mark.parametrize(
    "args, error",
    [
        (GOOD, None),
        ({**GOOD, "city": "  PARIS,france "}, None),
        ({**GOOD, "city": "Paris\t"}, "value_error"),
        ({**GOOD, "days": 3}, None),
        ({**GOOD, "days": 3.0}, "type_error"),
        ({**GOOD, "days": True}, "type_error"),
        ({**GOOD, "days": ""}, "type_error"),
        ({**GOOD, "scale": 2}, None),  # int promoted to float
        ({k: v for k, v in GOOD.items() if k != "scale"}, "missing_optional"),
        ({k: v for k, v in GOOD.items() if k != "city"}, "missing_required"),
        ({**GOOD, "tags": ["B", "A"]}, "value_error"),  # order counts
        ({**GOOD, "tags": ["A", "B"]}, None),
        ({**GOOD, "temps": [1.5, 2]}, None),  # "" is accepted, so the items are not type-checked
        ({**GOOD, "temps": [1.5, 2.0]}, None),
        ({**GOOD, "temps": []}, None),  # "" accepted: [] too
        ({**GOOD, "opts": {"hourly": True}}, None),
        ({**GOOD, "opts": {}}, None),
        ({**GOOD, "opts": {"hourly": False}}, "value_error"),
        ({**GOOD, "opts": {"daily": True}}, "value_error"),
        ({**GOOD, "mode": "FAST"}, None),
        ({**GOOD, "mode": 1}, "type_error"),  # any means a string
        ({**GOOD, "zz": 1}, "unexpected_param"),
    ],
)
def test_check_call(args, error):
    failure = check_call(FN, {"name": "weather.get", "arguments": args}, ANSWER)
    assert (failure and failure[0]) == error, failure


def test_no_int_to_float_promotion_inside_arrays():
    prop = {"type": "array", "items": {"type": "float"}}
    assert check_argument("t", [1.5, 2], prop, [[1.5, 2.0]])[0] == "type_error"
    assert check_argument("t", [1.5, 2.0], prop, [[1.5, 2.0]]) is None
    assert check_argument("t", [1, 2], prop, [[1, 2]]) is None  # items of the accepted list's own type pass


def test_an_optional_argument_absent_from_the_answer_is_unexpected():
    failure = check_call(FN, {"name": "weather.get", "arguments": {"city": "Paris", "days": 3}}, {"city": ["Paris"]})
    assert failure == ("unexpected_param", "weather.get: unexpected argument 'days'")


def test_variable_rule_compares_literally():
    # the accepted value is a string for an integer parameter: a string passes the type check, compared exactly
    assert check_argument("n", "x", {"type": "integer"}, ["x"]) is None
    assert check_argument("n", "X", {"type": "integer"}, ["x"])[0] == "value_error"
    assert check_argument("n", 1, {"type": "integer"}, ["x"]) == ("value_error", "argument 'n' is 1; accepted: \"x\"")
    # accepted ["", null]: null is the answer type, so a string is compared literally (and fails)
    assert check_argument("n", None, {"type": "string"}, ["", None]) is None
    assert check_argument("n", "abc", {"type": "string"}, ["", None])[0] == "value_error"


def test_types_where_bfcl_has_no_rule():
    assert check_argument("x", 2.5, {"type": "number"}, [2.5]) is None  # number = float
    assert check_argument("x", "2.5", {"type": "number"}, [2.5])[0] == "type_error"
    assert check_argument("x", {"k": "V"}, {"type": "object"}, [{"k": ["v"]}]) is None  # object = dict
    assert check_argument("x", [2, 1], {"type": "array"}, [[1, 2]])[0] == "value_error"  # no items: order still counts
    assert check_argument("x", 5, {"type": "weird"}, [5]) is None  # unknown: literal comparison
    assert check_argument("x", 6, {"type": "weird"}, [5]) == ("value_error", "argument 'x' is 6; accepted: 5")


def test_show_accepted_and_names():
    assert show_accepted(["", 3]) == "omitted | 3"
    assert show_accepted([{"a": ["x", ""]}]) == '{a: "x" | omitted}' and show_accepted([[{"a": [1]}]]) == "[{a: 1}]"
    assert expected_name("math.factorial", True) == "math_factorial" and expected_name("a.b", False) == "a.b"


def test_call_modes():
    assert [call_mode(c, [1]) for c in ("live_parallel_multiple", "multiple", "simple_python", None)] == [
        "parallel",
        "multiple",
        "simple",
        "multiple",
    ]
    assert call_mode(None, [1, 2]) == "parallel"


PAR = [{"weather.get": {"city": ["Paris"]}}, {"weather.get": {"city": ["Rome"]}}]


def _calls(*cities, name="weather.get"):
    return [{"name": name, "arguments": {"city": c}} for c in cities]


def test_parallel_calls_any_order_exact_count():
    assert check_calls([FN], _calls("Rome", "Paris"), PAR, "parallel") is None
    assert check_calls([FN], _calls("Rome"), PAR, "parallel") == ("wrong_count", "1 call(s); expected 2")
    assert check_calls([FN], _calls("Rome", "Rome", "Paris"), PAR, "parallel")[0] == "wrong_count"
    failure = check_calls([FN], _calls("Rome", "Oslo"), PAR, "parallel")
    assert failure[0] == "cannot_find_match" and "expected call 1 (weather.get)" in failure[1] and "Rome" in failure[1]


def test_simple_uses_the_first_function_and_multiple_the_named_one():
    other = normalize_function({"name": "other", "parameters": {"properties": {"city": {"type": "string"}}}})
    answer = [{"weather.get": {"city": ["Paris"]}}]
    assert check_calls([other, FN], _calls("Paris"), answer, "multiple") is None
    assert check_calls([other, FN], _calls("Paris"), answer, "simple")[0] == "wrong_func_name"
    assert check_calls([FN], _calls("Paris", name="weather_get"), answer, "simple", underscore_to_dot=True) is None
    assert check_calls([FN], _calls("Paris", name="weather_get"), answer, "simple")[0] == "wrong_func_name"


def test_malformed_examples_are_verdicts():
    assert check_calls([FN], _calls("Paris"), [], "simple") == (
        "bad_example",
        "the example has no usable possible answer",
    )
    failure = check_calls([FN], _calls("Paris", "Rome"), [{"nope": {}}, {"weather.get": {}}], "parallel")
    assert failure == ("bad_example", "the possible answer names unknown function 'nope'")
