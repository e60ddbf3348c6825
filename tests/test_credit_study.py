"""The credit study's machinery: a plan without a fixed threshold is refused, and a tiny study (2 methods x 2 seeds
x 2 steps on the bundled policy) runs end to end on CPU: per-run files, resumption, paired report."""

import copy
import hashlib
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "studies" / "credit"))

import _credit_plan as plans  # noqa: E402
import _credit_runs as runs  # noqa: E402


def test_a_plan_without_a_fixed_threshold_is_refused(tmp_path):
    plan = plans.default_plan()
    assert plans.check_plan(copy.deepcopy(plan)) == plan
    for bad in (None, "derived from the pilot", math.nan, 0, 1.5, True):
        with pytest.raises(ValueError, match="must fix the steps-to-threshold threshold in advance"):
            plans.check_plan({**plan, "threshold": bad})
    missing = {k: v for k, v in plan.items() if k != "threshold"}
    with pytest.raises(ValueError, match=r"lacks \['threshold'\]"):
        plans.check_plan(missing)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(missing))
    with pytest.raises(ValueError, match="threshold"):
        plans.load_plan(path)
    with pytest.raises(ValueError, match="threshold"):
        plans.write_plan(tmp_path / "other.json", {**plan, "threshold": None})
    assert not (tmp_path / "other.json").exists()


def test_the_committed_plan_is_complete():
    plan = plans.load_plan(ROOT / "benchmarks" / "results" / "credit_plan.json")
    assert plan["threshold"] == 0.6 and plan["reference"] == "gdpo" and plan["seeds"]["min"] >= 6
    assert {"mrtpo:oracle", "mrtpo:oracle-mask", "mrtpo:placebo-mask", "mrtpo", "mrtpo-mask"} <= set(plan["methods"])


def test_tiny_study_end_to_end(tmp_path):
    from _credit_report import markdown, summarize

    plan = plans.default_plan()
    arm = dict(
        plan["arms"][0],
        checkpoint="tiny-mrtpo",
        steps=2,
        prompts_per_step=1,
        group_size=2,
        max_new_tokens=12,
        heldout_prompts=2,
        window=1,
    )
    plan.update(
        arms=[arm],
        methods=["gdpo", "mrtpo:oracle-mask"],
        pilot={"seeds": 2, "lr": [5e-4], "methods": ["gdpo", "mrtpo:oracle-mask"]},
    )
    out = tmp_path / "runs"
    logs = []
    written = runs.sitting(plan, "pilot", out, log=logs.append)
    assert sorted(p.name for p in written) == sorted(
        f"slots__{m}__lr0.0005__s{s}.json" for s in (0, 1) for m in ("gdpo", "mrtpo_oracle-mask")
    )
    assert runs.sitting(plan, "pilot", out) == []  # resumable: finished runs are not redone
    order = [s.name for s in runs.schedule(plan, "pilot")]
    assert order[:2] == ["slots__gdpo__lr0.0005__s0", "slots__mrtpo_oracle-mask__lr0.0005__s0"]  # seed-major
    assert runs.parse_shard("1/2") == (1, 2)  # shard 1/2 trains order[1::2]
    with pytest.raises(ValueError, match=r"methods \['grpo'\] are not in"):
        runs.sitting(plan, "pilot", out, methods=["grpo"])
    with pytest.raises(ValueError, match="0 <= K < N"):
        runs.parse_shard("2/2")
    records = list(runs.load_runs(out))
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    weights = (BUNDLED_POLICY_DIR / "model.safetensors").read_bytes()
    for rec in records:
        assert rec["policy"] == hashlib.sha256(weights).hexdigest()[:12]  # the build the run trained
        assert len(rec["rows"]) == 2 and set(rec["heldout"]) == {"1", "2"}
        assert all(r["truncated"] == 1.0 for r in rec["rows"])  # 12 tokens cut every slots response (~111 tokens)
        assert all(r["grad_norm"] >= 0 for r in rec["rows"])
    summary = summarize(plan, records)["slots"]
    by = {(r["method"], r["seed"]): runs.auc(r) for r in records}
    diff = summary["vs_reference"]["mrtpo:oracle-mask"]
    expected = [by[("mrtpo:oracle-mask", s)] - by[("gdpo", s)] for s in (0, 1)]
    assert diff["n"] == 2 and diff["per_seed"] == pytest.approx(expected, abs=1e-12)
    assert summary["methods"]["gdpo"]["truncated"] == 1.0
    text = markdown({"slots": summary}, plan, "pilot", "python studies/credit/credit.py report --phase pilot")
    assert "| mrtpo:oracle-mask |" in text and "Gate (b)" in text


def _record(method, lr, seed, rewards):
    rows = [
        {"mean_reward": r, "grad_norm": 0.5, "truncated": 0.0, "rewards": {}, "adv_absmax": 1.0, "mean_length": 100}
        for r in rewards
    ]
    held = {"1": {"mean_reward": 0.5, "truncated": 0.0}}
    return dict(arm="slots", method=method, lr=lr, seed=seed, rows=rows, heldout=held, cpu_s=1.0, max_grad_norm=1.0)


def test_the_pilot_grid_chooses_each_methods_rate_and_the_main_runs_use_fresh_seeds():
    """Rows per (method, rate) in the pilot; the comparisons pair each method at its best-AUC rate; the main
    schedule takes the chosen rates and seeds that start at the offset (the pilot's seeds chose the rates)."""
    from _credit_report import markdown, summarize

    plan = plans.default_plan()
    records = [
        _record("gdpo", 5e-4, s, [0.4, 0.6])
        for s in (0, 1)  # AUC 0.5
    ] + [_record("gdpo", 1e-3, s, [0.4, 0.5]) for s in (0, 1)]  # AUC 0.45
    records += [_record("mrtpo:oracle-mask", 5e-4, s, [0.4, 0.6 + 0.1 * s]) for s in (0, 1)]  # AUC 0.5, 0.55
    records += [_record("mrtpo:oracle-mask", 1e-3, s, [0.5, 0.7 + 0.1 * s]) for s in (0, 1)]  # AUC 0.6, 0.65
    s = summarize(plan, records)["slots"]
    assert s["chosen_lr"] == {"gdpo": 5e-4, "mrtpo:oracle-mask": 1e-3}
    assert set(s["methods"]) == {f"{m} @ {lr:g}" for m in ("gdpo", "mrtpo:oracle-mask") for lr in (5e-4, 1e-3)}
    assert s["vs_reference"]["mrtpo:oracle-mask"]["per_seed"] == pytest.approx([0.1, 0.15])
    assert "Each method's learning rate" in markdown({"slots": s}, plan, "pilot", "cmd")
    plan["chosen"] = {"lr": s["chosen_lr"], "seeds": 6, "seed_offset": 100}
    main = runs.schedule(plan, "main")
    assert sorted({r.seed for r in main}) == list(range(100, 106))
    assert {r.lr for r in main if r.method == "mrtpo:oracle-mask"} == {1e-3}
    assert {r.lr for r in main if r.method == "grpo"} == {plan["pilot"]["lr"][0]}  # not in the pilot: the first rate


def test_relevance_variants_set_the_replay_and_unknown_ones_are_refused():
    assert runs.method_settings("mrtpo@others") == ("mrtpo", {"control": "others"})
    assert runs.method_settings("mrtpo@kl") == ("mrtpo", {"metric": "kl"})
    assert runs.method_settings("mrtpo:oracle-mask") == ("mrtpo:oracle-mask", {})
    with pytest.raises(ValueError, match="unknown relevance variant 'tvdx'"):
        runs.method_settings("mrtpo@tvdx")
    arm = plans.default_plan()["arms"][0]
    assert runs.RunSpec(arm, "mrtpo@others", 2.5e-4, 3).name == "slots__mrtpo+others__lr0.00025__s3"
    # @rate: the same method at the rate chosen.lr gives its name (a second rate beside the method's own)
    assert runs.method_settings("mrtpo-mask@rate") == ("mrtpo-mask", {})
    plan = plans.default_plan()
    plan["methods"] = ["gdpo", "mrtpo", "mrtpo@rate"]
    plan["chosen"] = {"lr": {"gdpo": 5e-4, "mrtpo": 2.5e-4, "mrtpo@rate": 5e-4}, "seeds": 6, "seed_offset": 100}
    rates = {(r.method, r.lr) for r in runs.schedule(plan, "main")}
    assert rates == {("gdpo", 5e-4), ("mrtpo", 2.5e-4), ("mrtpo@rate", 5e-4)}


def test_an_extended_main_run_reports_the_planned_look_and_the_two_look_interval():
    """Seeds 100-101 were planned, 100-103 ran: the first look uses only 100-101; the extended look's two-look
    interval is wider than its 95% interval (Pocock level 97.06%)."""
    from _credit_report import looks, looks_markdown

    plan = plans.default_plan()
    plan["chosen"] = {"lr": {}, "seeds": 4, "seed_offset": 100, "first_seeds": 2}
    gains = {100: 0.10, 101: 0.02, 102: 0.06, 103: 0.08}
    records = [_record("gdpo", 5e-4, s, [0.4, 0.6]) for s in gains]
    records += [_record("mrtpo:oracle-mask", 5e-4, s, [0.4 + g, 0.6 + g]) for s, g in gains.items()]
    lk = looks(plan, records)["slots"]
    row = lk["rows"]["mrtpo:oracle-mask"]
    assert lk["first_seeds"] == [100, 101]
    assert row["first"]["per_seed"] == pytest.approx([0.10, 0.02]) and row["all"]["n"] == 4
    assert row["extension"]["per_seed"] == pytest.approx([0.06, 0.08])  # the seeds after the planned ones
    assert row["all"]["mean"] == pytest.approx(0.065)
    lo, hi = row["all_pocock"]
    assert lo < row["all"]["t_lo"] and hi > row["all"]["t_hi"]
    assert "two-look" in looks_markdown({"slots": lk}) and looks(plans.default_plan(), records) == {}


def test_methods_added_later_start_at_their_seed_and_pairs_stay_within_one_build():
    from _credit_report import summarize

    plan = plans.default_plan()
    plan["chosen"] = {"lr": {}, "seeds": 4, "seed_offset": 100, "from_seed": {"mrtpo@kl": 102}}
    plan["methods"] = ["gdpo", "mrtpo@kl"]
    main = runs.schedule(plan, "main")
    assert [(r.method, r.seed) for r in main if r.method == "mrtpo@kl"] == [("mrtpo@kl", 102), ("mrtpo@kl", 103)]
    assert len([r for r in main if r.method == "gdpo"]) == 4
    records = [dict(_record("gdpo", 5e-4, s, [0.4, 0.6]), policy="a" if s < 102 else "b") for s in range(100, 104)]
    records += [dict(_record("mrtpo", 5e-4, s, [0.5, 0.6 + 0.01 * (s - 100)]), policy="b") for s in range(100, 104)]
    p = summarize(plan, records)["slots"]["vs_reference"]["mrtpo"]
    assert p["n"] == 2 and p["per_seed"] == pytest.approx([0.06, 0.065])  # seeds 100, 101: other builds


def test_an_arm_added_later_names_its_own_start_seeds():
    """An arm's own ``from_seed`` ({}: every seed) replaces the plan's, which concerns the slots arm's extension:
    the conflict and bundled arms pair all their methods on the same six seeds."""
    plan = plans.default_plan()
    plan["chosen"] = {"lr": {}, "seeds": 14, "seed_offset": 100, "from_seed": {"mrtpo:oracle": 106}}
    plan["arms"].append(dict(plan["arms"][0], key="late", main_seeds=6, from_seed={}, methods=["gdpo", "mrtpo:oracle"]))
    main = runs.schedule(plan, "main")
    late = sorted((r.method, r.seed) for r in main if r.arm["key"] == "late")
    assert late == sorted([(m, s) for m in ("gdpo", "mrtpo:oracle") for s in range(100, 106)])
    assert min(r.seed for r in main if r.arm["key"] == "slots" and r.method == "mrtpo:oracle") == 106


def test_start_lengths_counts_the_samples_cut_at_the_arms_budget():
    """The share cut is the share of samples that reach ``max_new_tokens`` without ending: the bundled policy's
    tool calls (median about 36 tokens) are mostly cut at 16 and none at 160."""
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks import load_examples

    policy, examples = load_policy("tiny-mrtpo"), load_examples("tool_calling", "train")[:3]
    short = runs.start_lengths(policy, {"key": "t", "max_new_tokens": 16}, examples, samples=2)
    assert short["samples"] == 6 and short["max"] == 16 and short["truncated"] >= 0.5
    long = runs.start_lengths(policy, {"key": "t", "max_new_tokens": 160}, examples, samples=2)
    assert long["truncated"] == 0.0 and 16 < long["max"] < 160 and long["median"] <= long["p99"] <= long["max"]


def test_the_control_arm_adds_its_reward_and_runs_only_its_methods_and_seeds(tmp_path):
    plan = plans.default_plan()
    plan["chosen"] = {"lr": {}, "seeds": 14, "seed_offset": 100}
    ctrl = dict(
        plan["arms"][0],
        key="slots-weather",
        add_verifiers=["slots.weather"],
        main_only=True,
        main_seeds=6,
        methods=["gdpo", "mrtpo-mask"],
    )
    plan["arms"].append(ctrl)
    main = [r for r in runs.schedule(plan, "main") if r.arm["key"] == "slots-weather"]
    assert sorted({r.seed for r in main}) == list(range(100, 106)) and {r.method for r in main} == {
        "gdpo",
        "mrtpo-mask",
    }
    assert not [r for r in runs.schedule(plan, "pilot") if r.arm["key"] == "slots-weather"]
    with pytest.raises(ValueError, match=r"arms \['nope'\] are not in the plan"):
        runs.sitting(plan, "main", tmp_path, arms=["nope"])
    train = runs.arm_examples(ctrl, "train")
    assert train[0].verifiers == ("slots.part1", "slots.part2", "slots.part3", "slots.part4", "slots.weather")
    assert runs.arm_examples(plan["arms"][0], "train")[0].verifiers == train[0].verifiers[:4]


def test_the_figure_plots_paired_per_step_gaps(tmp_path):
    from _credit_figure import paired_gaps, write_png
    from _credit_report import summarize

    records = [dict(_record("gdpo", 5e-4, s, [0.4, 0.6]), policy="a") for s in (0, 1, 2)]
    records += [dict(_record("mrtpo", 5e-4, s, [0.5, 0.6 + 0.1 * s]), policy="a") for s in (0, 1)]
    records.append(dict(_record("mrtpo", 5e-4, 2, [0.9, 0.9]), policy="b"))  # another build: not paired
    gaps = paired_gaps(records, "slots")
    assert list(gaps) == ["mrtpo"] and gaps["mrtpo"] == pytest.approx([0.1, 0.05])
    pytest.importorskip("matplotlib")
    assert write_png(summarize(plans.default_plan(), records), records, tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gate_a_gradients_per_method_and_relevance_variant():
    """Gate (a)'s per-batch gradients: every method sees the same batches; a relevance variant (KL) changes MRTPO's
    gradient; the leave-one-out cosine of identical gradients is 1 and of opposed ones -1."""
    import torch
    from _credit_gates import batch_gradients, loo_cosines

    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks import load_examples

    torch.manual_seed(0)
    grads = batch_gradients(
        load_policy("tiny-mrtpo"),
        load_examples("tool_calling", "train"),
        ["gdpo", "mrtpo", "mrtpo@kl"],
        batches=2,
        prompts=2,
        group_size=4,
        max_new_tokens=64,
    )
    assert {m: len(g) for m, g in grads.items()} == {"gdpo": 2, "mrtpo": 2, "mrtpo@kl": 2}
    assert any(float(g.norm()) > 0 for g in grads["gdpo"])  # the rewards vary in these groups
    assert any(not torch.allclose(a, b) for a, b in zip(grads["mrtpo"], grads["mrtpo@kl"]))
    v = torch.tensor([1.0, 2.0, 0.5])
    assert loo_cosines([v, v, v]) == pytest.approx([1.0, 1.0, 1.0])
    assert loo_cosines([v, -v]) == pytest.approx([-1.0, -1.0])


def test_shards_split_each_chosen_method():
    """Two methods per seed: sharding after the choice gives each shard half of each method's seeds."""
    plan = plans.default_plan()
    plan["methods"] = ["gdpo", "mrtpo"]
    plan["chosen"] = {"lr": {}, "seeds": 4, "seed_offset": 100}
    for m in ("gdpo", "mrtpo"):
        parts = [runs.shard_runs(plan, "main", (k, 2), methods=[m]) for k in (0, 1)]
        assert [[r.seed for r in p] for p in parts] == [[100, 102], [101, 103]]
    both = [runs.shard_runs(plan, "main", (k, 2)) for k in (0, 1)]
    assert sorted(r.name for p in both for r in p) == sorted(r.name for r in runs.schedule(plan, "main"))


def test_a_control_arms_own_reward_is_compared_on_its_own():
    from _credit_report import markdown, summarize

    plan = plans.default_plan()
    plan["arms"] = [dict(plan["arms"][0], add_verifiers=["slots.weather"])]

    def rec(method, seed, weather):
        r = _record(method, 5e-4, seed, [0.5, 0.5])
        r["rows"] = [dict(row, rewards={"slots.weather": w}) for row, w in zip(r["rows"], weather)]
        return r

    records = [rec("gdpo", s, [0.8, 1.0]) for s in (0, 1)]
    records += [rec("mrtpo", 0, [0.6, 0.8]), rec("mrtpo", 1, [0.5, 0.7])]
    s = summarize(plan, records)["slots"]
    p = s["vs_reference_by_reward"]["slots.weather"]["mrtpo"]
    assert p["per_seed"] == pytest.approx([-0.2, -0.3]) and p["n"] == 2
    assert "on `slots.weather` alone" in markdown({"slots": s}, plan, "main", "cmd")


def test_relevance_by_arm_lists_each_arms_controls():
    from _credit_report import relevance_by_arm_markdown

    r = {"rows": 48, "uniform_mass": 0.461, "none": {"top1": 1.0, "mass": 0.825}, "kl": {"top1": 0.5, "mass": 0.2}}
    text = relevance_by_arm_markdown({"tool_calling": dict(r, command="python studies/credit/credit.py relevance")})
    row = [line for line in text.splitlines() if line.startswith("| `tool_calling`")]
    assert row == [
        "| `tool_calling` | 48 | 0.461 | 1.00, 0.825 | — | 0.50, 0.200 | `python studies/credit/credit.py relevance` |"
    ]
    assert relevance_by_arm_markdown({}) == ""


def test_heldout_reward_averages_each_prompts_own_rewards():
    """IFEval's prompts carry different instructions: a prompt is scored on its own, not on the arm's union (whose
    other instructions lack their arguments and score NaN)."""
    from types import SimpleNamespace

    from mrtpo_viz.tasks import get_verifier, load_examples

    exs = load_examples("instruction_following", "test")[:3]
    union = sorted({v for e in exs for v in e.verifiers})
    assert any(set(union) - set(e.verifiers) for e in exs)  # the union is wider than some prompt's own
    text = "A short answer."

    class Fixed:
        def generate_group(self, example, n, **kw):
            return [SimpleNamespace(text=text, token_ids=[1, 2, 3])]

    got = runs.heldout_reward(Fixed(), exs, union, 160, 0)
    want = sum(sum(get_verifier(v).score(text, e) for v in e.verifiers) / len(e.verifiers) for e in exs) / 3
    assert got == {"mean_reward": pytest.approx(want), "truncated": 0.0} and 0.0 <= want <= 1.0


def test_the_cli_names_the_plans_arms_when_an_arm_is_unknown_and_refuses_a_non_slots_arm_for_policy(tmp_path):
    """A mistyped arm gets a message that lists the plan's arms (nothing is written); `policy` on a bundled arm
    points to `lengths`, which measures it."""
    import credit

    plan = plans.default_plan()
    plan["arms"].append(dict(plan["arms"][0], key="tool_calling", task="tool_calling", checkpoint="tiny-mrtpo"))
    path = plans.write_plan(tmp_path / "plan.json", plan)
    for argv in (["policy", "--arm", "slotz"], ["lengths", "--arms", "slotz"], ["relevance", "--arm", "slotz"]):
        with pytest.raises(SystemExit, match=r"no arm 'slotz' in the plan; its arms: \['slots', 'tool_calling'\]"):
            credit.main(["--plan", str(path), *argv])
    with pytest.raises(SystemExit, match="not a slots arm: `credit.py lengths --arms tool_calling`"):
        credit.main(["--plan", str(path), "policy", "--arm", "tool_calling"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]
