"""The real-model arm: does MRTPO beat GDPO on SmolLM2-135M-Instruct, multi-constraint instruction following,
held-out prompts? (plan: ``studies/real/results/plan.json``, committed before any main run).

Subcommands::

    python studies/real/real.py pilot                  # the start policy's pass rate per constraint type, lengths
    python studies/real/real.py pilot-lr --lr 1e-5     # one learning-rate pilot run (pilot seeds only)
    python studies/real/real.py plan                   # the plan: commit it before any main run
    python studies/real/real.py run --shard 0/2 &      # every scheduled run, resumable (one thread each)
    python studies/real/real.py run --method mrtpo --seed 300   # exactly one run
    python studies/real/real.py report                 # report.md / report.json, the plan's one look

Pilot files (``results/pilot_*.json``) are the only results written before the plan; they use the pilot pool and
pilot seeds, which the main runs never use.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
for _k, _v in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(_k, _v)

import _real_task as task  # noqa: E402
from _real_pilot import (  # noqa: E402
    PILOT_LR,
    PILOT_SETTINGS,
    PILOT_SUMMARY,
    STEP_COST,
    _cpu,
    choose_rate,
    cmd_pilot,
    cmd_pilot_lr,
    cmd_step_cost,
)

RESULTS = Path(__file__).resolve().parent / "results"
RELEVANCE = RESULTS / "relevance.json"


def cmd_relevance(args) -> int:
    """Where the start policy's raw JS relevance puts each constraint's mass on its own responses: per constraint
    type, the mean share of MRTPO's token weights on the constraint's decision spans against the spans' share of
    the tokens (uniform, GDPO). One sample per training-pool prompt at the training temperature and budget."""
    import numpy as np
    import torch

    from mrtpo_viz import load_policy, replay
    from mrtpo_viz.viz.credit_compare import compare_credits

    torch.set_num_threads(args.threads)
    plan = _plan()
    train, _ = plan_examples(plan)
    s = plan["settings"]
    policy = load_policy(task.MODEL)
    shares: dict = {}
    c0 = time.process_time()
    for i, ex in enumerate(train[: args.prompts]):
        (c,) = policy.generate_group(
            ex, 1, max_new_tokens=s["max_new_tokens"], temperature=s["temperature"], seed=700_000 + i
        )
        rel = replay(policy, ex, c.text, list(ex.verifiers))
        for v in rel.verifiers:
            comp = compare_credits(rel, v, ["mrtpo"])
            if comp.uniform_share:
                shares.setdefault(task.kind(v), []).append((comp.span_share[0], comp.uniform_share))
    table = {
        k: {
            "pairs": len(v),
            "mass_on_spans": round(float(np.mean([m for m, _ in v])), 4),
            "uniform": round(float(np.mean([u for _, u in v])), 4),
            "ratio": round(float(np.mean([m for m, _ in v]) / np.mean([u for _, u in v])), 3),
        }
        for k, v in sorted(shares.items())
    }
    out = {"prompts": args.prompts, "cpu_s": round(time.process_time() - c0, 1), "cpu": _cpu(), "by_kind": table}
    RELEVANCE.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


PLAN = RESULTS / "plan.json"
RUNS = RESULTS / "runs"
METHODS = ("gdpo", "mrtpo")
SEEDS = tuple(range(300, 308))
ALPHA = 0.05
HELDOUT = 96
TRAIN = 256


def _stats():
    sys.path.insert(0, str(ROOT / "studies" / "credit"))
    import _credit_stats

    return _credit_stats


def rate_pilot_runs(budget: str) -> list[dict]:
    """The learning-rate pilot's runs at a completion budget (not the start policy's file beside them)."""
    return [json.loads(f.read_text()) for f in sorted(PILOT_LR.glob(f"*-lr*-b{budget}.json"))]


def cmd_plan(args) -> int:
    """Write the plan from the pilots and the choices given (budget, rate, steps), before any main run."""
    stats = _stats()
    if RUNS.is_dir() and any(RUNS.glob("*.json")):
        raise SystemExit(f"{RUNS} already holds main runs: the plan precedes them")
    pilot = json.loads(PILOT_SUMMARY.read_text())
    b = str(args.max_new_tokens)
    kinds = pilot["budgets"][b]["kept"]
    lr_runs = rate_pilot_runs(b)
    start = json.loads((PILOT_LR / f"start-b{b}.json").read_text())
    chosen = choose_rate(start["pass_rate"], lr_runs)
    if chosen is None or chosen != args.lr:
        raise SystemExit(f"the pilot's rule gives lr {chosen}, not {args.lr:g}")
    at_rate = [r for r in lr_runs if r["method"] == "gdpo" and r["lr"] == args.lr]
    end = [r["heldout"][str(r["settings"]["steps"])]["pass_rate"] for r in at_rate]
    sd = float(__import__("numpy").std(end, ddof=1)) if len(end) > 1 else float("nan")
    sd_d = (2**0.5) * sd  # the difference of two runs with that spread, no correlation assumed (conservative)
    mdd = stats.detectable(len(SEEDS), sd_d, power=0.8, alpha=2 * ALPHA)  # one-sided at ALPHA ~ two-sided at 2 ALPHA
    train = task.draw_pool("train", TRAIN, kinds)
    heldout = task.draw_pool("heldout", HELDOUT, kinds, exclude=train)
    plan = {
        "question": "On SmolLM2-135M-Instruct and multi-constraint instruction following, does MRTPO (raw JS, the "
        "default normalization) beat GDPO on held-out prompts?",
        "model": task.MODEL,
        "trainer": "the project's loop (mrtpo_viz.training), one thread per run; see step_cost.json and "
        "tests/integrations/test_trl_rows.py (same advantages as MRTPOTrainer on the same rollouts)",
        "task": {
            "family": "instruction_following (the project's generator, IFEval instructions and strict verdicts)",
            "constraints_per_prompt": [task.MIN_CONSTRAINTS, task.MAX_CONSTRAINTS],
            "kinds": kinds,
            "kind_rule": "pilot pass rate in [0.2, 0.8] on >= 12 samples at the training temperature and budget",
            "pool_seeds": task.POOL_SEEDS,
            "train_prompts": len(train),
            "heldout_prompts": len(heldout),
            "disjoint": "held-out prompts differ in text from every training prompt",
        },
        "settings": {
            "steps": args.steps,
            "prompts_per_step": 2,
            "group_size": 4,
            "temperature": PILOT_SETTINGS["temperature"],
            "top_p": 1.0,
            "max_new_tokens": args.max_new_tokens,
            "dtype": "float32",
        },
        "arms": {
            "gdpo": {"method": "gdpo"},
            "mrtpo": {"method": "mrtpo", "metric": "js", "control": "none", "alpha": 1.0, "gamma": 1.0},
        },
        "lr": args.lr,
        "budget_choice": args.budget_note,
        "lr_rule": "_real_pilot.choose_rate: the largest of 1e-5, 3e-5, 1e-4 at which every GDPO pilot run (pilot "
        "seeds, 10 steps) never diverged and ended no more than 0.02 below the start policy's pilot evaluation "
        "pass rate; one rate for both arms",
        "seeds": list(SEEDS),
        "extension": "none: 8 seeds per arm, fixed in advance",
        "primary": {
            "endpoint": "held-out pass rate after the last step: greedy decoding, every (prompt, constraint) pair "
            "of the held-out prompts checked with the strict IFEval verdict, mean over pairs",
            "analysis": f"paired by seed, d = MRTPO - GDPO; one-sided paired t test at alpha {ALPHA}; the mean "
            "with its 95% t interval",
            "minimum_detectable": {
                "value": None if mdd != mdd else round(mdd, 4),
                "power": 0.8,
                "sd_runs": None if sd != sd else round(sd, 4),
                "sd_difference_assumed": None if sd_d != sd_d else round(sd_d, 4),
                "from": "the GDPO pilot runs at the chosen rate (their held-out-like evaluation after 10 steps)",
            },
        },
        "secondary": [
            "training-reward AUC (mean over steps of the step's mean per-verifier reward), paired",
            "held-out pass rate at half horizon, paired",
            "held-out pass rate per constraint type",
            "truncation share per arm (training samples; held-out greedy responses)",
            "wall and CPU seconds per step per method",
        ],
        "stopping": "one look, after all 16 runs; no interim comparison is printed. A run that diverges stops, is "
        "evaluated as it stands and stays in the analysis",
        "order": "seed-major: (gdpo, mrtpo) for seed 300, then 301, ...: a sitting cut short leaves whole pairs",
        "start_policy": {
            "pilot_eval_pass_rate": start["pass_rate"],
            "pilot_truncated_at_budget": pilot["budgets"][b]["truncated"],
        },
        "pilot_files": sorted(
            str(f.relative_to(ROOT)) for f in [PILOT_SUMMARY, STEP_COST, *PILOT_LR.glob("*.json")] if f.is_file()
        ),
    }
    PLAN.write_text(json.dumps(plan, indent=1) + "\n")
    print(json.dumps(plan, indent=1))
    return 0


def _plan() -> dict:
    if not PLAN.is_file():
        raise SystemExit(f"no plan at {PLAN}: run `real.py plan` and commit it first")
    return json.loads(PLAN.read_text())


def schedule(plan: dict) -> list[tuple[str, int]]:
    """Every main run, seed-major."""
    return [(m, seed) for seed in plan["seeds"] for m in plan["arms"]]


def run_path(method: str, seed: int) -> Path:
    return RUNS / f"{method}-s{seed}.json"


def plan_examples(plan: dict):
    kinds = plan["task"]["kinds"]
    train = task.draw_pool("train", plan["task"]["train_prompts"], kinds)
    return train, task.draw_pool("heldout", plan["task"]["heldout_prompts"], kinds, exclude=train)


def cmd_run(args) -> int:
    """The plan's runs without a result file (``--shard K/N``: every N-th), or exactly one (``--method --seed``).
    Prints progress, never a reward."""
    import _real_runs as runs

    plan = _plan()
    todo = schedule(plan)
    if args.method or args.seed is not None:
        todo = [(m, s) for m, s in todo if m == args.method and s == args.seed]
        if not todo:
            raise SystemExit(f"the plan has no run {args.method} seed {args.seed}")
    k, n = (int(x) for x in args.shard.split("/"))
    todo = todo[k::n]
    train, heldout = plan_examples(plan)
    RUNS.mkdir(parents=True, exist_ok=True)
    if not START.is_file():  # the start policy on the held-out set: a baseline, not a comparison of arms
        from mrtpo_viz.policy import load_policy

        c = time.process_time()
        rec = runs.heldout_pass(load_policy(task.MODEL), heldout, plan["settings"]["max_new_tokens"])
        START.write_text(json.dumps(dict(rec, cpu_s=round(time.process_time() - c, 1)), indent=1) + "\n")
    for method, seed in todo:
        path = run_path(method, seed)
        if path.is_file() and not (args.method or args.seed is not None):
            continue
        rec = runs.train_one(
            plan["arms"][method]["method"],
            seed,
            plan["lr"],
            plan["settings"],
            train,
            heldout,
            threads=args.threads,
            log=lambda line: print(line.split(":")[0], flush=True),
        )
        rec["command"] = f"python studies/real/real.py run --method {method} --seed {seed}"
        rec["cpu"] = _cpu()
        path.write_text(json.dumps(rec, indent=1) + "\n")
        print(f"wrote {path.relative_to(ROOT)}", flush=True)
    return 0


START = RESULTS / "start.json"


def cmd_report(args) -> int:
    """The plan's one look: only once every run of the plan is there."""
    import _real_report

    plan = _plan()
    records = [json.loads(f.read_text()) for f in sorted(RUNS.glob("*.json"))]
    missing = [f"{m}-s{s}" for m, s in schedule(plan) if not run_path(m, s).is_file()]
    if missing:
        print(f"{len(records)} of {len(schedule(plan))} runs done; the report waits for: {', '.join(missing)}")
        return 1
    start = json.loads(START.read_text()) if START.is_file() else None
    s = _real_report.write(plan, records, _stats(), start, RESULTS)
    print((RESULTS / "report.md").read_text())
    return 0 if s else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pilot", help="the start policy's pass rate per constraint type on the pilot pool")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(fn=cmd_pilot)
    p = sub.add_parser("pilot-lr", help="one learning-rate pilot run (pilot seeds 900, 901)")
    p.add_argument("--method", default="gdpo")
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--seed", type=int, default=900)
    p.add_argument("--max-new-tokens", type=int, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(fn=cmd_pilot_lr)
    p = sub.add_parser("plan", help="write the plan (commit it before any main run)")
    p.add_argument("--max-new-tokens", type=int, required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--budget-note", required=True, help="why this max_new_tokens (recorded in the plan)")
    p.set_defaults(fn=cmd_plan)
    p = sub.add_parser("run", help="the plan's runs (resumable; --shard K/N) or one (--method --seed)")
    p.add_argument("--shard", default="0/1")
    p.add_argument("--method", choices=METHODS)
    p.add_argument("--seed", type=int)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("report", help="the one look, once every run is done")
    p.set_defaults(fn=cmd_report)
    p = sub.add_parser("relevance", help="the start policy's JS mass on each constraint's decision spans")
    p.add_argument("--prompts", type=int, default=48)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(fn=cmd_relevance)
    p = sub.add_parser("step-cost", help="CPU per step: the project's loop against MRTPOTrainer (TRL)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.set_defaults(fn=cmd_step_cost)
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
