"""The instruction table: 25 official ids + one extension, official kwargs names, readable kwargs errors, and the
official descriptions (checked against the official code itself in test_reference.py)."""

import pytest

from mrtpo_viz.tasks import MissingArguments
from mrtpo_viz.tasks.ifeval import BY_ID, BY_NAME, INSTRUCTIONS, OFFICIAL_IDS, KwargsError, describe, instruction
from mrtpo_viz.tasks.ifeval.instructions import KINDS, KWARG_TITLES, arguments, validate_kwargs

LEGACY = [
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
]


def test_table():
    assert len(OFFICIAL_IDS) == 25 and len(INSTRUCTIONS) == 26 and len(BY_NAME) == 26
    assert [i.short for i in INSTRUCTIONS[:14]] == LEGACY  # the public names of 0.2 come first
    assert BY_NAME["ifeval.starts_with"].id == "mrtpo:starts_with" and not BY_NAME["ifeval.starts_with"].official
    assert instruction("ifeval.no_comma") is instruction("punctuation:no_comma") is BY_ID["punctuation:no_comma"]
    assert {p for i in INSTRUCTIONS for p, _ in i.params} == set(KWARG_TITLES)
    assert {k for i in INSTRUCTIONS for _, k in i.params} == set(KINDS)
    assert all(len(arguments(i)) == len(i.params) and all(a.required for a in arguments(i)) for i in INSTRUCTIONS)


@pytest.mark.parametrize(
    "iid, kwargs, fragment",
    [
        ("length_constraints:number_words", {"num_words": 5}, "missing kwarg(s) ['relation']"),
        ("length_constraints:number_words", {"num_words": 5, "relation": "at most"}, "'relation' must be one of"),
        ("length_constraints:number_words", {"num_words": True, "relation": "at least"}, "an integer >= 0"),
        ("length_constraints:number_words", {"num_words": -1, "relation": "at least"}, "an integer >= 0"),
        (
            "length_constraints:nth_paragraph_first_word",
            {"num_paragraphs": 2, "nth_paragraph": 0, "first_word": "a"},
            "'nth_paragraph' must be an integer >= 1",
        ),
        ("punctuation:no_comma", {"n": 1}, "unknown kwarg(s) ['n']"),
        ("punctuation:no_comma", [1], "kwargs must be a dict"),
        ("language:response_language", {"language": "xx"}, "language code"),
        ("keywords:letter_frequency", {"letter": "ab", "let_frequency": 1, "let_relation": "at least"}, "single"),
        (
            "length_constraints:nth_paragraph_first_word",
            {"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "a"},
            "exceeds",
        ),
        ("keywords:forbidden_words", {"forbidden_words": []}, "non-empty list"),
        ("keywords:existence", {"keywords": ["f(x"]}, "valid regular expression"),
        ("nope:nothing", {}, "unknown IFEval instruction"),
    ],
)
def test_kwargs_errors_are_readable(iid, kwargs, fragment):
    with pytest.raises(KwargsError) as e:
        validate_kwargs(iid, kwargs)
    assert fragment in str(e.value) and isinstance(e.value, MissingArguments)


def test_none_values_are_dropped():
    assert validate_kwargs("punctuation:no_comma", {"num_words": None, "relation": None}) == {}


@pytest.mark.parametrize(
    "iid, kwargs, text",
    [
        ("punctuation:no_comma", {}, "In your entire response, refrain from the use of any commas."),
        (
            "length_constraints:number_sentences",
            {"num_sentences": 3, "relation": "less than"},
            "Your response should contain less than 3 sentences.",
        ),
        (
            "keywords:forbidden_words",
            {"forbidden_words": ["very", "just", "very"]},
            "Do not include keywords ['just', 'very'] in the response.",
        ),
        (
            "detectable_content:postscript",
            {"postscript_marker": " P.P.S "},
            "At the end of your response, please explicitly add a postscript starting with P.P.S",
        ),
        (
            "language:response_language",
            {"language": "fi"},
            "Your ENTIRE response should be in Finnish language, no other language is allowed.",
        ),
        (
            "mrtpo:starts_with",
            {"start_phrase": "Here is my note."},
            "Start your response with this exact phrase Here is my note.. "
            "No other words should come before this phrase.",
        ),
    ],
)
def test_descriptions(iid, kwargs, text):
    assert describe(iid, kwargs) == text
