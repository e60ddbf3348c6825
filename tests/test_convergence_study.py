"""The convergence study (benchmarks/convergence.py and its helpers): statistics with known answers on synthetic
data, the power arithmetic against a published value and a simulation, the report on synthetic runs, and that a
stopped study continues to the same rows as one uninterrupted sitting."""

import json
import math
import sys

import numpy as np
import pandas as pd
import pytest

from tests.apphelpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import _convergence_power as power  # noqa: E402
import _convergence_report as report  # noqa: E402
import _convergence_runs as runs  # noqa: E402
import _convergence_stats as st  # noqa: E402

VARIANTS = ["grpo", "gdpo", "mrtpo", "mrtpo:others", "mrtpo:oracle", "entropy"]


# --- per-run outcomes -----------------------------------------------------------------------------------------------


def test_trailing_means_and_steps_to_threshold():
    curve = [0.0, 0.2, 0.4, 0.6, 0.8]
    assert st.trailing_means(curve, 2).tolist() == pytest.approx([0.1, 0.3, 0.5, 0.7])
    # the window ending at step 4 (1-based) is the first whose mean (0.5) reaches 0.45
    assert st.steps_to_threshold(curve, 0.45, 2) == (4, True)
    assert st.steps_to_threshold(curve, 0.1, 2) == (2, True)  # a full window is needed: never before step 2
    # a run that never reaches it is censored one step past its horizon
    assert st.steps_to_threshold(curve, 0.9, 2) == (6, False)


def test_threshold_is_half_way_to_the_best_final_and_undefined_without_gain():
    out = pd.DataFrame(
        {
            "variant": ["a", "a", "b", "b"],
            "seed": [0, 1, 0, 1],
            "start": [0.2, 0.2, 0.2, 0.2],
            "final": [0.4, 0.6, 0.3, 0.3],
        }
    )
    assert st.arm_threshold(out) == pytest.approx(0.2 + 0.5 * (0.5 - 0.2))
    assert st.arm_threshold(out.assign(final=0.205)) is None


# --- paired intervals and the oracle share ---------------------------------------------------------------------------


def test_paired_bootstrap_interval_covers_the_true_difference():
    rng = np.random.default_rng(3)
    d = 0.1 + rng.normal(0, 0.05, 30)
    p = st.paired(d)
    assert p["lo"] < 0.1 < p["hi"] and p["lo"] > 0 and st.detected(p)
    assert p["t_lo"] < p["lo"] < p["hi"] < p["t_hi"]  # the t interval is the wider at n = 30 too, slightly
    # coverage over 300 synthetic studies of 20 seeds: close to 95% (binomial sd 1.3%)
    cover_b = cover_t = 0
    for i in range(300):
        x = 0.3 + rng.normal(0, 1, 20)
        lo, hi = st.bootstrap_ci(x, n_boot=2000, seed=i)
        cover_b += lo <= 0.3 <= hi
        lo, hi = st.t_ci(x)
        cover_t += lo <= 0.3 <= hi
    assert 0.88 <= cover_b / 300 <= 0.97 and 0.91 <= cover_t / 300 <= 0.99


def test_no_difference_is_not_detected_and_one_seed_has_no_interval():
    rng = np.random.default_rng(0)
    assert not st.detected(st.paired(rng.normal(0, 0.05, 8) - 0.0))
    one = st.paired([0.2])
    assert one["n"] == 1 and math.isnan(one["lo"]) and not st.detected(one)


def test_oracle_share_recovers_a_known_share_and_is_undefined_without_headroom():
    rng = np.random.default_rng(1)
    d_oracle = 0.2 + rng.normal(0, 0.02, 12)
    d_mrtpo = 0.5 * d_oracle + rng.normal(0, 0.01, 12)
    s = st.oracle_share(d_mrtpo, d_oracle)
    assert s["defined"] and s["lo"] < 0.5 < s["hi"] and s["share"] == pytest.approx(0.5, abs=0.03)
    flat = st.oracle_share(d_mrtpo, rng.normal(0, 0.05, 12))
    assert not flat["defined"] and math.isnan(flat["share"]) and "no headroom" in flat["why"]
    worse = st.oracle_share(d_mrtpo, -d_oracle)  # perfect labels hurt: no headroom either
    assert not worse["defined"]


# --- power -----------------------------------------------------------------------------------------------------------


def test_seeds_for_power_matches_the_published_paired_t_value():
    # one-sample / paired t, d = 0.5, two-sided alpha 0.05, 80% power: n = 33.37 (Cohen 1988; G*Power) -> 34
    assert st.seeds_for_power(0.5, 1.0) == 34
    assert st.seeds_for_power(0.05, 0.1) == 34  # only the ratio matters
    assert st.power_paired(34, 0.5, 1.0) == pytest.approx(0.808, abs=0.003)
    assert st.power_paired(33, 0.5, 1.0) < 0.8


def test_power_agrees_with_a_simulation_of_paired_t_tests():
    from scipy import stats

    rng = np.random.default_rng(7)
    n, sd, effect, reps = 8, 0.06, 0.05, 20_000
    d = rng.normal(effect, sd, (reps, n))
    t = d.mean(1) / (d.std(1, ddof=1) / math.sqrt(n))
    simulated = float((np.abs(t) > stats.t.ppf(0.975, n - 1)).mean())
    assert st.power_paired(n, effect, sd) == pytest.approx(simulated, abs=0.012)  # 3 binomial sd at 20,000
    mde = st.detectable(n, sd)
    assert st.power_paired(n, mde, sd) == pytest.approx(0.8, abs=1e-3)


def test_pooled_sd_and_affordable_seeds():
    sd, df = power.pooled_sd([np.array([1.0, 3.0]), np.array([0.0, 2.0, 4.0])])
    assert df == 3 and sd == pytest.approx(math.sqrt((2 + 8) / 3))
    # every arm gets 5 seeds first (5 x 0.125 h + 5 x 1 h); the rest goes where need / seeds is largest
    costs = {"a": 450.0, "b": 3600.0}
    seeds = power.affordable_seeds({"a": {"seeds_needed": 40}, "b": {"seeds_needed": 6}}, costs, budget_cpu_h=8.0)
    assert seeds == {"a": 5 + 19, "b": 5}  # 2.375 h left buy 19 seeds of a; a's need stays the larger
    seeds = power.affordable_seeds({"a": {"seeds_needed": 7}, "b": {"seeds_needed": 6}}, costs, budget_cpu_h=8.0)
    assert seeds == {"a": 7, "b": 6}  # never past what 80% power needs
    # a study under way keeps the seeds it has run (16 of a, spent: 2 h), then the rest is dealt as before
    seeds = power.affordable_seeds(
        {"a": {"seeds_needed": 40}, "b": {"seeds_needed": 12}}, costs, budget_cpu_h=8.0, floor={"a": 16}
    )
    assert seeds == {"a": 16 + 8, "b": 5}  # 2 h + 5 h for b's minimum leave 1 h: 8 seeds of a (40/16 > 12/5)


# --- the report on synthetic runs with known effects ----------------------------------------------------------------

EFFECTS = {"grpo": 0.0, "gdpo": 0.0, "mrtpo": 0.05, "mrtpo:others": 0.05, "mrtpo:oracle": 0.10, "entropy": -0.2}


def synthetic_rows(arm: str, seeds: int, steps: int = 20, noise: float = 0.01, effects=EFFECTS) -> pd.DataFrame:
    """Reward curves rising from 0.3 by 0.3 plus each variant's effect (from the middle on) and small noise."""
    rng = np.random.default_rng(len(arm))
    out = []
    for s in range(seeds):
        seed_shift = rng.normal(0, 0.03)
        for v in VARIANTS:
            for t in range(steps):
                r = 0.3 + 0.3 * t / steps + (effects[v] if t >= steps // 2 else 0) + seed_shift + rng.normal(0, noise)
                out.append({"arm": arm, "variant": v, "seed": s, "step": t, "reward/mean": r, "all_pass": r / 2})
    return pd.DataFrame(out)


def synthetic_plan(seeds=6, steps=20):
    arm = dict(
        task="tool_calling",
        checkpoint="tiny-mrtpo",
        seeds=seeds,
        steps=steps,
        prompts_per_step=2,
        group_size=4,
        max_new_tokens=8,
        lr=1e-3,
        window=5,
        save_every=0,
    )
    return {
        "study": "synthetic",
        "variants": VARIANTS,
        "arms": [dict(arm, key="tool_calling"), dict(arm, key="text_to_sql", task="text_to_sql")],
    }


def test_report_finds_the_known_effects_share_and_censored_runs(tmp_path):
    plan = synthetic_plan()
    rows = pd.concat([synthetic_rows("tool_calling", 6), synthetic_rows("text_to_sql", 6)])
    rows = rows[~((rows["arm"] == "text_to_sql") & (rows["seed"] == 5) & (rows["step"] >= 12))]  # unfinished seed
    ledger = {
        "runs": {
            f"tool_calling/{v}/seed{s}": {"cpu_s": 72.0, "setup_cpu_s": 2.0, "steps_computed": 20}
            for v in VARIANTS
            for s in range(6)
        }
    }
    res = report.write_report(rows, ledger, plan, tmp_path / "conv", title="synthetic")
    a = res["arms"]["tool_calling"]
    assert a["seeds_used"] == list(range(6)) and res["arms"]["text_to_sql"]["seeds_used"] == list(range(5))
    assert not res["complete"] and res["min_seeds"] == 5
    for v, effect in EFFECTS.items():
        if v != "gdpo":
            f = a["vs_gdpo"][v]["final"]
            assert f["mean"] == pytest.approx(effect, abs=0.01), v  # interval coverage: tested above
            assert st.detected(f) == (effect != 0) and f["n"] == 6, v
    share = a["oracle_share"]["mrtpo"]
    assert share["defined"] and share["share"] == pytest.approx(0.5, abs=0.1) and share["lo"] < 0.5 < share["hi"]
    # entropy's curve (0.2 lower from the middle on) never reaches the threshold: censored at steps + 1
    assert a["variants"]["entropy"]["steps"]["reached"] == 0
    assert a["variants"]["entropy"]["steps"]["per_seed"] == [21] * 6
    assert a["variants"]["mrtpo:oracle"]["steps"]["reached"] == 6
    assert a["cpu"]["gdpo"]["cpu_h"] == pytest.approx(6 * 72 / 3600) and a["cpu"]["gdpo"]["s_per_step"] == 3.5
    assert "Of 2 arms, the oracle beats GDPO on 2" in res["conclusion"]
    saved = json.loads((tmp_path / "conv.json").read_text())
    assert saved["schema"] == report.SCHEMA and saved["arms"]["tool_calling"]["threshold"] == pytest.approx(
        a["threshold"]
    )
    md = (tmp_path / "conv.md").read_text()
    assert "| MRTPO (raw JS) |" in md and "Incomplete" in md and "## Relevance quality vs training gain" in md
    assert (tmp_path / "conv.html").stat().st_size > 1000 and len(pd.read_csv(tmp_path / "conv.csv")) == len(rows)


def test_report_says_when_the_oracle_has_no_headroom(tmp_path):
    flat = {v: 0.0 for v in VARIANTS}
    rows = synthetic_rows("tool_calling", 5, effects=flat)
    plan = synthetic_plan(seeds=5)
    plan["arms"] = plan["arms"][:1]
    res = report.analyze(rows, {"runs": {}}, plan)
    a = res["arms"]["tool_calling"]
    assert not a["oracle_share"]["mrtpo"]["defined"]
    assert "no headroom" in a["verdict"] and "Without headroom" in res["conclusion"]


def test_relevance_table_reads_the_localization_numbers():
    res = report.analyze(
        synthetic_rows("tool_calling", 5), {"runs": {}}, dict(synthetic_plan(5), arms=[synthetic_plan(5)["arms"][0]])
    )
    row = res["relevance_vs_outcome"][0]
    loc = pd.read_csv(report.LOCALIZATION)
    loc = loc[loc["model"] == "tiny-mrtpo"] if "model" in loc else loc  # the file also holds a real model's rows
    want = loc[
        (loc["view"] == "span_all") & (loc["method"] == "js_others") & loc["verifier"].str.startswith("tool_call.")
    ]["value"].mean()
    assert row["span_auroc_others"] == pytest.approx(want) and row["gain/mrtpo:oracle"] == pytest.approx(0.1, abs=0.01)


def test_relevance_table_of_a_real_model_arm_reads_that_models_localization_rows():
    plan = synthetic_plan(5)
    arm = dict(
        plan["arms"][0],
        key="instruction_following@smollm2",
        task="instruction_following",
        checkpoint="~/.cache/mrtpo-viz/models/smollm2-135m-instruct",
    )
    res = report.analyze(synthetic_rows(arm["key"], 5), {"runs": {}}, dict(plan, arms=[arm]))
    row = res["relevance_vs_outcome"][0]
    loc = pd.read_csv(report.LOCALIZATION)
    sel = loc[
        (loc["model"] == "smollm2-135m-instruct")
        & (loc["view"] == "specificity")
        & (loc["method"] == "js_raw")
        & loc["verifier"].str.startswith("ifeval.")
    ]["value"]
    assert row["model"] == "smollm2-135m-instruct" and len(sel) > 0
    assert row["specificity_raw"] == pytest.approx(sel.mean())
    tiny = loc[
        (loc["model"] == "tiny-mrtpo")
        & (loc["view"] == "specificity")
        & (loc["method"] == "js_raw")
        & loc["verifier"].str.startswith("ifeval.")
    ]["value"].mean()
    assert abs(row["specificity_raw"] - tiny) > 1e-3  # not the bundled policy's number


def test_power_proposal_on_a_synthetic_pilot_read_back_from_its_files(tmp_path):
    plan = synthetic_plan(seeds=4, steps=20)
    rows = pd.concat([synthetic_rows("tool_calling", 4), synthetic_rows("text_to_sql", 4)])
    ledger = {
        "runs": {
            f"{a}/{v}/seed{s}": {"cpu_s": 42.0, "setup_cpu_s": 2.0, "steps_computed": 20}
            for a in ("tool_calling", "text_to_sql")
            for v in VARIANTS
            for s in range(4)
        }
    }
    report.write_report(rows, ledger, plan, tmp_path / "pilot", title="pilot")  # what the power phase reads
    pilot = json.loads((tmp_path / "pilot.json").read_text())
    proposed, text = power.propose(pd.read_csv(tmp_path / "pilot.csv"), pilot, budget_cpu_h=1.0, variants=VARIANTS)
    # per seed of an arm: 6 variants x 50 steps x 2 CPU s + 6 x 2 s of setup
    assert power.cost_per_seed(pilot["arms"]["tool_calling"], 50) == pytest.approx(6 * 50 * 2 + 12)
    p = proposed["power"]["tool_calling"]
    assert p["steps"] == 50 and p["window"] == 12 and p["seeds"] == 5 and p["mde"] > 0  # 1 h buys only the minimum
    # without effects the paired differences vary only by step noise (sd 0.01 per run and step; window 5): one
    # step's paired difference has variance 2e-4 and the final difference sd 0.01 sqrt(2 / 5) = 0.0063
    flat = synthetic_rows("tool_calling", 4, effects={v: 0.0 for v in VARIANTS})
    est = power.arm_noise(flat, pilot["arms"]["tool_calling"], VARIANTS, 20)
    assert est["noise"] == pytest.approx(2e-4, rel=0.2) and est["sd"] == pytest.approx(0.0063, rel=0.35)
    assert est["tau2"] < 0.2 * est["sd"] ** 2  # hardly any seed-to-seed spread beyond the sampling noise
    assert [a["seeds"] for a in proposed["arms"]] == [5, 5] and proposed["study"] == "main"
    runs.schedule(proposed)  # the proposed plan is a valid plan
    assert "## Seeds for 80% power, and the plan" in text and "noncentral t" in text


# --- the runs: a stopped study continues to the same rows -----------------------------------------------------------


def _plan(policy_dir):
    arm = dict(
        key="tool_calling",
        task="tool_calling",
        checkpoint=str(policy_dir),
        seeds=1,
        steps=2,
        prompts_per_step=1,
        group_size=2,
        max_new_tokens=6,
        lr=1e-3,
        window=1,
        save_every=0,
    )
    return {"study": "t", "variants": ["gdpo", "mrtpo:oracle"], "arms": [arm]}


def _rows(root, plan):
    df = runs.study_rows(root, plan)
    return (
        df[[c for c in df.columns if not c.startswith("time/")]].sort_values(["variant", "step"]).reset_index(drop=True)
    )


def test_a_stopped_study_continues_to_the_rows_of_an_uninterrupted_one(tiny_policy_dir, tmp_path):
    plan = _plan(tiny_policy_dir)
    whole = runs.Study(tmp_path / "whole", plan)
    assert runs.run_study(whole, runs.Stop(), log=lambda m: None) == "finished"
    split = runs.Study(tmp_path / "split", plan)
    assert runs.run_study(split, runs.Stop(max_steps=1), log=lambda m: None) == "step cap"
    first = runs.schedule(plan)[0]
    assert split.steps_done(first) == 1 and (first.folder(split.root) / "checkpoints" / "LATEST").is_file()
    again = runs.Study(tmp_path / "split", plan)  # a new sitting reads the plan and the ledger back
    assert runs.run_study(again, runs.Stop(), log=lambda m: None) == "finished"
    pd.testing.assert_frame_equal(
        _rows(tmp_path / "split", plan), _rows(tmp_path / "whole", plan), check_exact=False, atol=1e-6
    )  # same prompts, seeds, weights, optimizer state
    assert not (first.folder(split.root) / "checkpoints").exists()  # finished runs keep only their metrics
    ledger = json.loads((tmp_path / "split" / "ledger.json").read_text())
    assert [s["outcome"] for s in ledger["sittings"]] == ["step cap", "finished"]
    assert sum(e["steps_computed"] for e in ledger["runs"].values()) == 4
    assert all(e["done"] and e["cpu_s"] > 0 for e in ledger["runs"].values())


def test_a_study_refuses_another_plan_or_a_changed_policy(tiny_policy_dir, tmp_path):
    plan = _plan(tiny_policy_dir)
    runs.Study(tmp_path / "s", plan)
    with pytest.raises(SystemExit, match="another plan"):
        runs.Study(tmp_path / "s", dict(plan, variants=["gdpo"]))
    more = dict(plan, arms=[dict(plan["arms"][0], seeds=3)])  # more seeds extend the study
    assert [s.seed for s in runs.schedule(runs.Study(tmp_path / "s", more).plan)] == [0, 0, 1, 1, 2, 2]
    assert json.loads((tmp_path / "s" / "plan.json").read_text())["arms"][0]["seeds"] == 3
    for changed in (dict(plan["arms"][0], seeds=2), dict(plan["arms"][0], steps=3, seeds=3)):
        with pytest.raises(SystemExit, match="another plan"):  # fewer seeds, or another step count
            runs.Study(tmp_path / "s", dict(plan, arms=[changed]))
    (tmp_path / "s" / "plan.json").write_text(json.dumps({**plan, "digests": {str(tiny_policy_dir): "0" * 16}}))
    with pytest.raises(SystemExit, match="policy"):
        runs.Study(tmp_path / "s", plan)


def test_a_study_may_append_an_arm_but_not_drop_or_reorder_one(tiny_policy_dir, tmp_path):
    plan = _plan(tiny_policy_dir)
    runs.Study(tmp_path / "s", plan)
    sql = dict(plan["arms"][0], key="text_to_sql", task="text_to_sql", seeds=2)
    grown = runs.Study(tmp_path / "s", dict(plan, arms=plan["arms"] + [sql]))
    assert [a["key"] for a in json.loads((tmp_path / "s" / "plan.json").read_text())["arms"]] == [
        "tool_calling",
        "text_to_sql",
    ]
    assert [(s.arm.key, s.seed) for s in runs.schedule(grown.plan)][::2] == [
        ("tool_calling", 0),
        ("text_to_sql", 0),
        ("text_to_sql", 1),
    ]
    for arms in ([sql], [sql, plan["arms"][0]], plan["arms"]):  # the old arm dropped, moved, or the new one dropped
        with pytest.raises(SystemExit, match="another plan"):
            runs.Study(tmp_path / "s", dict(plan, arms=arms))


def test_shards_deal_the_schedule_once_and_keep_their_runs_when_others_finish(tiny_policy_dir):
    plan = _plan(tiny_policy_dir)
    plan = dict(plan, variants=VARIANTS, arms=[dict(plan["arms"][0], seeds=3)])
    order = runs.schedule(plan)
    deal = [runs.shard_of(order, (k, 2), skip=lambda s: False) for k in (0, 1)]
    assert sorted(s.key for d in deal for s in d) == sorted(s.key for s in order) and not (
        {s.key for s in deal[0]} & {s.key for s in deal[1]}
    )  # every run once
    assert [s.variant for s in deal[0][:3]] == ["grpo", "mrtpo", "mrtpo:oracle"]  # variants alternate
    done = {s.key for s in deal[1][:4]}  # shard 1 ran ahead: shard 0 restarting is dealt the same runs
    again = runs.shard_of(order, (0, 2), skip=lambda s: s.key in done)
    assert [s.key for s in again] == [s.key for s in deal[0]]
    assert runs.parse_shard("1/2") == (1, 2)
    for bad in ("2/2", "a/2", "1", "-1/2"):
        with pytest.raises(ValueError, match="K/N"):
            runs.parse_shard(bad)


def _shard(root, plan, shard):
    runs.run_study(runs.Study(root, plan), runs.Stop(), log=lambda m: None, shard=shard)


def test_two_shards_side_by_side_train_what_one_sitting_trains(tiny_policy_dir, tmp_path):
    import multiprocessing as mp

    plan = _plan(tiny_policy_dir)
    plan = dict(plan, arms=[dict(plan["arms"][0], seeds=2)])
    runs.run_study(runs.Study(tmp_path / "one", plan), runs.Stop(), log=lambda m: None)
    runs.Study(tmp_path / "two", plan)  # the study folder exists before the shards start, as on the command line
    ctx = mp.get_context("spawn")  # two processes share the study folder and its ledger, as two `run --shard`
    procs = [ctx.Process(target=_shard, args=(tmp_path / "two", plan, (k, 2))) for k in (0, 1)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
    assert [proc.exitcode for proc in procs] == [0, 0]
    pd.testing.assert_frame_equal(
        _rows(tmp_path / "two", plan), _rows(tmp_path / "one", plan), check_exact=False, atol=1e-6
    )  # same prompts, seeds and weights per run
    ledger = json.loads((tmp_path / "two" / "ledger.json").read_text())
    assert sorted(s["shard"] for s in ledger["sittings"]) == ["0/2", "1/2"]
    assert all(s["outcome"] == "finished" and s["steps"] == 4 for s in ledger["sittings"])  # 2 runs x 2 steps each
    assert sorted(ledger["runs"]) == sorted(s.key for s in runs.schedule(plan))  # no shard's entry overwritten
    assert all(e["done"] and e["steps_computed"] == 2 and e["cpu_s"] > 0 for e in ledger["runs"].values())


def test_the_budget_stops_before_a_step_that_would_exceed_it():
    stop = runs.Stop(budget_s=10.0)
    stop.started -= 9.0  # 9 CPU seconds used
    assert stop.reason(0.5) is None and stop.reason(2.0) == "cpu budget"
    stop.signalled = True
    assert stop.reason(0.0) == "signal"


def test_schedule_is_seed_major_and_the_pilot_plan_is_valid():
    import convergence

    plan = convergence.pilot_plan()
    order = runs.schedule(plan)
    seeds = [s.seed for s in order]
    assert seeds == sorted(seeds) and len(order) == 6 * (3 * 3 + 2)
    assert [s.variant for s in order[:6]] == VARIANTS and order[0].config(REPO).control == "none"
    assert order[3].config(REPO).method == "mrtpo" and order[3].config(REPO).control == "others"
    assert order[4].config(REPO).method == "mrtpo:oracle"


def test_words_agree_with_the_printed_interval():
    """An interval that excludes 0 is never read as "no difference detected" (the Method tab showed GRPO
    -0.021 [-0.040, -0.004] with that label): the words name the side, and the t interval where it disagrees."""
    grpo = {"mean": -0.021, "lo": -0.040, "hi": -0.004, "t_lo": -0.048, "t_hi": 0.007, "n": 5}
    text = report._reading(grpo)
    assert "no difference" not in text
    assert text == "lower by this interval, but the t interval [-0.048, +0.007] includes 0: not robust"
    assert report._reading({**grpo, "t_hi": -0.001}) == "lower"
    assert report._reading({"mean": 0.02, "lo": 0.01, "hi": 0.03, "t_lo": 0.005, "t_hi": 0.04, "n": 5}) == "higher"
    assert (
        report._reading({"mean": 0.0, "lo": -0.01, "hi": 0.02, "t_lo": -0.02, "t_hi": 0.03, "n": 5})
        == "no difference detected"
    )
    assert report._reading({**grpo, "lo": -0.05, "hi": 0.01, "t_hi": -0.002}).startswith("this interval includes 0")
    oracle = {"mean": -0.027, "lo": -0.058, "hi": -0.002, "t_lo": -0.059, "t_hi": 0.004, "n": 16}
    arm = {
        "seeds_used": list(range(16)),
        "vs_gdpo": {"mrtpo:oracle": {"final": oracle}, "grpo": {"final": grpo}},
        "oracle_share": {},
    }
    verdict = report.arm_verdict("instruction_following", arm)
    assert "no headroom detected" not in verdict and "lower than GDPO by this interval" in verdict
    assert "GRPO -0.021 [-0.040, -0.004] (lower by this interval" in verdict


def test_committed_reports_use_the_words_of_their_numbers():
    for stem in ("convergence", "convergence_pilot"):
        res = json.loads((REPO / "benchmarks" / "results" / f"{stem}.json").read_text())
        for key, a in res["arms"].items():
            assert a["verdict"] == report.arm_verdict(key, report._nan(a)), (stem, key)
    assert (
        "GRPO -0.021 [-0.040, -0.004] (no difference detected)"
        not in (REPO / "benchmarks" / "results" / "convergence.md").read_text()
    )
