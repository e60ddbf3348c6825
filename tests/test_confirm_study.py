"""The confirmatory round's report (studies/credit/_confirm_report.py) on synthetic records, with numbers computed by
hand: per build, combined (pooled within-build variance, df 9) and random effect (t on 3 build means, df 2), the
decision rule, truncation, cost and the runs missing from the schedule."""

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "studies" / "credit"))

import _confirm_report as rep  # noqa: E402

PLAN = json.loads((ROOT / "studies" / "credit" / "results" / "confirm_plan.json").read_text())
LR = PLAN["primary"]["lr"]
GAINS = {  # mrtpo - gdpo per seed 200-203, per build
    "b1": [0.1, 0.2, 0.3, 0.4],  # mean 0.25, sum of squares 0.05
    "b2": [0.0, 0.1, 0.1, 0.2],  # mean 0.10, sum of squares 0.02
    "b3": [-0.1, 0.0, 0.2, 0.3],  # mean 0.10, sum of squares 0.10
}


def _rec(build, method, seed, auc, held, lr=LR, truncated=0.0):
    return {
        "run": f"slots-{build}__{method}__lr{lr:g}__s{seed}",
        "arm": f"slots-{build}",
        "build": build,
        "method": method,
        "lr": lr,
        "seed": seed,
        "steps": 2,
        "rows": [{"mean_reward": auc, "truncated": truncated}, {"mean_reward": auc, "truncated": truncated}],
        "heldout": {"1": {"mean_reward": 0.3}, "2": {"mean_reward": held}},
        "cpu_s": 100.0,
        "wall_s": 120.0,
        "policy": f"fp-{build}",
    }


def _records(held_gains=None, methods=("gdpo", "mrtpo")):
    out = []
    for b, gains in GAINS.items():
        for i, g in enumerate(gains):
            hg = (held_gains or GAINS)[b][i]
            out.append(_rec(b, "gdpo", 200 + i, 0.5, 0.5, truncated=0.01))
            out.append(_rec(b, "mrtpo", 200 + i, 0.5 + g, 0.5 + hg))
            out += [_rec(b, m, 200 + i, 0.5, 0.5) for m in methods if m not in ("gdpo", "mrtpo")]
    return out


def test_per_build_combined_and_random_effect_by_hand():
    """Combined: (0.25 + 0.10 + 0.10) / 3 = 0.15; pooled variance (0.05 + 0.02 + 0.10) / 9 = 0.018889; standard
    error sqrt(3 x 0.018889 / 4) / 3 = 0.039675; t(0.975, 9) = 2.262157, so 0.15 +- 0.089751; t = 3.7807 on 9 df,
    one-sided p 0.00217. Random effect: build means' sd sqrt((0.1^2 + 0.05^2 + 0.05^2) / 2) = 0.086603, standard
    error 0.05, t = 3 on 2 df, p = 0.5 (1 - 3 / sqrt 11) = 0.047733; t(0.975, 2) = 4.302653: [-0.06513, 0.36513].
    Build b1: sd sqrt(0.05 / 3) = 0.129099, t(0.975, 3) = 3.182446: 0.25 +- 0.205426."""
    r = rep.paired_by_build(rep.index(_records()), "mrtpo", "gdpo", LR, "auc")
    k = r["combined"]
    assert k["mean"] == pytest.approx(0.15) and k["df"] == 9 and k["n"] == 12
    assert k["pooled_var"] == pytest.approx(0.17 / 9)
    assert (k["lo"], k["hi"]) == pytest.approx((0.15 - 0.089751, 0.15 + 0.089751), abs=1e-6)
    assert k["p_greater"] == pytest.approx(0.002172, abs=1e-6) and k["p_less"] == pytest.approx(1 - 0.002172, abs=1e-6)
    re = r["random_effect"]
    assert re["df"] == 2 and re["mean"] == pytest.approx(0.15)
    assert re["p_greater"] == pytest.approx(0.5 * (1 - 3 / math.sqrt(11)), abs=1e-9)
    assert (re["lo"], re["hi"]) == pytest.approx((-0.065133, 0.365133), abs=1e-5)
    b1 = r["per_build"]["b1"]
    assert b1["df"] == 3 and b1["seeds"] == [200, 201, 202, 203]
    assert (b1["lo"], b1["hi"]) == pytest.approx((0.25 - 0.205426, 0.25 + 0.205426), abs=1e-5)
    assert r["per_build"]["b3"]["per_seed"] == pytest.approx(GAINS["b3"])


def test_swapping_method_and_reference_changes_the_sign_and_the_decision():
    runs = rep.index(_records())
    fwd = rep.paired_by_build(runs, "mrtpo", "gdpo", LR, "auc")["combined"]
    back = rep.paired_by_build(runs, "gdpo", "mrtpo", LR, "auc")["combined"]
    assert back["mean"] == pytest.approx(-0.15) and back["p_less"] == pytest.approx(fwd["p_greater"])
    assert rep.decide({e: rep.paired_by_build(runs, "mrtpo", "gdpo", LR, e) for e in rep.ENDPOINTS}) == {
        "decision": "helps",
        "extends_beyond_builds": False,  # the random-effect interval includes 0
    }
    assert rep.decide({e: rep.paired_by_build(runs, "gdpo", "mrtpo", LR, e) for e in rep.ENDPOINTS})["decision"] == (
        "hurts"
    )


def test_the_decision_needs_both_co_primary_endpoints():
    flat = {b: [0.02, -0.02, 0.01, -0.01] for b in GAINS}  # held-out: no gain
    s = rep.summarize(PLAN, _records(held_gains=flat))
    assert s["decision"]["decision"] == "not established"
    first = s["comparisons"][0]
    assert first["name"] == "mrtpo - gdpo" and first["lr"] == LR
    assert first["endpoints"]["auc"]["combined"]["p_greater"] < 0.05
    assert first["endpoints"]["heldout_final"]["combined"]["mean"] == pytest.approx(0.0)
    # the half-horizon held-out reward (a secondary endpoint) reads the step-1 entry: no difference
    assert first["endpoints"]["heldout_half"]["combined"]["mean"] == pytest.approx(0.0)


def test_summary_lists_missing_runs_truncation_cost_and_leaves_out_an_incomplete_secondary_rate():
    records = _records()
    s = rep.summarize(PLAN, records)
    n_sched = 3 * 4 * (len(PLAN["primary"]["methods"]) + len(PLAN["secondary"]["methods"]))
    assert s["scheduled"] == n_sched and s["runs"] == 24 and len(s["missing"]) == n_sched - 24
    assert "slots-b2__mrtpo_shuffle__lr0.0005__s201" in s["missing"]
    assert "slots-b1__gdpo__lr0.0005__s200" not in s["missing"]
    assert [c["lr"] for c in s["comparisons"]] == [LR] * 4  # no run at the secondary rate: its comparison waits
    assert any("0.00025" in w for w in s["left_out"])
    assert s["truncated"]["gdpo @ 0.0005"] == pytest.approx(0.01) and s["truncated"]["mrtpo @ 0.0005"] == 0.0
    assert s["cpu_h"] == pytest.approx(24 * 100 / 3600) and s["cost"][0]["policy"].startswith("fp-")
    # a comparison whose reference never ran has no pairs
    assert "combined" not in s["comparisons"][1]["endpoints"]["auc"]
    lr2 = PLAN["secondary"]["lr"]
    full = records + [dict(r, lr=lr2, run=r["run"] + "-2") for r in records]
    s2 = rep.summarize(PLAN, full)
    assert s2["comparisons"][-1]["lr"] == lr2 and "left_out" not in s2
    assert s2["comparisons"][-1]["endpoints"]["auc"]["combined"]["mean"] == pytest.approx(0.15)


def test_markdown_states_the_decision_and_every_build():
    s = rep.summarize(PLAN, _records())
    text = rep.markdown(s, PLAN, "python studies/credit/confirm.py report")
    assert "**helps**" in text and "beyond these builds (random-effect intervals exclude 0): no" in text
    assert "+0.1500 (9)" in text and "[+0.0602, +0.2398]" in text and "+0.2500 (4)" in text
    assert "slots-b3__mrtpo-mask__lr0.0005__s203" in text
    assert "## mrtpo - mrtpo:shuffle at 0.0005" in text  # its reference has no runs: the table says so
    row = next(x for x in text.splitlines() if "| no pairs |" in x)
    assert row.count("|") == next(x for x in text.splitlines() if x.startswith("| endpoint")).count("|")


def test_unequal_builds_average_build_means_not_seeds():
    """Without b1's seed 203: b1 mean 0.2 (sum of squares 0.02), so the combined estimate is (0.2 + 0.1 + 0.1) / 3 =
    0.13333 (the mean over the 11 seeds would be 0.12727); pooled variance (0.02 + 0.02 + 0.10) / 8 = 0.0175 on df 8,
    standard error sqrt(0.0175 (1/3 + 1/4 + 1/4)) / 3 = 0.040254."""
    records = [r for r in _records() if not (r["build"] == "b1" and r["seed"] == 203 and r["method"] == "mrtpo")]
    k = rep.paired_by_build(rep.index(records), "mrtpo", "gdpo", LR, "auc")["combined"]
    assert k["mean"] == pytest.approx(0.4 / 3) and k["df"] == 8 and k["pooled_var"] == pytest.approx(0.0175)
    half = 2.306004 * 0.040254  # t(0.975, 8)
    assert (k["lo"], k["hi"]) == pytest.approx((0.4 / 3 - half, 0.4 / 3 + half), abs=1e-5)
    assert "slots-b1__mrtpo__lr0.0005__s203" in rep.summarize(PLAN, records)["missing"]


REPRO = ROOT / "studies" / "credit" / "results" / "confirm" / "slots-b1__gdpo__lr0.0005__s200.json"


def test_one_confirmatory_run_reproduces_its_committed_first_steps():
    """GDPO, build b1, seed 200: its first 2 training steps rerun from the shipped build give the committed per-step
    rewards. Tolerance: exact up to float summation (1e-9). A step's reward is a mean of pass/fail verdicts (4 prompts
    x 4 samples x 4 rewards: multiples of 1/64), so any drift in sampling shows as a jump of at least 0.0156, never as a
    small error; a tolerance in between would only hide a changed sample. The rerun stops after 2 steps and evaluates
    1 held-out prompt after step 1, which the original did not: sampling draws from a torch.Generator seeded per prompt
    and step (mrtpo_viz.policy.sampling), not from the global generator, so the evaluation cannot move later steps."""
    import _credit_runs as runs

    assert REPRO.is_file(), f"{REPRO.relative_to(ROOT)} is committed with the confirmatory round's results"
    committed = json.loads(REPRO.read_text())
    arm = dict(PLAN["arm"], key="slots-b1", checkpoint=PLAN["builds"]["b1"]["checkpoint"], steps=2, heldout_prompts=1)
    rec = runs.train_one(runs.RunSpec(arm, "gdpo", LR, 200))
    assert rec["policy"] == committed["policy"]  # the shipped build is the one the run trained
    for new, old in zip(rec["rows"], committed["rows"][:2], strict=True):
        assert new["mean_reward"] == pytest.approx(old["mean_reward"], abs=1e-9)
        assert new["rewards"] == pytest.approx(old["rewards"], abs=1e-9)
