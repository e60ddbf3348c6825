"""ifeval.* verifiers: a table of pass, fail and edge cases per constraint; spans; arguments; the generator."""
import itertools

import pytest

from mrtpo_viz.tasks.base import Example
from mrtpo_viz.tasks.generators import instruction_following as gen
from mrtpo_viz.tasks import get_verifier, list_verifiers
from mrtpo_viz.tasks.ifeval import CONSTRAINTS, paragraphs, sentence_ends, words


def example(name: str, args: dict) -> Example:
    return Example(task="instruction_following", prompt="(prompt)",
                   meta={"topic": "rivers", "constraints": [{"name": name, "args": args}]},
                   verifiers=(f"ifeval.{name}",))


def score(name: str, args: dict, response: str) -> float:
    return get_verifier(f"ifeval.{name}").score(response, example(name, args))


def sliced(name: str, args: dict, response: str) -> list[str]:
    return [response[a:b] for a, b in get_verifier(f"ifeval.{name}").relevant_spans(response, example(name, args))]


CASES = [
    ("no_comma", {}, "Rivers are long.", 1), ("no_comma", {}, "Rivers, lakes.", 0),
    ("no_comma", {}, "Rivers\uff0c lakes.", 0), ("no_comma", {}, "", 0), ("no_comma", {}, " \n\t", 0),
    ("lowercase", {}, "rivers are long.", 1), ("lowercase", {}, "Rivers are long.", 0),
    ("lowercase", {}, "straße über 42", 1), ("lowercase", {}, "ärger Ärger", 0), ("lowercase", {}, "123 ...", 1),
    ("uppercase", {}, "RIVERS ARE LONG.", 1), ("uppercase", {}, "RIVERS are", 0), ("uppercase", {}, "STRAßE", 0),
    ("word_count", {"min": 3}, "one two three", 1), ("word_count", {"min": 3}, "one two", 0),
    ("word_count", {"max": 2}, "one two three", 0), ("word_count", {"min": 2, "max": 3}, "don't stop", 1),
    ("word_count", {"min": 2, "max": 2}, "well-known ... !!!", 1), ("word_count", {"max": 5}, "", 0),
    ("sentence_count", {"n": 2}, "One. Two!", 1), ("sentence_count", {"n": 2}, "One. Two", 0),
    ("sentence_count", {"n": 2}, "Wait... what?", 1), ("sentence_count", {"n": 2}, '"Hi." she said.', 1),
    ("sentence_count", {"n": 1}, "Version 3.5 is out.", 1), ("sentence_count", {"n": 1}, "Hm" + "." * 5000, 1),
    ("bullet_count", {"n": 2}, "* a\n* b", 1), ("bullet_count", {"n": 2}, "* a\n- b\nc", 1),
    ("bullet_count", {"n": 2}, "* a\n***\n* b", 1), ("bullet_count", {"n": 2}, "*a\n* b", 0),
    ("bullet_count", {"n": 2}, "  * a\n\t- b", 1), ("bullet_count", {"n": 2}, "* a\n* b\n* c", 0),
    ("paragraph_count", {"n": 2}, "A.\n***\nB.", 1), ("paragraph_count", {"n": 2}, "A.\n\nB.", 0),
    ("paragraph_count", {"n": 2}, "A.\n***\n\n***\nB.", 1), ("paragraph_count", {"n": 2}, "***\nA.\n *** \nB.", 1),
    ("paragraph_count", {"n": 2}, "A. *** B.", 0),
    ("keyword", {"word": "river", "min_count": 2}, "River and river.", 1),
    ("keyword", {"word": "river", "min_count": 2}, "rivers and river", 0),
    ("keyword", {"word": "river", "min_count": 1}, "riverbank", 0),
    ("keyword", {"word": "river"}, "A RIVER.", 1),
    ("forbidden_words", {"words": ["very", "just"]}, "Rivers are long.", 1),
    ("forbidden_words", {"words": ["very", "just"]}, "Very long.", 0),
    ("forbidden_words", {"words": ["very", "just"]}, "Justice is everywhere.", 1),
    ("starts_with", {"phrase": "Sure thing."}, "  Sure thing. Rivers.", 1),
    ("starts_with", {"phrase": "Sure thing."}, "sure thing. Rivers.", 0),
    ("ends_with", {"phrase": "That is all."}, "Rivers. That is all.\n", 1),
    ("ends_with", {"phrase": "That is all."}, "That is all. More.", 0),
    ("ends_with", {"phrase": "That is all."}, "That is all", 0),
    ("title", {}, "<<Rivers>>\nText.", 1), ("title", {}, "<<>> text", 0), ("title", {}, "<< >> text", 0),
    ("title", {}, "<<a\nb>>", 0), ("title", {}, "\u00abRivers\u00bb", 0), ("title", {}, "<<<Rivers>>>", 1),
    ("json_format", {}, '{"note": "x"}', 1), ("json_format", {}, '```json\n{"a": [1, {"b": {"c": 2}}]}\n```', 1),
    ("json_format", {}, '{"a": 1', 0), ("json_format", {}, "5", 0), ("json_format", {}, " [1, 2] \n", 1),
    ("json_format", {}, "[" * 100_000, 0), ("json_format", {}, 'Here: {"a": 1}', 0),
    ("postscript", {"marker": "P.S."}, "Hi.\n\nP.S. bye", 1), ("postscript", {"marker": "P.S."}, "Hi. P.S. bye", 0),
    ("postscript", {"marker": "P.S."}, "hi\np.s. bye", 1), ("postscript", {}, "Hi.\nP.S. bye", 1),
]


@pytest.mark.parametrize("name, args, response, expected", CASES)
def test_constraint_table(name, args, response, expected):
    assert score(name, args, response) == expected


def test_every_constraint_has_cases_and_a_verifier():
    assert {c[0] for c in CASES} == set(CONSTRAINTS)
    assert len(CONSTRAINTS) >= 12
    assert set(list_verifiers("instruction_following")) == {f"ifeval.{n}" for n in CONSTRAINTS}


def test_reasons_are_readable():
    v = get_verifier("ifeval.keyword")
    assert v.check("river", example("keyword", {"word": "river", "min_count": 2})).reason == \
        "'river' appears 1 time(s); need at least 2"
    assert get_verifier("ifeval.no_comma").check("a, b,, c", example("no_comma", {})).reason == "found 3 comma(s)"
    assert get_verifier("ifeval.word_count").check("a b", example("word_count", {"min": 3})).reason == \
        "2 words; need at least 3"
    assert get_verifier("ifeval.title").check("", example("title", {})).reason == "empty response"


@pytest.mark.parametrize("name, args, why", [
    ("keyword", {}, "'word'"), ("keyword", {"word": "river", "min_count": "2"}, "'min_count'"),
    ("word_count", {}, "'min' or 'max'"), ("word_count", {"min": True}, "integers"),
    ("sentence_count", {"n": None}, "'n'"), ("forbidden_words", {"words": "very"}, "'words'"),
    ("ends_with", {"phrase": "  "}, "'phrase'"), ("starts_with", {}, "'phrase'"), ("bullet_count", {}, "'n'"),
])
def test_missing_arguments_score_zero(name, args, why):
    ex = example(name, args)
    verdict = get_verifier(f"ifeval.{name}").check("Some text, with words.", ex)
    assert verdict.score == 0.0 and why in verdict.reason
    assert get_verifier(f"ifeval.{name}").relevant_spans("Some text.", ex) is None
    assert get_verifier(f"ifeval.{name}").info(ex).startswith("(unavailable")


@pytest.mark.parametrize("meta", [{}, {"constraints": "no_comma"}, {"constraints": [None, {"name": "lowercase"}]},
                                  {"constraints": [{"name": "no_comma", "args": []}]}])
def test_absent_constraint_scores_zero(meta):
    ex = Example(task="instruction_following", prompt="x", meta=meta)
    verdict = get_verifier("ifeval.no_comma").check("no commas here", ex)
    assert verdict.score == 0.0 and "no arguments for constraint 'no_comma'" in verdict.reason


VALID_ARGS = {"word_count": {"min": 1}, "sentence_count": {"n": 1}, "bullet_count": {"n": 1},
              "paragraph_count": {"n": 1}, "keyword": {"word": "a"}, "forbidden_words": {"words": ["a"]},
              "starts_with": {"phrase": "a"}, "ends_with": {"phrase": "a"}, "postscript": {"marker": "P.S."}}
HOSTILE = ["", "\x00\x07\x1b[2J", "\ud800\udfff", "🌊" * 1000, "a" * 100_000, "*" * 50_000 + "\n", "<<" * 20_000,
           "{" * 50_000, "P.S." * 10_000, "., " * 30_000, "." * 50_000 + "a", "a'" * 50_000, " " * 50_000 + "x"]


@pytest.mark.parametrize("name, response", [pytest.param(n, r, id=f"{n}-{i}")
                                            for n in CONSTRAINTS for i, r in enumerate(HOSTILE)])
def test_never_raises(name, response):
    ex = example(name, VALID_ARGS.get(name, {}))
    verifier = get_verifier(f"ifeval.{name}")
    assert verifier.score(response, ex) in (0.0, 1.0)
    assert isinstance(verifier.relevant_spans(response, ex), list)


@pytest.mark.parametrize("name, args, response, expected", [
    ("no_comma", {}, "a, b, c", [",", ","]), ("no_comma", {}, "a b c", []),
    ("lowercase", {}, "Rivers ARE long", ["R", "ARE"]), ("uppercase", {}, "ABc DEF", ["c"]),
    ("keyword", {"word": "river"}, "River, rivers and a river.", ["River", "river"]),
    ("forbidden_words", {"words": ["just", "very"]}, "Very good, just fine.", ["Very", "just"]),
    ("ends_with", {"phrase": "That is all."}, "Rivers. That is all.  \n", ["That is all."]),
    ("ends_with", {"phrase": "That is all."}, "Rivers are long", ["ers are long"]),
    ("starts_with", {"phrase": "Sure."}, "\n Sure. Rivers.", ["Sure."]),
    ("title", {}, "<<>> <<Rivers>>\nText.", ["<<Rivers>>"]),
    ("postscript", {"marker": "P.S."}, "Text.\n\n  P.S. See you.\n", ["P.S. See you."]),
    ("bullet_count", {"n": 2}, "* one\n- two\n***", ["*", "-"]),
    ("paragraph_count", {"n": 2}, "A.\n***\nB.", ["***"]),
    ("sentence_count", {"n": 2}, "One. Two?! Three", [".", "?!"]),
    ("word_count", {"max": 9}, "don't stop, go", ["don't", "stop", "go"]),
    ("json_format", {}, ' ```json\n {"a": 1}\n```', ["{", "}"]),
    ("json_format", {}, '{"a": 1,}', ["}"]),
])
def test_relevant_spans(name, args, response, expected):
    assert sliced(name, args, response) == expected


def test_text_units():
    assert len(words("It's a well-known fact: 3 rivers.")) == 7
    assert len(sentence_ends("Hi! Is it? Yes... e.g. this")) == 4
    assert paragraphs("A\n***\n\n***\nB\n") == ["A\n", "\nB\n"]


def test_information_names_the_arguments():
    info = get_verifier("ifeval.keyword").info(example("keyword", {"word": "river", "min_count": 2}))
    assert info == "The word 'river' must appear at least 2 times."
    info = get_verifier("ifeval.word_count").info(example("word_count", {"min": 20, "max": 40}))
    assert info == "The response must have between 20 and 40 words."
    assert "'That is all.'" in get_verifier("ifeval.ends_with").info(example("ends_with", {"phrase": "That is all."}))


def test_generate_is_deterministic_and_sized():
    a, b = gen.generate(50, seed=7), gen.generate(50, seed=7)
    assert len(a) == 50 and [e.to_dict() for e in a] == [e.to_dict() for e in b]
    assert [e.prompt for e in a] != [e.prompt for e in gen.generate(50, seed=8)]
    assert len({e.prompt for e in gen.generate(400, seed=0)}) == 400  # the sample file: no prompt in both splits
    with pytest.raises(ValueError):
        gen.generate(-1)


def test_generated_examples_follow_their_constraints():
    for ex in gen.generate(300, seed=0):
        names = [c["name"] for c in ex.meta["constraints"]]
        assert 2 <= len(names) <= 4 and ex.verifiers == tuple(f"ifeval.{n}" for n in names)
        assert all(frozenset(p) not in gen.CONFLICTS for p in itertools.combinations(names, 2))
        assert ex.prompt.startswith(f"Write a short note about {ex.meta['topic']}.")
        assert len(ex.prompt.split()) < 60 and 15 <= len(words(ex.reference)) <= 75
        for name in ex.verifiers:
            assert get_verifier(name).check(ex.reference, ex).score == 1.0, (name, ex.reference)


def test_with_args_adds_the_constraint_so_a_free_prompt_scores():
    free = Example(task="instruction_following", prompt="Describe the sea.")
    low = get_verifier("ifeval.lowercase")
    assert low.args(free) == {} and low.score("the sea is calm", free) == 0.0  # no entry: cannot score
    ex = low.with_args(free, {})
    assert ex.meta["constraints"] == [{"name": "lowercase", "args": {}}] and free.meta == {}
    assert low.score("the sea is calm", ex) == 1.0 and low.score("The sea", ex) == 0.0
    assert not low.info(ex).startswith("(unavailable")
    comma = get_verifier("ifeval.no_comma")
    both = comma.with_args(ex, {})  # a second constraint joins the first
    assert [c["name"] for c in both.meta["constraints"]] == ["lowercase", "no_comma"]
    assert comma.score("the sea is calm", both) == 1.0 and low.score("the sea is calm", both) == 1.0
    again = comma.with_args(both, {})  # not duplicated
    assert [c["name"] for c in again.meta["constraints"]] == ["lowercase", "no_comma"]
    from mrtpo_viz.tasks import load_examples

    kw = get_verifier("ifeval.keyword")
    ex = next(e for e in load_examples("instruction_following", "test") if "ifeval.keyword" in e.verifiers)
    kept = kw.with_args(ex, {})  # an example's own values stay (merged, as the default merges into meta)
    assert kw.args(ex) and kw.args(kept) == kw.args(ex) and kw.score(ex.reference, kept) == 1.0
