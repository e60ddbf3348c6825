"""IFEval on text outside Latin script and around Unicode classes, with the official semantics (numbers measured
with nltk 3.10.4 and Python's ``re``, the engines of lm-eval 0.4.13's checkers; ``test_reference.py`` runs the
official code itself on the whole multilingual block).

One test per class where ours and the official checkers parted: word counts (nltk's ``\\w`` on the ``regex``
engine), sentence separators U+001C..U+001F, kwargs used as patterns (``re``, not ``regex``), and kwargs of 0.
"""

import re
import unicodedata
import warnings

import pytest

from mrtpo_viz.tasks.ifeval import check, validate_kwargs
from mrtpo_viz.tasks.ifeval.text_units import count_sentences, count_words, word_spans

NFD = lambda s: unicodedata.normalize("NFD", s)  # noqa: E731


@pytest.mark.parametrize(
    "text, nltk_words",
    [
        ("नमस्ते दुनिया, यह एक परीक्षण वाक्य है।", 7),  # Devanagari vowel signs and virama join their word
        ("สวัสดีครับ ผมชื่อสมชาย", 2),  # Thai: no spaces between words, marks inside
        ("שָׁלוֹם עוֹלָם", 2),  # Hebrew with niqqud
        ("من می\u200cخواهم به خانه بروم", 5),  # Persian: ZWNJ inside a word
        (NFD("Việt Nam là một đất nước"), 6),  # decomposed accents
        ("আমি বাংলায় গান গাই", 4),  # Bengali
        ("السَّلَامُ عَلَيْكُمْ", 2),  # Arabic with harakat
        ("\U0001f468\u200d\U0001f469\u200d\U0001f467 family", 3),  # each ZWJ of an emoji sequence is a word
        ("x\u00b2 \u2460 \u00bd word", 2),  # superscripts, circled digits and fractions are not word characters
        ("don't stop", 3),
    ],
)
def test_word_counts_follow_nltk_on_any_script(text, nltk_words):
    """nltk 3.10's ``RegexpTokenizer(r"\\w+")`` runs on the ``regex`` engine; ``re``'s ``\\w`` counted 14, 6, 6,
    6, 11, 8, 8, 1 and 4 words here (main counted with ``re``)."""
    assert count_words(text) == len(word_spans(text)) == nltk_words
    kw = {"num_words": nltk_words, "relation": "at least"}
    assert check("length_constraints:number_words", text, kw)[0]
    assert not check("length_constraints:number_words", text, dict(kw, relation="less than"))[0]


@pytest.mark.parametrize("sep", ["\x1c", "\x1d", "\x1e", "\x1f"])
def test_information_separators_do_not_end_a_sentence(sep):
    """nltk's Punkt runs on ``regex``, whose ``\\s`` is Unicode's White_Space (no U+001C..U+001F); main split
    ``Hello.<sep>World.`` into 2 sentences (``re``'s ``\\s`` takes them for spaces), nltk gives 1."""
    assert count_sentences(f"Hello.{sep}World.") == 1
    assert count_sentences("Hello.\u00a0World.") == count_sentences("Hello. World.") == 2
    assert not check(
        "length_constraints:number_sentences", f"Hello.{sep}World.", {"num_sentences": 2, "relation": "at least"}
    )[0]


@pytest.mark.parametrize(
    "iid, kwargs, response",
    [
        ("keywords:existence", {"keywords": [r"file\ssep"]}, "FILE\x1cSEP"),  # re's \s holds U+001C
        ("keywords:existence", {"keywords": ["[[:alpha:]]"]}, "a:"),  # no POSIX classes in re: a set, then ']'
        ("keywords:forbidden_words", {"forbidden_words": ["नमस्ते"]}, "नमस्ते दुनिया"),  # \b after a vowel sign
        ("keywords:forbidden_words", {"forbidden_words": ["x"]}, "x\u00b2 y"),  # \b before a superscript
        ("keywords:forbidden_words", {"forbidden_words": ["cafe"]}, NFD("cafe\u0301 au lait")),  # NFD accent
        ("keywords:frequency", {"keyword": r"\w+", "frequency": 2, "relation": "at least"}, "नमस्ते"),  # \w and marks
        (
            "detectable_format:multiple_sections",
            {"section_spliter": "SECTION", "num_sections": 2},
            "SECTION\x1c1 a SECTION\x1c2 b",
        ),
        ("detectable_content:postscript", {"postscript_marker": r"NOTE\sX"}, "text\nnote\x1cx: bye"),
    ],
)
def test_pattern_kwargs_have_re_semantics(iid, kwargs, response):
    """The official checkers call ``re.search``/``re.findall``/``re.split`` with the kwarg; main ran ``regex``,
    which differs on each case here. The verdict must be exactly what ``re`` gives."""
    flags, pattern = {
        "keywords:existence": (re.I, kwargs.get("keywords", [""])[0]),
        "keywords:forbidden_words": (re.I, r"\b" + kwargs.get("forbidden_words", [""])[0] + r"\b"),
        "keywords:frequency": (re.I, kwargs.get("keyword", "")),
        "detectable_format:multiple_sections": (0, r"\s?" + kwargs.get("section_spliter", "") + r"\s?\d+\s?"),
        "detectable_content:postscript": (re.M, r"\s*" + kwargs.get("postscript_marker", "").lower() + r".*$"),
    }[iid]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # re: "Possible nested set" for '[[', as in the official run
        target = response.lower() if iid == "detectable_content:postscript" else response
        if iid == "detectable_format:multiple_sections":
            want = len(re.split(pattern, target)) - 1 >= kwargs["num_sections"]
        elif iid == "keywords:forbidden_words":
            want = not re.search(pattern, target, flags)
        else:
            want = bool(re.search(pattern, target, flags))
        assert check(iid, response, kwargs)[0] is want


@pytest.mark.parametrize(
    "iid, kwargs, response, passes",
    [
        ("detectable_format:number_bullet_lists", {"num_bullets": 0}, "No bullets here.", True),
        ("detectable_format:number_bullet_lists", {"num_bullets": 0}, "* one\n* two", False),
        ("detectable_content:number_placeholders", {"num_placeholders": 0}, "nothing", True),
        ("detectable_format:number_highlighted_sections", {"num_highlights": 0}, "plain", True),
        ("detectable_format:multiple_sections", {"section_spliter": "SECTION", "num_sections": 0}, "plain", True),
        ("length_constraints:number_paragraphs", {"num_paragraphs": 0}, "***", True),
        ("length_constraints:number_words", {"num_words": 0, "relation": "less than"}, "word", False),
        ("length_constraints:number_sentences", {"num_sentences": 0, "relation": "at least"}, "One.", True),
        ("keywords:frequency", {"keyword": "cat", "frequency": 0, "relation": "less than"}, "cat", False),
        ("keywords:letter_frequency", {"letter": "z", "let_frequency": 0, "let_relation": "at least"}, "abc", True),
        ("change_case:capital_word_frequency", {"capital_frequency": -1, "capital_relation": "at least"}, "a", True),
        ("change_case:capital_word_frequency", {"capital_frequency": 0, "capital_relation": "less than"}, "A", False),
    ],
)
def test_counts_of_zero_are_accepted_as_the_official_classes_accept_them(iid, kwargs, response, passes):
    """The official classes redraw a count only when it is None or negative (``capital_frequency`` only when
    None); lm-eval's loop drops falsy kwargs before, but a count of 0 is the class's valid value. Main asked for
    input ("a positive integer"); here the verdict is the class's."""
    assert validate_kwargs(iid, kwargs) == kwargs
    assert check(iid, response, kwargs)[0] is passes


def test_nth_paragraph_stays_within_its_range():
    kw = {"num_paragraphs": 2, "nth_paragraph": 0, "first_word": "a"}
    with pytest.raises(ValueError, match="'nth_paragraph' must be an integer >= 1"):
        validate_kwargs("length_constraints:nth_paragraph_first_word", kw)
    with pytest.raises(ValueError, match="must be an integer >= 0"):
        validate_kwargs("detectable_format:number_bullet_lists", {"num_bullets": -1})
