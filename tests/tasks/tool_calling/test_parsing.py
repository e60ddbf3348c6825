"""The <tool_call> format: blocks and their layout, decoding, rendering, and where keys and values sit."""

import json

from mrtpo_viz.tasks.tool_calling.parsing import (
    argument_scan,
    block_bounds,
    layout_error,
    parse_calls,
    render_calls,
    scan_object,
    scanned_blocks,
)

GOOD = {"city": "Paris", "days": 3}


def call(args, name="weather.get"):
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


def test_block_bounds_with_and_without_closing_tags():
    text = call(GOOD) + "\n" + "<tool_call>{}" + "<tool_call>{}"
    blocks = block_bounds(text)
    assert len(blocks) == 3
    assert text[blocks[0][1] : blocks[0][2]] == json.dumps({"name": "weather.get", "arguments": GOOD})
    assert blocks[1][2] == blocks[1][3] == blocks[2][0]  # an unclosed block ends where the next one opens
    assert blocks[2][3] == len(text) and block_bounds("no tags") == []


def test_parse_several_blocks_and_the_layout_rules():
    assert parse_calls(call(GOOD) + "\n " + call(GOOD))[0] == [{"name": "weather.get", "arguments": GOOD}] * 2
    assert parse_calls(call(GOOD) + call(GOOD), single=True) == (None, "2 <tool_call> blocks; exactly one is allowed")
    assert parse_calls("hi " + call(GOOD))[1] == "text outside the <tool_call> block"
    assert parse_calls(call(GOOD) + " bye " + call(GOOD))[1] == "text outside the <tool_call> blocks"
    assert parse_calls("hi " + call(GOOD), strict=False)[0] == [{"name": "weather.get", "arguments": GOOD}]
    assert parse_calls(call(GOOD) + call(GOOD)[:-12])[1] == "missing </tool_call> closing tag (block 2)"
    assert parse_calls("")[1] == "no <tool_call> block" and parse_calls(None)[1] == "no <tool_call> block"


def test_decoding_errors_name_the_block():
    assert parse_calls("<tool_call>{</tool_call>")[1] == "the block is not valid JSON"
    assert (
        parse_calls(call(GOOD) + "<tool_call>[1]</tool_call>")[1]
        == 'block 2 is not {"name": string, "arguments": object}'
    )
    extra = '<tool_call>{"name": "x", "arguments": {}, "id": 1}</tool_call>'
    assert parse_calls(extra)[1] == "unexpected keys ['id'] in the call object of the block"
    assert parse_calls(extra, strict=False)[0] == [{"name": "x", "arguments": {}, "id": 1}]  # correctness ignores it


def test_layout_error_directly():
    text = "  " + call(GOOD) + "  "
    assert layout_error(text, block_bounds(text)) is None
    assert layout_error("x", []) == "no <tool_call> block"


def test_render_calls_round_trips():
    text = render_calls([("a.b", {"x": 1, "s": "ü"}), ("c", {})])
    assert (
        text == '<tool_call>{"name": "a.b", "arguments": {"x": 1, "s": "ü"}}</tool_call>\n'
        '<tool_call>{"name": "c", "arguments": {}}</tool_call>'
    )
    assert parse_calls(text)[0] == [{"name": "a.b", "arguments": {"x": 1, "s": "ü"}}, {"name": "c", "arguments": {}}]


def test_scan_object_spans():
    text = '{"name": "f", "arguments": {"a": [1, 2], "b": "x y"}}'
    found = scan_object(text, 0)
    assert text[slice(*found["name"][0])] == '"name"' and text[slice(*found["name"][1])] == "f"
    args = argument_scan(text, found)
    assert text[slice(*args["a"][1])] == "[1, 2]" and text[slice(*args["b"][1])] == "x y"
    assert scan_object(text, 1) is None and scan_object('{"a" 1}', 0) is None and scan_object("{}", 0) == {}
    assert scan_object('{"a": 1, "a": 2}', 0)["a"][2] == 2  # the last occurrence, as json.loads


def test_scanned_blocks_report_braces_and_objects():
    text = call(GOOD) + "<tool_call> oops</tool_call>" + '<tool_call>{"name": }</tool_call>'
    (_, brace0, obj0), (_, brace1, obj1), (_, brace2, obj2) = scanned_blocks(text)
    assert text[brace0] == "{" and obj0["name"][2] == "weather.get"
    assert brace1 is None and obj1 is None
    assert text[brace2] == "{" and obj2 is None
