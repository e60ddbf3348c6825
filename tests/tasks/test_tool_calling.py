"""tool_call.format and tool_call.correctness as registered verifiers: tables of pass, fail and edge cases on the
bundled kind of example, the information texts the bundled policy was trained on (byte-identical), the verifiers'
arguments (free prompts), spans, the catalogue and the generator."""

import hashlib
import json
import math
from pathlib import Path

import pytest

from mrtpo_viz.tasks import MissingArguments, get_verifier, list_verifiers, load_examples
from mrtpo_viz.tasks.base import Example
from mrtpo_viz.tasks.generators import tool_calling as gen
from mrtpo_viz.tasks.tool_calling import CORRECTNESS, FORMAT, tool_args, with_tool_args
from mrtpo_viz.tasks.tool_calling.schema import CHECKER_TYPES, compact_function, normalize_function


def example(tool: str, arguments: dict) -> Example:
    meta = {
        "category": "simple",
        "functions": [gen.TOOLS[tool]],
        "possible_answer": [{tool: {k: [v] for k, v in arguments.items()}}],
    }
    return Example(
        task="tool_calling",
        prompt="(request)",
        meta=meta,
        reference=gen.format_call(tool, arguments),
        verifiers=gen.VERIFIERS,
    )


WEATHER = example("get_weather", {"city": "Paris", "unit": "celsius"})
MONEY = example("convert_currency", {"amount": 12.5, "from_currency": "EUR", "to_currency": "USD"})
ALARM = example("set_alarm", {"time": "07:30", "repeat_daily": True})
GOLD = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}</tool_call>'
FREE = Example(task="tool_calling", prompt="What's the weather in Rome?")


def call(name, arguments, **extra) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments, **extra}) + "</tool_call>"


@pytest.mark.parametrize(
    "response, score, reason",
    [
        (GOLD, 1.0, "well-formed call to get_weather"),
        ("  \n" + GOLD + "\n\t ", 1.0, "well-formed"),
        ('<tool_call>\n  {"name":"get_weather",\n"arguments":{"city":"Paris"}}  \n</tool_call>', 1.0, "well-formed"),
        (call("get_weather", {"city": "São Paulo ☀"}), 1.0, "well-formed"),
        (call("get_weather", {"city": '{"nested": [1, {"x": 2}]}'}), 1.0, "well-formed"),
        ("", 0.0, "no <tool_call> block"),
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}', 0.0, "no <tool_call> block"),
        (GOLD + GOLD, 0.0, "2 <tool_call> blocks; exactly one is allowed"),  # the bundled data asks for one call
        (GOLD + " Hope this helps!", 0.0, "text outside"),
        ("Sure: " + GOLD, 0.0, "text outside"),
        (GOLD[: -len("</tool_call>")], 0.0, "missing </tool_call>"),
        ("</tool_call>" + GOLD[: -len("</tool_call>")], 0.0, "text outside"),
        ("<tool_call>{'name': 'get_weather', 'arguments': {}}</tool_call>", 0.0, "not valid JSON"),
        ('<tool_call>{"name": "get_weather", "arguments": "city=Paris"}</tool_call>', 0.0, "not {"),
        ('<tool_call>["get_weather"]</tool_call>', 0.0, "not {"),
        (call("get_weather", {"city": "Paris"}, id=1), 0.0, "unexpected keys ['id']"),
        (call("get_wether", {"city": "Paris"}), 0.0, "unknown function 'get_wether'; known: get_weather"),
        (call("get_stock_price", {"symbol": "IBM"}), 0.0, "unknown function 'get_stock_price'"),  # not this example's
        (call("get_weather", {"unit": "celsius"}), 0.0, "missing required argument 'city'"),
        (call("get_weather", {"city": "Paris", "country": "FR"}), 0.0, "unknown argument 'country'"),
        (call("get_weather", {"city": "Paris", "unit": "kelvin"}), 0.0, "must be one of"),
        (call("get_weather", {"city": {"name": "Paris"}}), 0.0, "should be of type string, got object"),
        ("<tool_call>" + "[" * 100_000 + "</tool_call>", 0.0, "not valid JSON"),
        ("\x00\x1b[31m\ud800", 0.0, "no <tool_call> block"),
        ("x" * 1_000_000, 0.0, "no <tool_call> block"),
    ],
)
def test_format_table(response, score, reason):
    verdict = FORMAT.check(response, WEATHER)
    assert verdict.score == score
    assert reason in verdict.reason


@pytest.mark.parametrize(
    "ex, response, reason",
    [
        (
            MONEY,
            call("convert_currency", {"amount": "12.5", "from_currency": "EUR", "to_currency": "USD"}),
            "should be of type number, got string",
        ),
        (
            example("set_timer", {"minutes": 2}),
            call("set_timer", {"minutes": 2.5}),
            "should be of type integer, got number",
        ),
        (example("set_timer", {"minutes": 2}), call("set_timer", {"minutes": True}), "of type integer, got boolean"),
        (ALARM, call("set_alarm", {"time": "07:30", "repeat_daily": "true"}), "should be of type boolean"),
    ],
)
def test_format_types_are_exact(ex, response, reason):
    verdict = FORMAT.check(response, ex)
    assert verdict.score == 0.0 and reason in verdict.reason


@pytest.mark.parametrize(
    "ex, response, score, reason",
    [
        (WEATHER, GOLD, 1.0, "matches the possible answer"),
        (WEATHER, call("get_weather", {"unit": " Celsius ", "city": "PARIS"}), 1.0, ""),  # BFCL's string standardizing
        (WEATHER, call("get_weather", {"city": "pa-ris", "unit": "CEL_SIUS"}), 1.0, ""),
        (
            WEATHER,
            call("get_weather", {"city": "Lyon", "unit": "celsius"}),
            0.0,
            "argument 'city' is \"Lyon\"; accepted",
        ),
        (WEATHER, call("get_weather", {"city": "Paris"}), 0.0, "argument 'unit' is missing"),  # no partial credit
        (WEATHER, call("get_weather", {}), 0.0, "missing required argument 'city'"),
        (
            WEATHER,
            call("get_stock_price", {"symbol": "Paris"}),
            0.0,
            "called 'get_stock_price'; expected 'get_weather'",
        ),
        (
            WEATHER,
            call("Get_Weather", {"city": "Paris", "unit": "celsius"}),
            0.0,
            "expected 'get_weather'",
        ),  # exact name
        (WEATHER, GOLD + call("get_weather", {}), 0.0, "2 call(s); expected 1"),
        (WEATHER, GOLD[: -len("</tool_call>")] + " trailing", 0.0, "not valid JSON"),
        (WEATHER, GOLD[: -len("</tool_call>")], 1.0, ""),  # a missing closing tag is a format error only
        (WEATHER, "Sure! " + GOLD, 1.0, ""),  # and so is text around the block
        (WEATHER, "", 0.0, "no <tool_call> block"),
        (MONEY, call("convert_currency", {"amount": 12.5, "from_currency": "eur", "to_currency": "usd"}), 1.0, ""),
        (
            MONEY,
            call("convert_currency", {"amount": "12.5", "from_currency": "EUR", "to_currency": "USD"}),
            0.0,
            "should be number",
        ),  # "12.5" is no number
        (
            MONEY,
            call("convert_currency", {"amount": 12, "from_currency": "EUR", "to_currency": "USD"}),
            0.0,
            "argument 'amount' is 12.0; accepted: 12.5",
        ),
        (example("set_timer", {"minutes": 10}), call("set_timer", {"minutes": 10.0}), 0.0, "should be integer"),
        (example("set_timer", {"minutes": 10}), call("set_timer", {"minutes": "10"}), 0.0, "should be integer"),
        (
            example("convert_units", {"value": 3, "from_unit": "km", "to_unit": "miles"}),
            call("convert_units", {"value": 3.0, "from_unit": "km", "to_unit": "miles"}),
            1.0,
            "",
        ),  # number: int == float
        (ALARM, call("set_alarm", {"time": "07:30", "repeat_daily": "true"}), 0.0, "should be boolean"),
        (ALARM, call("set_alarm", {"time": "7:30", "repeat_daily": True}), 0.0, "argument 'time'"),
        (
            ALARM,
            call("set_alarm", {"time": "07:30", "repeat_daily": True, "label": "gym"}),
            0.0,
            "unexpected argument 'label'",
        ),  # an optional argument the gold call does not give
    ],
)
def test_correctness_table(ex, response, score, reason):
    verdict = CORRECTNESS.check(response, ex)
    assert verdict.score == score and reason in verdict.reason, verdict.reason


# --- the information texts of the bundled examples --------------------------------------------------------------
HASHES = json.loads((Path(__file__).parent / "tool_info_hashes.json").read_text(encoding="utf-8"))
"""Per bundled example, the first 16 hex digits of the SHA-256 of its format and correctness information, recorded
from the verifiers before BFCL's semantics (commit 86b3513): the bundled tiny policy was trained on these texts."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_bundled_information_texts_are_byte_identical():
    examples = load_examples("tool_calling", split="all")
    assert sorted(e.id for e in examples) == sorted(HASHES)
    changed = [e.id for e in examples if [_digest(FORMAT.info(e)), _digest(CORRECTNESS.info(e))] != HASHES[e.id]]
    assert changed == []
    first = next(e for e in examples if e.id == "tool_calling-test-0300")
    assert FORMAT.info(first) == (
        'Reply with exactly one <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> block and nothing else;'
        " the arguments must fit the schema: create_calendar_event(title: string (required), date: string "
        "(required), time: string (required), duration_minutes: integer)"
    )
    assert CORRECTNESS.info(first) == (
        'The correct call is {"name": "create_calendar_event", "arguments": {"title": "Project review", '
        '"date": "2026-02-26", "time": "01:00", "duration_minutes": 30}}'
    )


def test_information_texts():
    assert FORMAT.info(WEATHER).endswith('get_weather(city: string (required), unit: "celsius"|"fahrenheit")')
    assert CORRECTNESS.info(WEATHER) == (
        'The correct call is {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}'
    )


# --- arguments: what a free prompt must be given -----------------------------------------------------------------


def test_arguments_are_declared_and_read_from_the_bundled_meta():
    assert [a.name for a in FORMAT.arguments] == ["functions", "category"]
    assert [a.name for a in CORRECTNESS.arguments] == ["functions", "possible_answer", "category"]
    assert [a.kind for a in CORRECTNESS.arguments] == ["json", "json", "choice"]
    args = CORRECTNESS.args(WEATHER)
    assert args["possible_answer"] == [{"get_weather": {"city": ["Paris"], "unit": ["celsius"]}}]
    assert args["functions"][0]["name"] == "get_weather" and args["category"] == "simple"
    assert CORRECTNESS.missing_args(WEATHER) == [] and FORMAT.missing_args(WEATHER) == []


def test_a_free_prompt_needs_input_and_gets_no_placeholder():
    assert FORMAT.missing_args(FREE) == ["functions"]
    assert CORRECTNESS.missing_args(FREE) == ["functions", "possible_answer"]
    for verifier in (FORMAT, CORRECTNESS):
        with pytest.raises(MissingArguments, match="functions"):
            verifier.info(FREE)
        verdict = verifier.check(GOLD, FREE)
        assert math.isnan(verdict.score) and verdict.reason.startswith("needs input:")
        assert math.isnan(verifier.score(GOLD, FREE))
    assert CORRECTNESS.relevant_spans(GOLD, FREE) is None


@pytest.mark.parametrize(
    "answer",
    [
        {"name": "get_weather", "arguments": {"city": "Rome"}},  # the gold call
        [{"get_weather": {"city": ["Rome", "Roma"]}}],  # BFCL's possible answers
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',  # a gold response
    ],
)
def test_a_free_prompt_with_arguments_scores(answer):
    tool = {"type": "function", "function": gen.TOOLS["get_weather"]}
    filled = CORRECTNESS.with_args(FREE, {"functions": [tool], "possible_answer": answer})
    assert FREE.meta == {} and CORRECTNESS.missing_args(filled) == []
    assert CORRECTNESS.score(call("get_weather", {"city": "ROME"}), filled) == 1.0
    assert CORRECTNESS.score(call("get_weather", {"city": "Paris"}), filled) == 0.0
    assert FORMAT.score(call("get_weather", {"city": "Paris"}), filled) == 1.0
    assert "get_weather(city: string (required)" in FORMAT.info(filled) and "Rome" in CORRECTNESS.info(filled)
    # no category: one or more calls
    assert FORMAT.info(filled).startswith("Reply with one or more <tool_call>")


def test_arguments_override_the_bundled_gold_call():
    other = CORRECTNESS.with_args(
        WEATHER, {"possible_answer": {"name": "get_weather", "arguments": {"city": "Oslo"}}, "category": "parallel"}
    )
    assert CORRECTNESS.score(call("get_weather", {"city": "Oslo"}), other) == 1.0
    assert CORRECTNESS.score(GOLD, other) == 0.0 and tool_args(CORRECTNESS, other)["category"] == "parallel"


@pytest.mark.parametrize(
    "values, match",
    [
        ({"functions": []}, "non-empty list of function schemas"),
        ({"functions": ["get_weather"]}, "non-empty list of function schemas"),
        ({"functions": [{"description": "no name"}]}, "needs a 'name'"),
        ({"possible_answer": [["get_weather"]]}, "each expected call must be"),
        ({"possible_answer": "get_weather(city='Rome')"}, "must be <tool_call> blocks"),
        ({"category": "sequential"}, "unknown category 'sequential'"),
        ({"gold": 1}, r"takes no argument\(s\) \['gold'\]"),
    ],
)
def test_bad_argument_values_are_clear_errors(values, match):
    with pytest.raises(ValueError, match=match):
        CORRECTNESS.with_args(FREE, values)


def test_with_tool_args_normalizes_what_it_stores():
    filled = with_tool_args(CORRECTNESS, FREE, {"possible_answer": {"name": "f", "arguments": {"x": 1}}})
    assert filled.meta["possible_answer"] == [{"f": {"x": [1]}}]


# --- spans ---------------------------------------------------------------------------------------------------------


def test_format_spans_are_the_decision_points():
    response = "  " + GOLD
    spans = FORMAT.relevant_spans(response, WEATHER)
    assert [response[a:b] for a, b in spans] == ["<tool_call>", "{", '"name"', '"arguments"', "</tool_call>"]


def test_format_spans_partial_and_unparseable():
    broken = '<tool_call> {"name": get_weather}</tool_call>'
    assert [broken[a:b] for a, b in FORMAT.relevant_spans(broken, WEATHER)] == ["<tool_call>", "{", "</tool_call>"]
    assert FORMAT.relevant_spans("no call here", WEATHER) is None
    assert FORMAT.relevant_spans("<tool_call>oops</tool_call>", WEATHER) is None


def test_correctness_spans_are_name_and_gold_values():
    response = (
        '<tool_call>{"arguments": {"unit": "celsius", "extra": 1, "city": "Paris"}, "name": "get_weather"}</tool_call>'
    )
    spans = CORRECTNESS.relevant_spans(response, WEATHER)
    assert [response[a:b] for a, b in spans] == ["celsius", "Paris", "get_weather"]
    money = call("convert_currency", {"amount": 12.5, "from_currency": "EUR", "to_currency": "USD"})
    assert [money[a:b] for a, b in CORRECTNESS.relevant_spans(money, MONEY)] == [
        "convert_currency",
        "12.5",
        "EUR",
        "USD",
    ]
    assert (
        CORRECTNESS.relevant_spans('<tool_call>{"name": "get_weather", "arguments": {"city": Paris}}', WEATHER) is None
    )
    assert CORRECTNESS.relevant_spans("", WEATHER) is None


# --- registry, catalogue, generator ----------------------------------------------------------------------------------


def test_registry_and_catalogue():
    assert set(list_verifiers("tool_calling")) == {"tool_call.format", "tool_call.correctness"}
    assert list_verifiers("bfcl") == list_verifiers("tool_calling")  # BFCL's rows use the tool-calling verifiers
    assert get_verifier("tool_call.format") is FORMAT
    assert len(gen.TOOLS) == 12
    for schema in gen.TOOLS.values():
        params = schema["parameters"]
        assert set(params["required"]) <= set(params["properties"])
        assert all(p["type"] in CHECKER_TYPES for p in params["properties"].values())
    assert compact_function(normalize_function(gen.TOOLS["set_timer"])) == "set_timer(minutes: integer (required))"


def test_generate_is_deterministic_and_sized():
    a, b = gen.generate(60, seed=3), gen.generate(60, seed=3)
    assert len(a) == 60 and [e.to_dict() for e in a] == [e.to_dict() for e in b]
    assert [e.prompt for e in a] != [e.prompt for e in gen.generate(60, seed=4)]
    assert {gen.gold_call(e.meta)[0] for e in a[:12]} == set(gen.TOOLS)
    assert len({e.prompt for e in gen.generate(400, seed=0)}) == 400  # the sample file: no prompt in both splits
    assert gen.generate(0) == []
    with pytest.raises(ValueError):
        gen.generate(-1)


def test_generated_examples_are_consistent():
    for ex in gen.generate(240, seed=0):
        assert ex.task == "tool_calling" and ex.id == "" and ex.verifiers == gen.VERIFIERS
        assert len(ex.prompt.split()) < 30
        name, arguments = gen.gold_call(ex.meta)
        assert ex.meta["functions"][0] is gen.TOOLS[name] and ex.meta["category"] == "simple"
        assert ex.reference == gen.format_call(name, arguments)
        assert FORMAT.score(ex.reference, ex) == 1.0 and CORRECTNESS.score(ex.reference, ex) == 1.0


BUNDLED_INFO_SHA256 = "eddda1567d85b2c9dd1b887a61103b919882a6b10d71bc928bd1b10586ce6720"
"""sha256 of every bundled tool-calling example's (id, verifier, information text), as the bundled policy was
trained on them (measured on the data before it moved to BFCL's form)."""


def test_the_bundled_data_is_in_bfcls_form_with_the_information_texts_the_policy_was_trained_on():
    import hashlib

    from mrtpo_viz.tasks import get_verifier, load_examples

    digest, n = hashlib.sha256(), 0
    for split in ("train", "test"):
        for ex in load_examples("tool_calling", split):
            assert set(ex.meta) == {"category", "functions", "possible_answer"}, ex.id
            for name in ex.verifiers:
                digest.update(json.dumps([ex.id, name, get_verifier(name).info(ex)]).encode())
                n += 1
    assert n == 800 and digest.hexdigest() == BUNDLED_INFO_SHA256
