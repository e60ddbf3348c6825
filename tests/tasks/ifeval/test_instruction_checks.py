"""The per-instruction checks: official behaviours worth pinning one by one (all of them are compared with the
official code in test_reference.py)."""

import pytest

from mrtpo_viz.tasks.ifeval.instruction_checks import (
    CHECKS,
    compare,
    first_word,
    json_body,
    paragraph_count,
    postscript_pattern,
)


def test_every_instruction_has_a_check():
    assert len(CHECKS) == 26


def test_relations_and_small_official_rules():
    assert compare(3, "less than", 4) and not compare(4, "less than", 4) and compare(4, "at least", 4)
    assert paragraph_count("A\n***\nB") == 2 and paragraph_count("A\n***\n\n***\nB") is None
    assert first_word('"Hello," she said') == "hello" and json_body("```JSON\n[1]\n```") == "[1]"
    assert postscript_pattern("P.S.") == r"\s*p\.\s?s\..*$" and postscript_pattern("Note:") == r"\s*note:.*$"


@pytest.mark.parametrize(
    "iid, text, kwargs, ok",
    [
        ("change_case:english_capital", "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG NEAR THE RIVER BANK.", {}, True),
        ("change_case:english_capital", "LE RENARD BRUN RAPIDE SAUTE PAR-DESSUS LE CHIEN PARESSEUX.", {}, False),
        ("change_case:english_lowercase", "123 456", {}, False),  # no cased character: islower() is False
        ("language:response_language", "12345 !!!", {"language": "de"}, True),  # nothing to detect counts as followed
        ("detectable_format:constrained_response", "I think... My answer is maybe. Really", {}, True),
        ("combination:two_responses", "A\n******\nA", {}, False),
        ("startend:quotation", '"', {}, False),
    ],
)
def test_official_behaviours(iid, text, kwargs, ok):
    assert CHECKS[iid](text, kwargs)[0] is ok
