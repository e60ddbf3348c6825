"""tool_call.format and tool_call.correctness: tables of pass, fail and edge cases; spans; the generator."""
import json

import pytest

from mrtpo_viz.tasks.base import Example
from mrtpo_viz.tasks.generators import tool_calling as gen
from mrtpo_viz.tasks import get_verifier, list_verifiers
from mrtpo_viz.tasks.tool_calling import JSON_TYPES, compact_schema, same_value

FORMAT = get_verifier("tool_call.format")
CORRECT = get_verifier("tool_call.correctness")


def example(tool: str, arguments: dict) -> Example:
    meta = {"tool": tool, "arguments": arguments, "schema": gen.TOOLS[tool]}
    return Example(task="tool_calling", prompt="(request)", meta=meta, reference=gen.format_call(tool, arguments),
                   verifiers=gen.VERIFIERS)


WEATHER = example("get_weather", {"city": "Paris", "unit": "celsius"})
MONEY = example("convert_currency", {"amount": 12.5, "from_currency": "EUR", "to_currency": "USD"})
ALARM = example("set_alarm", {"time": "07:30", "repeat_daily": True})
GOLD = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}</tool_call>'


def call(name, arguments, **extra) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments, **extra}) + "</tool_call>"


@pytest.mark.parametrize("response, score, reason", [
    (GOLD, 1.0, "well-formed call to get_weather"),
    ("  \n" + GOLD + "\n\t ", 1.0, "well-formed"),
    ('<tool_call>\n  {"name":"get_weather",\n"arguments":{"city":"Paris"}}  \n</tool_call>', 1.0, "well-formed"),
    (call("get_weather", {"city": "São Paulo ☀"}), 1.0, "well-formed"),
    (call("get_weather", {"city": '{"nested": [1, {"x": 2}]}'}), 1.0, "well-formed"),
    ("", 0.0, "no <tool_call> block"),
    ('{"name": "get_weather", "arguments": {"city": "Paris"}}', 0.0, "no <tool_call> block"),
    (GOLD + GOLD, 0.0, "2 <tool_call> blocks"),
    (GOLD + " Hope this helps!", 0.0, "text outside"),
    ("Sure: " + GOLD, 0.0, "text outside"),
    (GOLD[:-len("</tool_call>")], 0.0, "missing </tool_call>"),
    ("</tool_call>" + GOLD[:-len("</tool_call>")], 0.0, "missing </tool_call>"),
    ("<tool_call>{'name': 'get_weather', 'arguments': {}}</tool_call>", 0.0, "not valid JSON"),
    ('<tool_call>{"name": "get_weather", "arguments": "city=Paris"}</tool_call>', 0.0, "not {"),
    ('<tool_call>["get_weather"]</tool_call>', 0.0, "not {"),
    (call("get_weather", {"city": "Paris"}, id=1), 0.0, "unexpected keys ['id']"),
    (call("get_wether", {"city": "Paris"}), 0.0, "unknown tool 'get_wether'"),
    (call("get_weather", {"unit": "celsius"}), 0.0, "missing required argument 'city'"),
    (call("get_weather", {"city": "Paris", "country": "FR"}), 0.0, "unknown argument 'country'"),
    (call("get_weather", {"city": "Paris", "unit": "kelvin"}), 0.0, "must be one of"),
    (call("get_weather", {"city": {"name": "Paris"}}), 0.0, "should be of type string, got dict"),
    (call("convert_currency", {"amount": "12.5", "from_currency": "EUR", "to_currency": "USD"}), 0.0,
     "should be of type number, got str"),
    (call("set_timer", {"minutes": 2.5}), 0.0, "should be of type integer, got float"),
    (call("set_timer", {"minutes": True}), 0.0, "should be of type integer, got bool"),
    (call("set_alarm", {"time": "07:30", "repeat_daily": "true"}), 0.0, "should be of type boolean"),
    ("<tool_call>" + "[" * 100_000 + "</tool_call>", 0.0, "not valid JSON"),
    ("\x00\x1b[31m\ud800", 0.0, "no <tool_call> block"),
    ("x" * 1_000_000, 0.0, "no <tool_call> block"),
])
def test_format_table(response, score, reason):
    verdict = FORMAT.check(response, WEATHER)
    assert verdict.score == score
    assert reason in verdict.reason


@pytest.mark.parametrize("ex, response, score", [
    (WEATHER, GOLD, 1.0),
    (WEATHER, call("get_weather", {"unit": " Celsius ", "city": "PARIS"}), 1.0),
    (WEATHER, call("get_weather", {"city": "Lyon", "unit": "celsius"}), 0.5),
    (WEATHER, call("get_weather", {"city": "Paris"}), 0.5),
    (WEATHER, call("get_weather", {}), 0.0),
    (WEATHER, call("get_stock_price", {"symbol": "Paris"}), 0.0),
    (WEATHER, GOLD + call("get_weather", {}), 1.0),  # correctness reads the first block; format rejects two
    (WEATHER, GOLD[:-len("</tool_call>")] + " trailing", 0.0),  # no closing tag: the rest is not JSON
    (WEATHER, GOLD[:-len("</tool_call>")], 1.0),  # a missing closing tag is a format error only
    (WEATHER, "", 0.0),
    (WEATHER, "I cannot call tools.", 0.0),
    (MONEY, call("convert_currency", {"amount": "12.50", "from_currency": "eur", "to_currency": "usd"}), 1.0),
    (MONEY, call("convert_currency", {"amount": 12, "from_currency": "EUR", "to_currency": "USD"}), 2 / 3),
    (MONEY, call("convert_currency", {"amount": "twelve", "from_currency": "EUR", "to_currency": "JPY"}), 1 / 3),
    (ALARM, call("set_alarm", {"time": "07:30", "repeat_daily": "true"}), 1.0),
    (ALARM, call("set_alarm", {"time": "7:30", "repeat_daily": False}), 0.0),
])
def test_correctness_table(ex, response, score):
    assert CORRECT.score(response, ex) == pytest.approx(score)


@pytest.mark.parametrize("gold, got, same", [
    ("Paris", " paris ", True), (12, "12", True), ("12", 12.0, True), (12.5, "12.50", True), (3, 3.0001, False),
    (True, "TRUE", True), (True, 1, False), ("Paris", None, False), ("x", 1e400, False), (1, [1], False),
])
def test_same_value(gold, got, same):
    assert same_value(gold, got) is same


def test_correctness_without_gold_meta_scores_zero():
    bare = Example(task="tool_calling", prompt="x", meta={})
    verdict = CORRECT.check(GOLD, bare)
    assert verdict.score == 0.0 and "no gold tool" in verdict.reason


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
    response = '<tool_call>{"arguments": {"unit": "celsius", "extra": 1, "city": "Paris"}, "name": "get_weather"}' \
               "</tool_call>"
    spans = CORRECT.relevant_spans(response, WEATHER)
    assert [response[a:b] for a, b in spans] == ["celsius", "Paris", "get_weather"]
    money = call("convert_currency", {"amount": 12.5, "from_currency": "EUR", "to_currency": "USD"})
    assert [money[a:b] for a, b in CORRECT.relevant_spans(money, MONEY)] == ["convert_currency", "12.5", "EUR", "USD"]
    assert CORRECT.relevant_spans('<tool_call>{"name": "get_weather", "arguments": {"city": Paris}}', WEATHER) is None
    assert CORRECT.relevant_spans("", WEATHER) is None


def test_information_texts():
    assert FORMAT.info(WEATHER).endswith('get_weather(city: string (required), unit: "celsius"|"fahrenheit")')
    assert "<tool_call>" in FORMAT.info(WEATHER)
    assert CORRECT.info(WEATHER) == ('The correct call is {"name": "get_weather", "arguments": '
                                     '{"city": "Paris", "unit": "celsius"}}')


def test_registry_and_catalogue():
    assert set(list_verifiers("tool_calling")) == {"tool_call.format", "tool_call.correctness"}
    assert len(gen.TOOLS) == 12
    for schema in gen.TOOLS.values():
        params = schema["parameters"]
        assert set(params["required"]) <= set(params["properties"])
        assert all(p["type"] in JSON_TYPES for p in params["properties"].values())
    assert compact_schema(gen.TOOLS["set_timer"]) == "set_timer(minutes: integer (required))"


def test_generate_is_deterministic_and_sized():
    a, b = gen.generate(60, seed=3), gen.generate(60, seed=3)
    assert len(a) == 60 and [e.to_dict() for e in a] == [e.to_dict() for e in b]
    assert [e.prompt for e in a] != [e.prompt for e in gen.generate(60, seed=4)]
    assert {e.meta["tool"] for e in a[:12]} == set(gen.TOOLS)
    assert len({e.prompt for e in gen.generate(400, seed=0)}) == 400  # the sample file: no prompt in both splits
    assert gen.generate(0) == []
    with pytest.raises(ValueError):
        gen.generate(-1)


def test_generated_examples_are_consistent():
    for ex in gen.generate(240, seed=0):
        assert ex.task == "tool_calling" and ex.id == "" and ex.verifiers == gen.VERIFIERS
        assert len(ex.prompt.split()) < 30
        assert ex.meta["schema"] is gen.TOOLS[ex.meta["tool"]]
        assert ex.reference == gen.format_call(ex.meta["tool"], ex.meta["arguments"])
        assert FORMAT.score(ex.reference, ex) == 1.0 and CORRECT.score(ex.reference, ex) == 1.0
