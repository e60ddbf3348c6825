"""The registered ifeval.* verifiers: a table of pass, fail and edge cases per instruction (official semantics),
spans, reasons, what happens without kwargs ("needs input"), two constraints of one id, arguments and loose mode.

The table keeps the cases of mrtpo-viz 0.2's verifiers, with official kwargs; where the official semantics give
another verdict than 0.2 did, the case says why (``# official: ...``)."""

import math

import pytest

from mrtpo_viz.tasks import MissingArguments, get_verifier, list_verifiers
from mrtpo_viz.tasks.base import Example
from mrtpo_viz.tasks.ifeval import BY_NAME, INSTRUCTIONS, verifier
from mrtpo_viz.tasks.ifeval.verifiers import constraint_kwargs, register_loose

AL, LT = "at least", "less than"


def example(name: str, kwargs: dict | None, *more: tuple[str, dict]) -> Example:
    entries = [] if kwargs is None else [(name, kwargs)]
    constraints = [{"id": BY_NAME[f"ifeval.{n}"].id, "kwargs": kw} for n, kw in [*entries, *more]]
    return Example(
        task="instruction_following",
        prompt="(prompt)",
        meta={"topic": "rivers", "constraints": constraints},
        verifiers=(f"ifeval.{name}",),
    )


def score(name: str, kwargs: dict, response: str) -> float:
    return get_verifier(f"ifeval.{name}").score(response, example(name, kwargs))


def sliced(name: str, kwargs: dict, response: str) -> list[str]:
    return [response[a:b] for a, b in get_verifier(f"ifeval.{name}").relevant_spans(response, example(name, kwargs))]


def words(n, rel):
    return {"num_words": n, "relation": rel}


def sentences(n, rel):
    return {"num_sentences": n, "relation": rel}


def kw(word, n, rel=AL):
    return {"keyword": word, "frequency": n, "relation": rel}


CASES = [
    ("no_comma", {}, "Rivers are long.", 1),
    ("no_comma", {}, "Rivers, lakes.", 0),
    ("no_comma", {}, "Rivers\uff0c lakes.", 1),  # official: only the ASCII comma counts
    ("no_comma", {}, "", 0),
    ("no_comma", {}, " \n\t", 0),
    ("lowercase", {}, "rivers are long.", 1),
    ("lowercase", {}, "Rivers are long.", 0),
    ("lowercase", {}, "stra\u00dfe \u00fcber 42", 0),  # official: lowercase *and* English (langdetect: German)
    ("lowercase", {}, "\u00e4rger \u00c4rger", 0),
    ("lowercase", {}, "123 ...", 0),  # official: str.islower() needs at least one cased letter
    ("uppercase", {}, "RIVERS ARE LONG AND THE WATER IN THEM FLOWS TO THE SEA.", 1),
    ("uppercase", {}, "RIVERS ARE LONG.", 0),  # official: langdetect does not read this short capital text as English
    ("uppercase", {}, "RIVERS are", 0),
    ("uppercase", {}, "STRA\u00dfE", 0),
    ("word_count", words(3, AL), "one two three", 1),
    ("word_count", words(3, AL), "one two", 0),
    ("word_count", words(3, LT), "one two three", 0),
    ("word_count", words(2, LT), "don't", 0),  # official: words are \w+ runs, "don't" is two
    ("word_count", words(2, AL), "well-known ... !!!", 1),
    ("word_count", words(6, LT), "", 0),
    ("sentence_count", sentences(2, AL), "One. Two!", 1),
    ("sentence_count", sentences(2, AL), "One. Two", 1),  # official (Punkt): a trailing fragment is a sentence
    ("sentence_count", sentences(2, AL), "Wait... what?", 0),  # official (Punkt): an ellipsis does not end one
    ("sentence_count", sentences(2, AL), '"Hi." she said.', 1),  # official (Punkt): two sentences
    ("sentence_count", sentences(2, AL), "Dr. Smith lives in the U.S.A. now. He likes it.", 1),
    ("sentence_count", sentences(2, LT), "Version 3.5 is out.", 1),
    ("sentence_count", sentences(2, LT), "Hm" + "." * 5000, 1),
    ("bullet_count", {"num_bullets": 2}, "* a\n* b", 1),
    ("bullet_count", {"num_bullets": 2}, "* a\n- b\nc", 1),
    ("bullet_count", {"num_bullets": 2}, "* a\n***\n* b", 1),
    ("bullet_count", {"num_bullets": 2}, "*a\n* b", 1),  # official: no space is needed after the marker
    ("bullet_count", {"num_bullets": 2}, "  * a\n\t- b", 1),
    ("bullet_count", {"num_bullets": 2}, "* a\n* b\n* c", 0),
    ("bullet_count", {"num_bullets": 1}, "---", 1),  # official: any line starting with '-' counts
    ("paragraph_count", {"num_paragraphs": 2}, "A.\n***\nB.", 1),
    ("paragraph_count", {"num_paragraphs": 2}, "A.\n\nB.", 0),
    ("paragraph_count", {"num_paragraphs": 2}, "A.\n***\n\n***\nB.", 0),  # official: an empty paragraph fails
    ("paragraph_count", {"num_paragraphs": 2}, "***\nA.\n *** \nB.", 1),
    ("paragraph_count", {"num_paragraphs": 2}, "A. *** B.", 1),  # official: *** separates anywhere
    ("paragraph_count", {"num_paragraphs": 2}, "A.\r\n***\r\nB.", 1),
    ("keyword", kw("river", 2), "River and river.", 1),
    ("keyword", kw("river", 2), "rivers and river", 1),  # official: counted as a substring, inside words too
    ("keyword", kw("river", 1), "riverbank", 1),
    ("keyword", kw("river", 1), "A RIVER.", 1),
    ("keyword", kw("river", 2, LT), "river, river", 0),
    ("forbidden_words", {"forbidden_words": ["very", "just"]}, "Rivers are long.", 1),
    ("forbidden_words", {"forbidden_words": ["very", "just"]}, "Very long.", 0),
    ("forbidden_words", {"forbidden_words": ["very", "just"]}, "Justice is everywhere.", 1),
    ("starts_with", {"start_phrase": "Sure thing."}, "  Sure thing. Rivers.", 1),
    ("starts_with", {"start_phrase": "Sure thing."}, "sure thing. Rivers.", 1),  # like end_checker: any case
    ("starts_with", {"start_phrase": "Sure thing."}, "Well. Sure thing.", 0),
    ("ends_with", {"end_phrase": "That is all."}, "Rivers. That is all.\n", 1),
    ("ends_with", {"end_phrase": "That is all."}, "That is all. More.", 0),
    ("ends_with", {"end_phrase": "That is all."}, "That is all", 0),
    ("ends_with", {"end_phrase": "That is all."}, 'Rivers. "that is ALL."', 1),  # official: any case, quotes stripped
    ("title", {}, "<<Rivers>>\nText.", 1),
    ("title", {}, "<<>> text", 0),
    ("title", {}, "<< >> text", 0),
    ("title", {}, "<<a\nb>>", 0),
    ("title", {}, "\u00abRivers\u00bb", 0),
    ("title", {}, "<<<Rivers>>>", 1),
    ("json_format", {}, '{"note": "x"}', 1),
    ("json_format", {}, '```json\n{"a": [1, {"b": {"c": 2}}]}\n```', 1),
    ("json_format", {}, '{"a": 1', 0),
    ("json_format", {}, "5", 1),  # official: any JSON value
    ("json_format", {}, " [1, 2] \n", 1),
    ("json_format", {}, "[" * 100_000, 0),
    ("json_format", {}, 'Here: {"a": 1}', 0),
    ("postscript", {"postscript_marker": "P.S."}, "Hi.\n\nP.S. bye", 1),
    ("postscript", {"postscript_marker": "P.S."}, "Hi. P.S. bye", 1),  # official: the marker may stand anywhere
    ("postscript", {"postscript_marker": "P.S."}, "hi\np.s. bye", 1),
    ("postscript", {"postscript_marker": "P.P.S"}, "Hi.\nP.S. bye", 0),
]


@pytest.mark.parametrize("name, kwargs, response, expected", CASES)
def test_instruction_table(name, kwargs, response, expected):
    assert score(name, kwargs, response) == expected


def test_every_instruction_has_a_registered_verifier():
    legacy = {
        "no_comma",
        "lowercase",
        "uppercase",
        "word_count",
        "sentence_count",
        "bullet_count",
        "keyword",
        "forbidden_words",
        "ends_with",
        "starts_with",
        "title",
        "json_format",
        "paragraph_count",
        "postscript",
    }
    assert {c[0] for c in CASES} == legacy  # the 14 public names of 0.2 keep their cases
    assert set(list_verifiers("instruction_following")) == {i.name for i in INSTRUCTIONS}
    assert len(INSTRUCTIONS) == 26 and sum(i.official for i in INSTRUCTIONS) == 25


def test_reasons_are_readable():
    assert (
        get_verifier("ifeval.keyword").check("river", example("keyword", kw("river", 2))).reason
        == "1 occurrence(s) of 'river'; need at least 2"
    )
    assert get_verifier("ifeval.no_comma").check("a, b,, c", example("no_comma", {})).reason == "found 3 comma(s)"
    assert (
        get_verifier("ifeval.word_count").check("a b", example("word_count", words(3, AL))).reason
        == "2 word(s); need at least 3"
    )
    assert get_verifier("ifeval.title").check("", example("title", {})).reason == "empty response"


@pytest.mark.parametrize(
    "name, kwargs, why",
    [
        ("keyword", None, "no 'keywords:frequency' constraint"),
        ("keyword", {"keyword": "river"}, "missing kwarg(s)"),
        ("keyword", {"keyword": "river", "frequency": "2", "relation": AL}, "'frequency' must be an integer >= 0"),
        ("word_count", {}, "['num_words', 'relation']"),
        ("word_count", {"num_words": True, "relation": AL}, "integer"),
        ("word_count", {"min": 3}, "unknown kwarg(s) ['min']"),
        ("word_count", words(3, "at most"), "'relation'"),
        ("sentence_count", {"num_sentences": None, "relation": AL}, "'num_sentences'"),
        ("forbidden_words", {"forbidden_words": "very"}, "non-empty list"),
        ("ends_with", {"end_phrase": "  "}, "'end_phrase'"),
        ("starts_with", {}, "'start_phrase'"),
        ("bullet_count", {"num_bullets": -1}, "an integer >= 0"),
        ("keyword", kw("f(x", 1), "regular expression"),
    ],
)
def test_without_usable_kwargs_a_verifier_needs_input(name, kwargs, why):
    ex = example(name, kwargs)
    v = get_verifier(f"ifeval.{name}")
    verdict = v.check("Some text, with words.", ex)
    assert math.isnan(verdict.score) and verdict.reason.startswith("needs input") and why in verdict.reason
    assert v.relevant_spans("Some text.", ex) is None
    with pytest.raises(MissingArguments, match=f"ifeval.{name} needs input"):
        v.info(ex)


@pytest.mark.parametrize(
    "meta", [{"constraints": "no_comma"}, {"constraints": [None]}, {"constraints": [{"name": "no_comma", "args": {}}]}]
)
def test_malformed_constraints_need_input_and_say_what_they_should_be(meta):
    verdict = get_verifier("ifeval.no_comma").check("no commas here", Example("instruction_following", "x", meta))
    assert math.isnan(verdict.score) and "{'id', 'kwargs'}" in verdict.reason


def test_an_instruction_without_kwargs_applies_without_an_entry():
    """0.2 scored 0 ("no arguments for constraint") here; ``no_comma`` needs no input, so it now just checks."""
    free = Example(task="instruction_following", prompt="Write about rivers.")
    assert get_verifier("ifeval.no_comma").score("no commas here", free) == 1.0
    assert get_verifier("ifeval.no_comma").score("a, b", free) == 0.0
    assert get_verifier("ifeval.title").info(free).startswith("Your answer must contain a title")
    assert get_verifier("ifeval.no_comma").missing_args(free) == []


def test_two_constraints_of_one_id_must_all_hold():
    ex = example("word_count", words(3, AL), ("word_count", words(6, LT)), ("no_comma", {}))
    v = get_verifier("ifeval.word_count")
    assert [v.score(r, ex) for r in ("one two", "one two three", "a b c d e", "a b c d e f")] == [0, 1, 1, 0]
    assert v.info(ex) == "Answer with at least 3 words. Answer with less than 6 words."
    assert v.check("a b c d e f", ex).reason == "6 word(s); need at least 3; 6 word(s); need less than 6"
    assert v.args(ex) == words(3, AL)  # the first entry: what the app shows
    assert constraint_kwargs(ex, "ifeval.word_count") == [words(3, AL), words(6, LT)]


def test_arguments_are_the_official_kwargs_and_with_args_fills_a_free_prompt():
    v = get_verifier("ifeval.word_count")
    assert [(a.name, a.kind, a.choices) for a in v.arguments] == [
        ("num_words", "integer", ()),
        ("relation", "choice", (LT, AL)),
    ]
    free = Example(task="instruction_following", prompt="Write about rivers.")
    assert v.missing_args(free) == ["num_words", "relation"]
    filled = v.with_args(free, {"num_words": 5, "relation": LT})
    assert v.missing_args(filled) == [] and v.info(filled) == "Answer with less than 5 words."
    assert filled.meta["constraints"] == [{"id": "length_constraints:number_words", "kwargs": words(5, LT)}]
    again = v.with_args(filled, {"num_words": 7})  # updates the entry rather than adding one
    assert again.meta["constraints"] == [{"id": "length_constraints:number_words", "kwargs": words(7, LT)}]
    assert free.meta == {} and get_verifier("ifeval.language").arguments[0].choices[:2] == ("en", "es")
    with pytest.raises(ValueError, match="takes no argument"):
        v.with_args(free, {"min": 5})


def test_loose_mode_is_a_separate_verifier():
    ex = example("ends_with", {"end_phrase": "Bye!"})
    response = "Done. Bye!\nHope this helps"
    loose = verifier("ifeval.ends_with", loose=True)
    assert loose.name == "ifeval.ends_with.loose" and "loose" in loose.description
    assert get_verifier("ifeval.ends_with").score(response, ex) == 0.0 and loose.score(response, ex) == 1.0
    assert loose.info(ex) == get_verifier("ifeval.ends_with").info(ex)
    assert "ifeval.ends_with.loose" not in list_verifiers()
    names = register_loose()
    try:
        assert len(names) == 26 and get_verifier("ifeval.ends_with.loose").score(response, ex) == 1.0
    finally:
        from mrtpo_viz.tasks.base import VERIFIERS

        for n in names:
            VERIFIERS.pop(n)


VALID = {
    "word_count": words(1, AL),
    "sentence_count": sentences(1, AL),
    "bullet_count": {"num_bullets": 1},
    "paragraph_count": {"num_paragraphs": 1},
    "keyword": kw("a", 1),
    "forbidden_words": {"forbidden_words": ["a"]},
    "starts_with": {"start_phrase": "a"},
    "ends_with": {"end_phrase": "a"},
    "postscript": {"postscript_marker": "P.S."},
    "include_keywords": {"keywords": ["a"]},
    "letter_frequency": {"letter": "a", "let_frequency": 1, "let_relation": AL},
    "language": {"language": "en"},
    "paragraph_first_word": {"num_paragraphs": 1, "nth_paragraph": 1, "first_word": "a"},
    "placeholders": {"num_placeholders": 1},
    "highlights": {"num_highlights": 1},
    "sections": {"section_spliter": "Section", "num_sections": 1},
    "repeat_prompt": {"prompt_to_repeat": "a"},
    "capital_words": {"capital_frequency": 1, "capital_relation": AL},
}
HOSTILE = [
    "",
    "\x00\x07\x1b[2J",
    "\ud800\udfff",
    "\U0001f30a" * 1000,
    "a" * 100_000,
    "*" * 50_000 + "\n",
    "<<" * 20_000,
    "{" * 50_000,
    "P.S." * 10_000,
    "., " * 30_000,
    "." * 50_000 + "a",
    "a'" * 50_000,
    " " * 50_000 + "x",
]


@pytest.mark.parametrize(
    "name, response",
    [pytest.param(i.short, r, id=f"{i.short}-{n}") for i in INSTRUCTIONS for n, r in enumerate(HOSTILE)],
)
def test_never_raises(name, response):
    ex = example(name, VALID.get(name, {}))
    v = get_verifier(f"ifeval.{name}")
    assert v.score(response, ex) in (0.0, 1.0)
    spans = v.relevant_spans(response, ex)
    assert isinstance(spans, list) and all(0 <= a < b <= len(response) for a, b in spans)


@pytest.mark.parametrize(
    "name, kwargs, response, expected",
    [
        ("no_comma", {}, "a, b, c", [",", ","]),
        ("no_comma", {}, "a b c", []),
        ("lowercase", {}, "Rivers ARE long", ["R", "ARE"]),
        ("uppercase", {}, "ABc DEF", ["c"]),
        ("keyword", kw("river", 1), "River, rivers and a river.", ["River", "river", "river"]),
        ("forbidden_words", {"forbidden_words": ["just", "very"]}, "Very good, just fine.", ["Very", "just"]),
        ("ends_with", {"end_phrase": "That is all."}, "Rivers. That is all.  \n", ["That is all."]),
        ("ends_with", {"end_phrase": "That is all."}, "Rivers are long", ["ers are long"]),
        ("starts_with", {"start_phrase": "Sure."}, "\n Sure. Rivers.", ["Sure."]),
        ("title", {}, "<<>> <<Rivers>>\nText.", ["<<>> <<Rivers>>"]),  # official: one greedy match per line
        ("postscript", {"postscript_marker": "P.S."}, "Text.\n\n  P.S. See you.\n", ["P.S. See you."]),
        ("bullet_count", {"num_bullets": 2}, "* one\n- two\n***", ["*", "-"]),
        ("paragraph_count", {"num_paragraphs": 2}, "A.\n***\nB.", ["***"]),
        ("sentence_count", sentences(2, AL), "One. Two?! Three", [".", "!", "e"]),  # the last character of each
        ("word_count", words(9, LT), "don't stop, go", ["don", "t", "stop", "go"]),
        ("json_format", {}, ' ```json\n {"a": 1}\n```', ["{", "}"]),
        ("json_format", {}, '{"a": 1,}', ["}"]),
    ],
)
def test_relevant_spans(name, kwargs, response, expected):
    assert sliced(name, kwargs, response) == expected


def test_information_is_the_official_description():
    assert (
        get_verifier("ifeval.keyword").info(example("keyword", kw("river", 2)))
        == "In your response, the word river should appear at least 2 times."
    )
    assert (
        get_verifier("ifeval.word_count").info(example("word_count", words(40, LT)))
        == "Answer with less than 40 words."
    )
    assert (
        get_verifier("ifeval.ends_with").info(example("ends_with", {"end_phrase": "That is all."}))
        == "Finish your response with this exact phrase That is all.. No other words should follow this phrase."
    )
