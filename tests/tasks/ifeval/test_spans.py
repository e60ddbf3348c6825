"""Relevant spans: in bounds on the whole adversarial set, empty for a passing prohibition, the counted units."""

import ifeval_adversarial as adversarial

from mrtpo_viz.tasks.ifeval.evaluation import relevant_spans as spans
from mrtpo_viz.tasks.ifeval.spans import SPANS


def test_spans_are_in_bounds_and_sorted():
    assert len(SPANS) == 26  # one spans function per instruction
    for case in adversarial.generate(seed=0):
        got = spans(case.id, case.response, case.kwargs)
        assert got == sorted(got) and all(0 <= s < e <= len(case.response) for s, e in got), (case.id, case.label)


def test_prohibitions_have_no_evidence_on_a_passing_response():
    assert spans("punctuation:no_comma", "no commas here", {}) == []
    assert spans("punctuation:no_comma", "a, b", {}) == [(1, 2)]
    assert spans("change_case:english_lowercase", "all lower", {}) == []
    assert spans("keywords:forbidden_words", "nothing bad", {"forbidden_words": ["very"]}) == []


def test_counted_units():
    text = "Dear [name],\n* one\n- two\n*bold* and **more**"
    assert [text[a:b] for a, b in spans("detectable_content:number_placeholders", text, {"num_placeholders": 1})] == [
        "[name]"
    ]
    assert [text[a:b] for a, b in spans("detectable_format:number_bullet_lists", text, {"num_bullets": 3})] == [
        "*",
        "-",
        "*",
    ]  # '*bold* and ...' is a bullet line too, officially
    assert [
        text[a:b] for a, b in spans("detectable_format:number_highlighted_sections", text, {"num_highlights": 1})
    ] == ["*bold*", "**more**"]
