"""The verdicts, spans and information texts on BFCL-style examples: several functions, parallel calls, accepted
alternatives, dotted names, dict answers; and what an example without functions or answers gets."""

import json
import math

import pytest

from mrtpo_viz.tasks.base import Example, MissingArguments
from mrtpo_viz.tasks.tool_calling.verdicts import (
    check_correctness,
    check_format,
    correctness_info,
    correctness_result,
    correctness_spans,
    format_info,
    format_spans,
)

PLAY = {
    "name": "spotify.play",
    "description": "Play songs.",
    "parameters": {
        "type": "dict",
        "required": ["artist"],
        "properties": {
            "artist": {"type": "string"},
            "duration": {"type": "integer"},
            "mode": {"type": "string", "enum": ["shuffle", "repeat"]},
        },
    },
}
STOP = {"type": "function", "function": {"name": "stop", "parameters": {"type": "object", "properties": {}}}}
PARALLEL = Example(
    "bfcl",
    "Play Taylor Swift for 20 minutes and Maroon 5 for 15.",
    meta={
        "category": "parallel",
        "functions": [PLAY, STOP],
        "possible_answer": [
            {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
            {"spotify.play": {"artist": ["Maroon 5", "Maroon Five"], "duration": [15, ""]}},
        ],
    },
)
MULTIPLE = Example(
    "bfcl",
    "Play Adele.",
    meta={
        "category": "multiple",
        "functions": [STOP, PLAY],
        "possible_answer": [{"spotify.play": {"artist": ["Adele"]}}],
    },
)


def call(name, args):
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


TWO = (
    call("spotify.play", {"artist": "Maroon 5"})
    + "\n"
    + call("spotify.play", {"artist": "Taylor Swift", "duration": 20})
)


def test_format_several_blocks_each_checked():
    assert check_format(TWO, PARALLEL).score == 1.0
    assert check_format(TWO + call("stop", {}), PARALLEL).score == 1.0  # format never looks at the answers
    bad = TWO + "\n" + call("spotify.play", {"artist": "X", "mode": "loop"})
    verdict = check_format(bad, PARALLEL)
    assert verdict.score == 0.0 and verdict.reason.startswith("call 3 (spotify.play): argument 'mode' must be one of")
    assert (
        check_format(call("spotify.play", {"artist": "A"}) * 2, MULTIPLE).reason
        == "2 <tool_call> blocks; exactly one is allowed"
    )


def test_format_names_with_underscore_to_dot():
    dotted = call("spotify_play", {"artist": "Adele"})
    assert "unknown function 'spotify_play'" in check_format(dotted, MULTIPLE).reason
    assert check_format(dotted, MULTIPLE, underscore_to_dot=True).score == 1.0
    assert check_correctness(dotted, MULTIPLE, underscore_to_dot=True).score == 1.0
    meta_dots = Example("bfcl", "x", meta={**MULTIPLE.meta, "underscore_to_dot": True})
    assert check_correctness(dotted, meta_dots).score == 1.0


@pytest.mark.parametrize(
    "response, score, error",
    [
        (TWO, 1.0, ""),
        (
            call("spotify.play", {"artist": "maroon five"})
            + call("spotify.play", {"artist": "TAYLOR SWIFT", "duration": 20}),
            1.0,
            "",
        ),
        (TWO + call("stop", {}), 0.0, "wrong_count"),
        (call("spotify.play", {"artist": "Taylor Swift", "duration": 20}), 0.0, "wrong_count"),
        (TWO.replace('"duration": 20', '"duration": 21'), 0.0, "cannot_find_match"),
        ("no calls", 0.0, "wrong_count"),
        ("<tool_call>{oops}</tool_call>", 0.0, "parse"),
    ],
)
def test_correctness_result_classes(response, score, error):
    verdict, cls = correctness_result(response, PARALLEL)
    assert (verdict.score, cls) == (score, error), verdict.reason


def test_multiple_picks_the_named_function():
    assert check_correctness(call("spotify.play", {"artist": "adele"}), MULTIPLE).score == 1.0
    assert check_correctness(call("stop", {}), MULTIPLE).reason == "called 'stop'; expected 'spotify.play'"


def test_information_texts_by_category():
    assert format_info(PARALLEL) == (
        'Reply with one or more <tool_call>{"name": "<function>", "arguments": {...}}</tool_call> blocks, one per call,'
        " and nothing else; each call must name one of these functions and fit its parameters: spotify.play(artist: "
        'string (required), duration: integer, mode: "shuffle"|"repeat"); stop()'
    )
    assert format_info(MULTIPLE).startswith('Reply with exactly one <tool_call>{"name": "<function>"')
    assert correctness_info(PARALLEL).startswith(
        'The correct answer is 2 call(s) in any order: spotify.play(artist="Taylor Swift", duration=20); '
        'spotify.play(artist="Maroon 5" | "Maroon Five", duration=15 | omitted). Each argument takes one of'
    )
    assert (
        correctness_info(MULTIPLE) == 'The correct call is {"name": "spotify.play", "arguments": {"artist": "Adele"}}'
    )


def test_dict_answers_are_shown_one_level_down():
    fn = {"name": "ac", "parameters": {"type": "dict", "properties": {"body": {"type": "dict"}}, "required": ["body"]}}
    ex = {
        "meta": {
            "category": "simple",
            "functions": [fn],
            "possible_answer": [{"ac": {"body": [{"mode": ["COOL"], "power": ["", False]}]}}],
        }
    }
    assert 'body={mode: "COOL", power: omitted | false}' in correctness_info(ex)  # a dict example works too
    assert check_correctness(call("ac", {"body": {"mode": "cool"}}), ex).score == 1.0
    assert "key 'mode' is \"HEAT\"" in check_correctness(call("ac", {"body": {"mode": "HEAT"}}), ex).reason


def test_spans_per_block():
    fmt = [TWO[a:b] for a, b in format_spans(TWO, PARALLEL)]
    assert fmt == ["<tool_call>", "{", '"name"', '"arguments"', "</tool_call>"] * 2
    cor = [TWO[a:b] for a, b in correctness_spans(TWO, PARALLEL)]
    assert cor == ["spotify.play", "Maroon 5", "spotify.play", "Taylor Swift", "20"]
    other = call("nope", {"artist": "x", "zz": 1})
    assert [other[a:b] for a, b in correctness_spans(other, PARALLEL)] == ["nope", "x"]  # any expected call's keys
    assert format_spans("none", PARALLEL) is None and correctness_spans("<tool_call>oops", PARALLEL) is None


def test_without_functions_or_answers():
    free = Example("bfcl", "hi", meta={"functions": [PLAY]})
    verdict = check_correctness(TWO, free)
    assert math.isnan(verdict.score) and "possible_answer" in verdict.reason
    assert correctness_result(TWO, free)[1] == "needs_input" and correctness_spans(TWO, free) is None
    assert check_format(TWO, free).score == 1.0  # format needs only the functions
    with pytest.raises(MissingArguments):
        correctness_info(free)
    with pytest.raises(MissingArguments):
        format_info(Example("bfcl", "hi"))
    assert math.isnan(check_format(TWO, Example("bfcl", "hi", meta={"functions": "junk"})).score)
