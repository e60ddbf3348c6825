"""Text units of the official checks: \\w+ words, Punkt sentences, nltk's all-capital tokens (nltk itself is compared
in test_reference.py, on thousands of strings)."""

from mrtpo_viz.tasks.ifeval.text_units import (
    capital_word_spans,
    char_runs,
    count_capital_words,
    count_sentences,
    count_words,
    sentences,
    word_spans,
)


def test_words_are_runs_of_word_characters():
    assert count_words("It's a well-known fact: 3 rivers.") == 8  # It, s, a, well, known, fact, 3, rivers
    assert count_words("a_b caf\u00e9 \U0001f600") == 2 and word_spans("don't") == [(0, 3), (4, 5)]


def test_sentences():
    text = "Hi! Is it? Yes... e.g. this"
    assert [text[a:b] for a, b in sentences(text)] == ["Hi!", "Is it?", "Yes... e.g.", "this"]
    assert count_sentences("Dr. Smith went home. He slept.") == 2
    assert count_sentences("") == 0 and count_sentences("no end") == 1


def test_capital_words_follow_nltk_tokens():
    cases = {
        "HELLO WORLD": 2,
        "I DON'T KNOW": 4,
        "I'm fine, I think": 2,
        "AT&T and IBM": 3,
        "U.S.A. rocks": 1,
        "CANNOT stop": 2,
        "\u00c9COLE": 1,
        "123 456": 0,
        "WE'RE GONNA WIN": 5,
    }
    assert {t: count_capital_words(t) for t in cases} == cases
    text = "I DON'T"
    assert [text[a:b] for a, b in capital_word_spans(text)] == ["I", "DO", "N'T"]


def test_char_runs():
    assert char_runs("aBCdE", str.isupper) == [(1, 3), (4, 5)] and char_runs("", str.isupper) == []
