"""The real-model arm's code path (studies/real) on the bundled policy: its prompt pools, the pilot's pass-rate
rule, two training steps of each arm with the greedy held-out evaluation, and the plan's run order. The real model
itself trains only by hand (``python studies/real/real.py run``)."""

import math
import sys
from pathlib import Path

import pytest

STUDY = Path(__file__).resolve().parents[1] / "studies" / "real"
sys.path.insert(0, str(STUDY))

import _real_runs as runs  # noqa: E402
import _real_task as task  # noqa: E402
import _real_pilot as pilot  # noqa: E402
import real  # noqa: E402


def test_pools_have_two_or_three_allowed_constraints_and_the_heldout_set_is_disjoint():
    kinds = ["forbidden_words", "keyword", "no_comma", "ends_with", "title", "word_count"]
    train = task.draw_pool("train", 40, kinds)
    heldout = task.draw_pool("heldout", 20, kinds, exclude=train)
    assert len(train) == 40 and len(heldout) == 20
    for ex in train + heldout:
        ks = [task.kind(v) for v in ex.verifiers]
        assert 2 <= len(ks) <= 3 and set(ks) <= set(kinds)
    assert not {e.prompt for e in train} & {e.prompt for e in heldout}
    assert [e.prompt for e in task.draw_pool("train", 40, kinds)] == [e.prompt for e in train]  # deterministic
    assert task.draw_pool("train", 10, kinds)[0].prompt == train[0].prompt  # a longer pool starts the same


def test_pass_rates_and_the_kept_kinds():
    samples = [
        {"kinds": ["a", "b"], "passed": [1, 0]},
        {"kinds": ["a", "c"], "passed": [1, 1]},
        {"kinds": ["b", "c"], "passed": [0, 0]},
    ] * 6
    rates = task.pass_rates(samples)
    assert rates == {
        "a": {"n": 12, "passed": 12, "rate": 1.0},
        "b": {"n": 12, "passed": 0, "rate": 0.0},
        "c": {"n": 12, "passed": 6, "rate": 0.5},
    }
    assert task.kept_kinds(rates) == ["c"]
    assert task.kept_kinds(rates, min_n=13) == []


def test_the_pilot_summary_reads_truncation_and_rates_off_prefixes():
    line = {
        "i": 0,
        "kinds": ["no_comma"],
        "cpu_s": 2.0,
        "samples": [
            {"length": 300, "passed": {str(b): [int(b >= 192)] for b in pilot.BUDGETS}},
            {"length": 100, "passed": {str(b): [1] for b in pilot.BUDGETS}},
        ],
    }
    out = pilot.pilot_summary([line] * 12)
    assert out["budgets"]["128"]["truncated"] == 0.5 and out["budgets"]["256"]["truncated"] == 0.5
    assert out["budgets"]["128"]["rates"]["no_comma"]["rate"] == 0.5
    assert out["budgets"]["192"]["rates"]["no_comma"]["rate"] == 1.0
    assert out["budgets"]["128"]["kept"] == ["no_comma"] and out["budgets"]["192"]["kept"] == []


@pytest.mark.parametrize("method", ["gdpo", "mrtpo"])
def test_two_steps_of_each_arm_on_the_bundled_policy(method):
    kinds = ["forbidden_words", "keyword", "no_comma", "ends_with", "title", "word_count", "postscript"]
    train = task.draw_pool("train", 8, kinds)
    heldout = task.draw_pool("heldout", 6, kinds, exclude=train)
    settings = {"steps": 2, "prompts_per_step": 2, "group_size": 2, "max_new_tokens": 24, "temperature": 0.7}
    rec = runs.train_one(method, 5, 1e-3, settings, train, heldout, eval_at=[1, 2], model="tiny-mrtpo", log=str)
    assert [r["step"] for r in rec["rows"]] == [0, 1] and rec["diverged"] is None
    for row in rec["rows"]:
        assert set(row["rewards"]) <= {f"ifeval.{k}" for k in kinds} and row["rewards"]
        assert all(0.0 <= v <= 1.0 for v in row["rewards"].values())
        assert 0.0 <= row["truncated"] <= 1.0 and math.isfinite(row["grad_norm"])
    pairs = sum(len(e.verifiers) for e in heldout)
    for at in ("1", "2"):
        h = rec["heldout"][at]
        assert h["pairs"] == pairs and 0.0 <= h["pass_rate"] <= 1.0
        assert set(h["by_kind"]) <= set(kinds)


def test_heldout_pass_is_the_same_batched_or_one_by_one():
    from mrtpo_viz.policy import load_policy

    policy = load_policy("tiny-mrtpo")
    heldout = task.draw_pool("heldout", 8)
    one = runs.heldout_pass(policy, heldout, 32, batch=1)
    batched = runs.heldout_pass(policy, heldout, 32, batch=8)
    assert one == batched  # left padding with its attention mask leaves greedy decoding unchanged
    assert one["pairs"] == sum(len(e.verifiers) for e in heldout)


def test_the_schedule_is_seed_major_pairs():
    plan = {"seeds": [300, 301], "arms": {"gdpo": {}, "mrtpo": {}}}
    assert real.schedule(plan) == [("gdpo", 300), ("mrtpo", 300), ("gdpo", 301), ("mrtpo", 301)]


def _record(method, seed, last, half, rewards):
    times = {"sample": 4.0, "replay": 3.0 * (method == "mrtpo"), "update": 2.0}
    rows = [{"mean_reward": r, "truncated": 0.01, "cpu_s": 10.0 + (method == "mrtpo"), "times": times} for r in rewards]
    if seed == 1:  # one step paused for minutes (of 8 per arm): the median ignores it
        rows[0] = rows[0] | {"times": times | {"sample": 400.0}}
    held = {"1": {"pass_rate": half, "truncated": 0.0, "by_kind": {"a": half}}}
    held["2"] = {"pass_rate": last, "truncated": 0.05, "by_kind": {"a": last}}
    return {"method": method, "seed": seed, "rows": rows, "heldout": held, "wall_s": 60.0, "cpu_s": 3600.0}


def test_the_report_pairs_by_seed_and_tests_one_sided_as_scipy_does():
    import numpy as np
    from scipy import stats as scipy_stats

    import _real_report

    stats = real._stats()
    plan = {
        "seeds": [1, 2, 3, 4],
        "arms": {"gdpo": {}, "mrtpo": {}},
        "settings": {"steps": 2},
        "primary": {"minimum_detectable": {"value": 0.05, "sd_difference_assumed": 0.04}},
    }
    gd = [0.50, 0.40, 0.45, 0.52]
    mr = [0.56, 0.41, 0.50, 0.51]
    records = [_record("gdpo", s, x, 0.4, [0.2, 0.4]) for s, x in zip(plan["seeds"], gd)]
    records += [_record("mrtpo", s, x, 0.42, [0.3, 0.5]) for s, x in zip(plan["seeds"], mr)]
    s = _real_report.summarize(plan, records, stats, start={"pass_rate": 0.3, "by_kind": {"a": 0.3}})
    d = np.array(mr) - np.array(gd)
    assert s["primary"]["mean"] == pytest.approx(d.mean())
    ref = scipy_stats.ttest_rel(mr, gd, alternative="greater")
    assert s["primary"]["p_greater"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert s["established"] == bool(ref.pvalue < 0.05)
    assert s["auc"]["mean"] == pytest.approx(0.1)  # (0.3 + 0.5) / 2 - (0.2 + 0.4) / 2, every seed
    assert s["heldout_half"]["mean"] == pytest.approx(0.02)
    assert s["by_kind"]["a"]["per_seed"] == pytest.approx(list(d))  # the synthetic records' one type is the pass rate
    assert s["arms"]["mrtpo"]["cpu_s_per_step"] == 11.0 and s["cpu_h"] == pytest.approx(8.0)
    assert s["arms"]["mrtpo"]["wall_s_per_step"] == 9.0 and s["arms"]["gdpo"]["wall_s_per_step"] == 6.0
    assert s["arms"]["mrtpo"]["phase_s"] == {"replay": 3.0, "sample": 4.0, "update": 2.0}
    md = _real_report.markdown(
        plan
        | {
            "lr": 1e-5,
            "task": {"heldout_prompts": 96},
            "settings": {"steps": 2, "prompts_per_step": 2, "group_size": 4, "temperature": 0.7, "max_new_tokens": 256},
        },
        s,
    )
    assert f"{d.mean():+.3f}" in md and "not established" in md
    # achieved power from the main runs' own sd: one-sided at 0.05 is P(T > t_0.95) under the noncentral t (the
    # lower tail the two-sided formula adds is below 1e-3 here)
    a, sd = s["achieved"], d.std(ddof=1)
    assert a["sd"] == pytest.approx(sd) and a["n"] == 4
    crit = scipy_stats.t.ppf(0.95, 3)
    assert a["power_at_planned"] == pytest.approx(scipy_stats.nct.sf(crit, 3, 0.05 * 2 / sd), abs=2e-3)
    assert scipy_stats.nct.sf(crit, 3, a["detectable"] * 2 / sd) == pytest.approx(0.8, abs=2e-3)
    assert f"detects {a['detectable']:.3f} at power 0.8" in md and "assumed 0.040" in md
    assert "| wall s per step (median; replay, sample, update) | | 6 (0.0, 4.0, 2.0) | 9 (3.0, 4.0, 2.0) | |" in md
    one_missing = [r for r in records if not (r["method"] == "mrtpo" and r["seed"] == 4)]
    s3 = _real_report.summarize(plan, one_missing, stats)
    assert s3["seeds"] == [1, 2, 3] and s3["missing"] == ["mrtpo-s4"] and s3["established"] is False


def test_the_learning_rate_rule_takes_the_largest_stable_rate():
    def run(lr, end, diverged=None, method="gdpo"):
        return {
            "method": method,
            "lr": lr,
            "settings": {"steps": 10},
            "heldout": {"10": {"pass_rate": end}},
            "diverged": diverged,
        }

    assert pilot.choose_rate(0.40, [run(1e-5, 0.41), run(3e-5, 0.39), run(1e-4, 0.30)]) == 3e-5
    assert pilot.choose_rate(0.40, [run(1e-5, 0.41), run(3e-5, 0.45), run(3e-5, 0.37)]) == 1e-5  # every seed
    assert pilot.choose_rate(0.40, [run(1e-4, 0.5, diverged={"step": 3})]) is None
    assert pilot.choose_rate(0.40, [run(1e-4, 0.5, method="mrtpo"), run(1e-5, 0.40)]) == 1e-5  # GDPO decides


def test_the_committed_plan_follows_from_the_committed_pilots():
    """The plan's rate and minimum detectable difference recomputed from the pilot files it names; the start
    policy's file beside the rate pilot's runs is not a run."""
    import json

    plan = json.loads(real.PLAN.read_text())
    budget = str(plan["settings"]["max_new_tokens"])
    lr_runs = real.rate_pilot_runs(budget)
    assert sorted((r["lr"], r["seed"]) for r in lr_runs) == [(3e-5, 900), (3e-5, 901), (1e-4, 900)]
    start = json.loads((pilot.PILOT_LR / f"start-b{budget}.json").read_text())["pass_rate"]
    assert pilot.choose_rate(start, lr_runs) == plan["lr"] == 3e-5
    ends = [r["heldout"]["10"]["pass_rate"] for r in lr_runs if r["lr"] == plan["lr"]]
    sd = math.sqrt(sum((e - sum(ends) / 2) ** 2 for e in ends))  # two values: ddof 1
    assert plan["primary"]["minimum_detectable"]["sd_runs"] == pytest.approx(sd, abs=1e-4)
    assert plan["primary"]["minimum_detectable"]["value"] == pytest.approx(0.0502, abs=1e-4)


def test_the_plan_cannot_be_rewritten_once_a_main_run_exists():
    assert any(real.RUNS.glob("*.json"))
    with pytest.raises(SystemExit, match="already holds main runs: the plan precedes them"):
        real.main(["plan", "--max-new-tokens", "192", "--lr", "3e-5", "--steps", "24", "--budget-note", "x"])


def test_the_report_figure_draws_each_seed_and_the_mean(tmp_path):
    pytest.importorskip("matplotlib")  # not a dependency: the study's figure needs it (docs/study.md, Reproduce)
    import _real_report

    plan = {"seeds": [1, 2], "arms": {"gdpo": {}, "mrtpo": {}}, "settings": {"steps": 2}}
    records = [_record(m, s, 0.5, 0.45, [0.2, 0.4]) for m in ("gdpo", "mrtpo") for s in (1, 2)]
    out = _real_report.figure(plan, records, {"pass_rate": 0.586}, tmp_path / "real.png")
    assert out == tmp_path / "real.png" and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
