"""Agreement with Google's official IFEval checkers, run from the installed lm-eval 0.4.13 (``requirements-ref.txt``).

On the generated adversarial set (>= 25 cases per instruction id; strict and loose verdicts and the descriptions), on
IFEval-format rows, and for the text units against nltk itself. Prints the per-instruction table and writes it to a
temporary folder (``python benchmarks/reference_agreement.py`` writes the results file). Skipped when lm-eval is not
installed, except under ``MRTPO_REQUIRE_REFERENCES=1`` (CI), where that is a failure.
"""

import os
import random
import re

import ifeval_adversarial as adversarial
import ifeval_adversarial_unicode as unicode_block
import ifeval_reference as reference
import pytest

from mrtpo_viz.tasks.ifeval import OFFICIAL_IDS, check, describe, evaluate
from mrtpo_viz.tasks.ifeval import punkt
from mrtpo_viz.tasks.ifeval.row_format import example_from_row
from mrtpo_viz.tasks.ifeval.text_units import count_capital_words, count_sentences, count_words
from tests.tasks.ifeval.test_row_format import ROWS

RESPONSES = [
    "the end. see you soon.",
    "First part, here.\n\nHowever, no.\nP.S. bye",
    "*one* *two* " + "word " * 130,
    "",
    "HELLO, WORLD.\n\nhowever it goes",
    "Sauna on suomalainen kylpy, jossa istutaan kuumassa.",
]


@pytest.fixture(scope="module")
def official(tmp_path_factory):
    try:
        return reference.load_official(tmp_path_factory.mktemp("nltk_data"))
    except ImportError as e:
        if os.environ.get("MRTPO_REQUIRE_REFERENCES") == "1":
            pytest.fail(f"the reference checkers must be installed here: {e}")
        pytest.skip(f"official IFEval checkers unavailable: {e}")


def test_agreement_per_instruction(official, tmp_path, capsys):
    assert official.version == reference.LM_EVAL_VERSION
    assert punkt.load_model().source != "embedded", "exact sentence counts need the English Punkt model"
    assert set(official.registry.INSTRUCTION_DICT) == set(OFFICIAL_IDS)  # the 25 ids, no more, no fewer
    cases = adversarial.generate(seed=0)
    stats, differ = reference.compare(official, cases)
    table = reference.table(stats)
    (tmp_path / "reference_agreement_ifeval.md").write_text(table + "\n", encoding="utf-8")
    with capsys.disabled():
        print(f"\nIFEval agreement with lm-eval {official.version} ({len(cases)} adversarial cases)\n{table}")
    assert len(stats) == 25 and all(st["n"] >= adversarial.MIN_PER_INSTRUCTION for st in stats.values())
    unexplained = [d for d in differ if (d.id, d.label) not in reference.KNOWN_DIFFERENCES]
    assert unexplained == []
    assert sum(st["strict"] for st in stats.values()) == sum(st["n"] for st in stats.values()) == len(cases)


def test_agreement_on_the_multilingual_block(official, capsys):
    """Every official id on the multilingual and Unicode block (10 scripts, superscripts, circled digits,
    fractions, U+001C..U+001F, Unicode spaces, kwargs in the same characters, counts of 0): 100% per instruction,
    strict, loose and descriptions. Main disagreed on 59 of its 1,194 cases without a 0 (word counts, sentence
    separators, pattern kwargs) and refused the others."""
    cases = unicode_block.block()
    stats, differ = reference.compare(official, cases)
    with capsys.disabled():
        print(f"\nIFEval agreement on the multilingual block ({len(cases)} cases)\n{reference.table(stats)}")
    assert set(stats) == set(OFFICIAL_IDS) and min(st["n"] for st in stats.values()) >= 26
    assert [(d.id, d.label) for d in differ] == []
    for iid, st in stats.items():
        assert st["strict"] == st["loose"] == st["description"] == st["n"], iid


def test_ifeval_rows_agree(official):
    for row in ROWS:
        ex = example_from_row(row)
        ids = [c["id"] for c in ex.meta["constraints"]]
        kwargs = [c["kwargs"] for c in ex.meta["constraints"]]
        if any(
            not kw and official.registry.INSTRUCTION_DICT[i]("x").get_instruction_args_keys()
            for i, kw in zip(ids, kwargs)
        ):
            continue  # a missing kwarg: the official class draws a random value (a documented difference)
        for response in RESPONSES:
            strict, loose = reference.official_verdicts(official, row["prompt"], ids, kwargs, response)
            assert [ok for ok, _ in evaluate(ids, kwargs, response)] == strict
            assert [ok for ok, _ in evaluate(ids, kwargs, response, loose=True)] == loose


def _fuzz(rng: random.Random) -> str:
    return "".join(rng.choice(adversarial.PIECES) + rng.choice(["", " ", " ", "\n"]) for _ in range(rng.randint(1, 25)))


def test_text_units_match_nltk(official, capsys):
    """Our Punkt splitter (with the model, and the embedded fallback) and capital-word count against nltk."""
    import nltk
    from nltk.tokenize import PunktTokenizer

    nltk_punkt = PunktTokenizer("english")
    rng = random.Random(1)
    texts = [_fuzz(rng) for _ in range(2000)] + sorted(
        {c.response for c in adversarial.generate(seed=0)} | {c.response for c in unicode_block.block()}
    )
    full, lists = punkt.load_model(), punkt.load_model("embedded")
    same_spans = sum(punkt.sentence_spans(t, full) == list(nltk_punkt.span_tokenize(t)) for t in texts)
    same_lists = sum(count_sentences(t, lists) == len(nltk_punkt.tokenize(t)) for t in texts)
    same_caps = sum(count_capital_words(t) == sum(w.isupper() for w in nltk.word_tokenize(t)) for t in texts)
    words = nltk.tokenize.RegexpTokenizer(r"\w+")  # the official count_words
    assert [count_words(t) for t in texts] == [len(words.tokenize(t)) for t in texts]
    with capsys.disabled():
        print(
            f"\nvs nltk on {len(texts)} strings: sentence spans ({full.source.split(':')[0]}) {same_spans}; "
            f"sentence counts with the embedded lists only {same_lists} ({100 * same_lists / len(texts):.1f}%); "
            f"capital-word counts {same_caps}"
        )
    assert same_spans == same_caps == len(texts)
    assert same_lists >= 0.9 * len(texts)  # the documented fallback: measured 96% on this fuzz


def test_documented_differences(official):
    """Where the official code raises, hangs or draws random values, ours gives a verdict or asks for input."""
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(RecursionError):
        reference.official_verdicts(official, "", ["detectable_format:json_format"], [{}], deep)
    assert check("detectable_format:json_format", deep, {})[0] is False
    with pytest.raises(re.error):  # the official checker uses the keyword as a regular expression
        reference.official_verdicts(official, "", ["keywords:existence"], [{"keywords": ["f(x"]}], "f(x)")
    with pytest.raises(AttributeError):  # a response that is not a string
        reference.official_verdicts(official, "", ["punctuation:no_comma"], [{}], None)
    assert check("punctuation:no_comma", None, {}) == (False, "the response is not a string")
    # a missing threshold: the official class draws one at random (random.randint), so two runs may disagree
    inst = official.registry.INSTRUCTION_DICT["detectable_format:number_bullet_lists"]("x")
    random.seed(0)
    drawn = inst.build_description()
    assert "bullet points" in drawn and "Your answer must contain exactly" in drawn
    with pytest.raises(ValueError, match="missing kwarg"):
        describe("detectable_format:number_bullet_lists", {})


def test_the_generator_never_combines_what_ifeval_calls_conflicting(official):
    from mrtpo_viz.tasks.generators.instruction_following import CONFLICTS, ID

    registry = official.registry
    conflicts = registry.conflict_make(registry.INSTRUCTION_CONFLICTS)
    by_id = {v: k for k, v in ID.items()}
    official_pairs = {
        frozenset((by_id[a], by_id[b]))
        for a, cs in conflicts.items()
        if a in by_id
        for b in cs
        if b in by_id and a != b
    }
    assert official_pairs <= CONFLICTS and len(official_pairs) == 13
