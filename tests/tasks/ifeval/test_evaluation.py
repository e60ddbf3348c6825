"""Strict and loose mode as the official loops: blank responses fail, the eight loose variants, pattern time-outs."""

import ifeval_adversarial as adversarial

from mrtpo_viz.tasks.ifeval.evaluation import check, evaluate, loose_variants, relevant_spans as spans
from mrtpo_viz.tasks.ifeval.instruction_checks import REGEX_TIMEOUT_S


def test_blank_response_fails_everything_in_both_modes():
    blank = [c for c in adversarial.generate(seed=0) if c.label.startswith("blank")]
    assert len(blank) == 50
    for case in blank:
        assert check(case.id, case.response, case.kwargs) == (False, "empty response")
        assert check(case.id, case.response, case.kwargs, loose=True)[0] is False


def test_loose_variants_in_the_official_order():
    variants = loose_variants("a\n*b*\nc")
    assert [t for _, t in variants] == ["a\n*b*\nc", "a\nb\nc", "*b*\nc", "a\n*b*", "*b*", "b\nc", "a\nb", "b"]
    assert check("startend:end_checker", "Done. Bye!\nHope this helps", {"end_phrase": "Bye!"}, loose=True) == (
        True,
        "ends with 'Bye!' (loose: last line removed)",
    )
    assert not check("startend:end_checker", "Done. Bye!\nHope this helps", {"end_phrase": "Bye!"})[0]
    assert check("detectable_format:title", "**<<T>>**", {}, loose=True)[0]


def test_a_catastrophic_keyword_pattern_fails_within_its_budget():
    import time

    kw = {"keyword": r"(\w|\w\w)+$", "frequency": 1, "relation": "at least"}
    t = time.process_time()
    ok, reason = check("keywords:frequency", "a" * 40 + "!", kw)
    # the regex engine stops the search after REGEX_TIMEOUT_S of its own time (not wall time: the machine is shared)
    assert not ok and "took longer than" in reason and time.process_time() - t < 20 * REGEX_TIMEOUT_S
    assert spans("keywords:frequency", "a" * 40 + "!", kw) == []


def test_evaluate_a_row():
    ids = ["punctuation:no_comma", "length_constraints:number_words"]
    got = evaluate(ids, [{}, {"num_words": 2, "relation": "at least"}], "one, two")
    assert [ok for ok, _ in got] == [False, True]
    assert check("punctuation:no_comma", 42, {}) == (False, "the response is not a string")
