"""A/B over a split (:mod:`mrtpo_viz.relevance.ab_split`): on the bundled policy and the held-out
instruction-following examples it gives the numbers of ``benchmarks/ab_compare.py`` (two separate replays per case)
from one batched forward per case, to float rounding (1e-5; the benchmark reports 3 decimals); wordings fill in per
example; the summary's interval and share are right on hand-made rows."""

import math
import sys
import time

import pytest

from mrtpo_viz.relevance import ab_split
from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR
from tests.apphelpers import REPO

N = 12  # examples; the benchmark's default is 20 (same rules, more cases)


@pytest.fixture(scope="module")
def bundled():
    if not (BUNDLED_POLICY_DIR / "config.json").is_file():
        pytest.skip("the bundled policy's weights are absent")
    from mrtpo_viz.policy import load_policy

    return load_policy("tiny-mrtpo")


def test_a_split_agrees_with_the_ab_compare_benchmark(bundled):
    sys.path.insert(0, str(REPO / "benchmarks"))
    import ab_compare
    from mrtpo_viz.tasks.example_sources import load_examples

    want = ab_compare.compare_rows("tiny-mrtpo", N)
    cases = ab_split.split_cases(load_examples("instruction_following", "test"), N)
    assert [(c.example.id, c.verifier, c.info_a, c.info_b) for c in cases] == [
        (c[0].id, c[1], c[2], c[3]) for c in ab_compare.cases(N)
    ]
    start = time.perf_counter()
    got = list(ab_split.compare_split(bundled, cases))
    per_example = (time.perf_counter() - start) / N
    print(f"A/B over {N} examples ({len(got)} cases): {per_example:.3f} s per example")
    assert len(got) == len(want) >= N  # every example has at least one verifier with spans
    for g, w in zip(got, want):
        assert (g.example, g.verifier, g.tokens) == (w["example"], w["verifier"], w["tokens"])
        for key in ("span_token_share", "span_mass_a", "span_mass_b", "mean_a", "mean_b", "max_abs_b_minus_a"):
            # one batch of 3 branches instead of two of 2: float rounding only (measured up to ~2e-6)
            assert getattr(g, key) == pytest.approx(w[key], abs=1e-5), key
        for key in ("effective_tokens_a", "effective_tokens_b"):
            assert getattr(g, key) == pytest.approx(w[key], rel=1e-5), key
    assert len({round(g.span_mass_a - g.span_mass_b, 6) for g in got}) > len(got) // 2  # not one repeated number
    summary = ab_split.summarize(got)
    assert summary.examples == len({g.example for g in got}) and summary.cases == len(got)
    a_beats = sum(w["span_mass_a"] > w["span_mass_b"] for w in want)
    assert summary.b_beats_a == pytest.approx((len(want) - a_beats) / len(want))  # no ties on real numbers


def test_wordings_fill_in_per_example_and_unfit_verifiers_are_left_out(bundled):
    from mrtpo_viz.tasks import get_verifier
    from mrtpo_viz.tasks.example_sources import load_examples

    examples = load_examples("instruction_following", "test")
    name = "ifeval.title"
    cases = ab_split.split_cases(examples, 40, "{own}", "{own} Use a title.", verifiers=[name])
    assert cases and all(c.verifier == name for c in cases)
    for c in cases:
        own = get_verifier(name).info(c.example)
        assert c.info_a == own and c.info_b == own + " Use a title."
        assert name in c.example.verifiers  # an example without the constraint is left out
    assert ab_split.split_cases(examples, 40, "same", "same") == []  # A equal to B: nothing to compare
    row, rel_a, rel_b = ab_split.compare_case(bundled, cases[0])
    assert rel_a.infos[name] == cases[0].info_a and rel_b.infos[name] == cases[0].info_b
    assert row.max_abs_b_minus_a > 0 and row.seconds > 0


def _row(a: float, b: float, example: str = "x", seconds: float = 1.0) -> ab_split.ABRow:
    nums = {f"{m}_{ab}": 0.0 for m in ab_split.MEASURES for ab in "ab"}
    nums.update(span_mass_a=a, span_mass_b=b)
    return ab_split.ABRow(example, "v", 10, 0.3, **nums, max_abs_b_minus_a=0.0, seconds=seconds)


def test_the_summary_is_a_paired_t_interval_and_a_share():
    rows = [_row(0.2, 0.3, "e1"), _row(0.4, 0.3, "e1", 3.0), _row(0.1, 0.4, "e2"), _row(0.5, 0.6, "e3")]
    s = ab_split.summarize(rows)
    d = [0.1, -0.1, 0.3, 0.1]
    mean = sum(d) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 3)
    assert s.mean_difference == pytest.approx(0.1)
    assert (s.lo, s.hi) == pytest.approx((mean - 3.182 * sd / 2, mean + 3.182 * sd / 2))  # t(0.975, 3) = 3.182
    assert s.b_beats_a == 0.75 and s.cases == 4 and s.examples == 3
    assert s.seconds_per_example == pytest.approx(6.0 / 3)
    assert [r.difference for r in ab_split.sorted_rows(rows)] == pytest.approx([-0.1, 0.1, 0.1, 0.3])
    assert ab_split.summarize([]) is None
    assert math.isnan(ab_split.summarize(rows[:1]).lo)


def test_the_t_quantile_is_within_0_002_of_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in list(range(1, 60)) + [75, 99, 150, 199, 500]:
        assert ab_split.t975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=2e-3), df
