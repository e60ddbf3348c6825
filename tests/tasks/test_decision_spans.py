"""Decision spans (the credit study's oracle) beside the relevant spans (the localization benchmark's ground truth).

Each changed family on a bundled example: the decision spans hold what decides the verdict (an argument value, the
query's keywords and operators, the end-of-sequence token), and the relevant spans are as they were.
"""

import dataclasses

import pytest

from mrtpo_viz.tasks import Example, Verdict, Verifier, get_verifier, load_examples
from mrtpo_viz.tasks.base import eos_span


def _example(task: str, ident: str) -> Example:
    return next(e for e in load_examples(task) if e.id == ident)


def _texts(text: str, spans) -> list[str]:
    return [text[a:b] for a, b in spans]


def test_eos_span_is_the_virtual_character_past_the_text():
    assert eos_span("") == (0, 1)
    assert eos_span("abc") == (3, 4)


def test_the_new_field_comes_last_so_positional_construction_still_works():
    names = [f.name for f in dataclasses.fields(Verifier)]
    assert names[-1] == "decision_spans_fn" and names[6] == "spans_fn"
    v = Verifier("test.pos", "custom", "Pos", "d", lambda ex: "i", lambda r, ex: Verdict(1.0, "ok"), lambda r, ex: [])
    assert v.spans_fn is not None and v.decision_spans_fn is None


def test_default_decision_spans_are_the_relevant_spans():
    ex = Example("custom", "Say hi.")
    v = Verifier(
        "test.hi",
        "custom",
        "Hi",
        "Says hi.",
        lambda e: "Say hi.",
        lambda r, e: Verdict(float("hi" in r), "hi"),
        spans_fn=lambda r, e: [(r.find("hi"), r.find("hi") + 2)],
    )
    assert v.decision_spans("oh hi there", ex) == v.relevant_spans("oh hi there", ex) == [(3, 5)]
    bare = Verifier("test.bare", "custom", "Bare", "No spans.", lambda e: "", lambda r, e: Verdict(0.0, ""))
    assert bare.decision_spans("x", ex) is None
    own = dataclasses.replace(v, decision_spans_fn=lambda r, e: [eos_span(r)])
    assert own.decision_spans("oh hi", ex) == [(5, 6)] and own.relevant_spans("oh hi", ex) == [(3, 5)]


def test_tool_call_format_decision_spans_add_the_argument_values_and_the_end():
    ex = _example("tool_calling", "tool_calling-test-0300")
    r = ex.reference
    fmt = get_verifier("tool_call.format")
    assert _texts(r, fmt.relevant_spans(r, ex)) == ["<tool_call>", "{", '"name"', '"arguments"', "</tool_call>"]
    decision = fmt.decision_spans(r, ex)
    assert _texts(r, decision) == [
        "<tool_call>",
        "{",
        '"name"',
        '"arguments"',
        '"Project review"',
        '"2026-02-26"',
        '"01:00"',
        "30",
        "</tool_call>",
        "",
    ]
    assert decision[-1] == eos_span(r) == (len(r), len(r) + 1)
    assert set(fmt.relevant_spans(r, ex)) < set(decision)


def test_a_wrong_type_fails_format_inside_a_decision_span():
    ex = _example("tool_calling", "tool_calling-test-0300")
    bad = ex.reference.replace('"duration_minutes": 30', '"duration_minutes": "30"')
    fmt = get_verifier("tool_call.format")
    assert fmt.score(ex.reference, ex) == 1.0 and fmt.score(bad, ex) == 0.0  # the value's quotes decide
    where = bad.index('"30"')
    assert (where, where + 4) in fmt.decision_spans(bad, ex)
    assert not any(a <= where < b for a, b in fmt.relevant_spans(bad, ex))


def test_tool_call_correctness_keeps_its_spans():
    ex = _example("tool_calling", "tool_calling-test-0300")
    v = get_verifier("tool_call.correctness")
    assert v.decision_spans_fn is None
    assert v.decision_spans(ex.reference, ex) == v.relevant_spans(ex.reference, ex)


def test_no_block_has_no_tool_format_spans_either_way():
    ex = _example("tool_calling", "tool_calling-test-0300")
    fmt = get_verifier("tool_call.format")
    assert fmt.relevant_spans("no call here", ex) is None and fmt.decision_spans("no call here", ex) is None


def test_sql_execution_decision_span_is_the_whole_query():
    ex = _example("text_to_sql", "text_to_sql-test-0300")
    r = ex.reference
    v = get_verifier("sql.execution")
    assert _texts(r, v.relevant_spans(r, ex)) == ["category", "products", "name", "'Hose'"]
    decision = _texts(r, v.decision_spans(r, ex))
    assert decision == ["SELECT category FROM products WHERE name = 'Hose'"]
    assert "SELECT" in decision[0] and "=" in decision[0]
    assert v.decision_spans("no fence", ex) is None


def test_sql_format_decision_spans_add_the_end():
    ex = _example("text_to_sql", "text_to_sql-test-0300")
    r = ex.reference
    v = get_verifier("sql.format")
    assert _texts(r, v.relevant_spans(r, ex)) == ["```sql", "SELECT", "```"]
    assert v.decision_spans(r, ex) == v.relevant_spans(r, ex) + [eos_span(r)]
    assert v.decision_spans("no fence", ex) == []


def test_ends_with_decision_spans_add_the_end():
    ex = _example("instruction_following", "instruction_following-test-0302")
    r = ex.reference
    v = get_verifier("ifeval.ends_with")
    assert _texts(r, v.relevant_spans(r, ex)) == ["That is all."]
    assert v.decision_spans(r, ex) == v.relevant_spans(r, ex) + [(len(r), len(r) + 1)]
    keyword = get_verifier("ifeval.keyword")  # at least 1 "songs": ending does not decide
    assert keyword.decision_spans(r, ex) == keyword.relevant_spans(r, ex)
    assert all(b <= len(r) for _, b in keyword.decision_spans(r, ex))


@pytest.mark.parametrize(
    ("ident", "ends"), [("instruction_following-test-0304", True), ("instruction_following-test-0310", False)]
)
def test_word_count_decision_spans_hold_the_end_only_for_an_upper_limit(ident, ends):
    ex = _example("instruction_following", ident)  # 0304: less than 35 words; 0310: at least 20
    r = ex.reference
    v = get_verifier("ifeval.word_count")
    relevant = v.relevant_spans(r, ex)
    assert len(relevant) > 5 and all(b <= len(r) for _, b in relevant)
    assert v.decision_spans(r, ex) == relevant + ([eos_span(r)] if ends else [])


def test_ifeval_ending_rule_per_instruction():
    from mrtpo_viz.tasks.ifeval import decision_spans

    r = "one two three"
    assert decision_spans("ifeval.sentence_count", r, {"num_sentences": 2, "relation": "less than"})[-1] == (13, 14)
    assert (13, 14) not in decision_spans("ifeval.sentence_count", r, {"num_sentences": 2, "relation": "at least"})
    assert decision_spans("ifeval.paragraph_count", r, {"num_paragraphs": 1}) == [(13, 14)]  # exactly: no *** yet
    assert decision_spans("ifeval.no_comma", r, {}) == []  # a forbidden character: the characters decide
    assert decision_spans("ifeval.quotation", '"hi"', {}) == [(0, 1), (3, 4), (4, 5)]


def test_slots_verifiers_have_no_decision_spans_of_their_own():
    slots = [get_verifier(f"slots.part{k}") for k in range(1, 5)]
    assert all(v.decision_spans_fn is None for v in slots)
