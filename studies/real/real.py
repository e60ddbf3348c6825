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

RESULTS = Path(__file__).resolve().parent / "results"
PILOT = RESULTS / "pilot_pass.jsonl"
PILOT_SUMMARY = RESULTS / "pilot_pass.json"
PILOT_SETTINGS = {"prompts": 64, "group_size": 4, "temperature": 0.7, "top_p": 1.0, "max_new_tokens": 256}
"""The pass-rate pilot: 64 pilot-pool prompts x 4 samples at the training temperature, up to 256 new tokens (the
pass rates and the truncated share at shorter budgets come from the same samples' prefixes)."""
BUDGETS = (128, 160, 192, 224, 256)


def _score_prefix(policy, ids: list[int], ex, budget: int) -> list[int]:
    from mrtpo_viz.tasks import get_verifier

    text = policy.tokenizer.decode(ids[:budget], skip_special_tokens=True)
    return [int(get_verifier(v).score(text, ex) == 1.0) for v in ex.verifiers]


def cmd_pilot(args) -> int:
    """The start policy on the pilot pool: per sample its constraint types, length and verdicts at each budget
    (one JSON line per prompt, resumable), then the summary."""
    import torch

    from mrtpo_viz.policy import load_policy

    torch.set_num_threads(args.threads)
    s = PILOT_SETTINGS
    examples = task.draw_pool("pilot", s["prompts"])
    RESULTS.mkdir(parents=True, exist_ok=True)
    done = {json.loads(ln)["i"] for ln in PILOT.read_text().splitlines()} if PILOT.is_file() else set()
    policy = load_policy(task.MODEL)
    for i, ex in enumerate(examples):
        if i in done:
            continue
        t0, c0 = time.time(), time.process_time()
        group = policy.generate_group(
            ex,
            s["group_size"],
            max_new_tokens=s["max_new_tokens"],
            temperature=s["temperature"],
            top_p=s["top_p"],
            seed=900_000 + i,
        )
        rows = [
            {"length": len(c.token_ids), "passed": {b: _score_prefix(policy, c.token_ids, ex, b) for b in BUDGETS}}
            for c in group
        ]
        line = {
            "i": i,
            "prompt": ex.prompt,
            "kinds": [task.kind(v) for v in ex.verifiers],
            "samples": rows,
            "wall_s": round(time.time() - t0, 2),
            "cpu_s": round(time.process_time() - c0, 2),
        }
        with PILOT.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")
        print(f"pilot prompt {i + 1}/{len(examples)}: {line['wall_s']} s", flush=True)
    summary = pilot_summary([json.loads(ln) for ln in PILOT.read_text().splitlines()])
    PILOT_SUMMARY.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({b: summary["budgets"][str(b)]["kept"] for b in BUDGETS}, indent=1))
    return 0


def pilot_summary(lines: list[dict]) -> dict:
    """Per budget: the truncated share and each constraint type's pass rate (and the kept types); lengths."""
    lengths = sorted(s["length"] for ln in lines for s in ln["samples"])
    n = len(lengths)
    out = {
        "settings": PILOT_SETTINGS,
        "prompts": len(lines),
        "samples": n,
        "length": {"median": lengths[n // 2], "p90": lengths[int(0.9 * n)], "max": lengths[-1]},
        "cpu_s_per_prompt": round(sum(ln["cpu_s"] for ln in lines) / max(len(lines), 1), 2),
        "budgets": {},
    }
    for b in BUDGETS:
        samples = [{"kinds": ln["kinds"], "passed": s["passed"][str(b)]} for ln in lines for s in ln["samples"]]
        rates = task.pass_rates(samples)
        out["budgets"][str(b)] = {
            "truncated": round(sum(x >= b for x in lengths) / n, 4),
            "rates": rates,
            "kept": task.kept_kinds(rates),
        }
    return out


PILOT_LR = RESULTS / "pilot_lr"
PILOT_LR_SETTINGS = {"steps": 10, "prompts_per_step": 2, "group_size": 4, "temperature": 0.7, "top_p": 1.0}
"""The learning-rate pilot's runs: GDPO on pilot seeds (900, 901), 10 steps, on the training pool, evaluated
greedily on 48 pilot-pool prompts (never the main held-out set) before and after."""
PILOT_LR_EVAL = 48


def pilot_examples(kinds: list[str], budget: int):
    """The learning-rate pilot's training prompts (the training pool) and evaluation prompts (the pilot pool)."""
    train = task.draw_pool("train", 256, kinds)
    return train, task.draw_pool("pilot", PILOT_LR_EVAL, kinds, exclude=train)


def cmd_pilot_lr(args) -> int:
    """One learning-rate pilot run (``--method``, ``--lr``, ``--seed`` among the pilot seeds) and, once, the start
    policy's greedy pass rate on the pilot evaluation prompts."""
    import torch

    import _real_runs as runs
    from mrtpo_viz.policy import load_policy

    if args.seed not in (900, 901):
        raise SystemExit("pilot seeds are 900 and 901 (the main runs use others)")
    summary = json.loads(PILOT_SUMMARY.read_text())
    budget = args.max_new_tokens
    kinds = summary["budgets"][str(budget)]["kept"]
    train, evaluation = pilot_examples(kinds, budget)
    PILOT_LR.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    start = PILOT_LR / f"start-b{budget}.json"
    if not start.is_file():
        c = time.process_time()
        rec = runs.heldout_pass(load_policy(task.MODEL), evaluation, budget)
        start.write_text(json.dumps(dict(rec, cpu_s=round(time.process_time() - c, 1)), indent=1) + "\n")
    settings = dict(PILOT_LR_SETTINGS, max_new_tokens=budget)
    rec = runs.train_one(args.method, args.seed, args.lr, settings, train, evaluation, eval_at=[settings["steps"]])
    rec["kinds"] = kinds
    path = PILOT_LR / f"{args.method}-lr{args.lr:g}-s{args.seed}-b{budget}.json"
    path.write_text(json.dumps(rec, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


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


STEP_COST = RESULTS / "step_cost.json"


def cmd_step_cost(args) -> int:
    """CPU seconds per step and per completion token: the project's loop (GDPO, MRTPO) and ``MRTPOTrainer`` (TRL),
    the same model, prompts, group and budget, on the pilot pool (``--steps`` steps each, one thread)."""
    import warnings

    import torch

    import _real_runs as runs
    from mrtpo_viz.integrations.trl import MRTPOConfig, MRTPOTrainer, trl_dataset
    from mrtpo_viz.training.rollouts import union_verifiers

    torch.set_num_threads(args.threads)
    s = dict(PILOT_SETTINGS, steps=args.steps, prompts_per_step=2, max_new_tokens=args.max_new_tokens)
    pool = task.draw_pool("pilot", 64)
    out = {"settings": s, "threads": args.threads, "cpu": _cpu(), "loop": {}, "trl": {}}
    for method in ("gdpo", "mrtpo"):
        rec = runs.train_one(method, 990, 1e-6, s, pool, [], threads=args.threads, eval_at=[])
        cpu = sum(r["cpu_s"] for r in rec["rows"])
        tokens = sum(r["mean_length"] * s["prompts_per_step"] * s["group_size"] for r in rec["rows"])
        out["loop"][method] = {
            "cpu_s_per_step": round(cpu / args.steps, 2),
            "cpu_ms_per_token": round(1000 * cpu / tokens, 2),
            "mean_length": round(tokens / args.steps / 8, 1),
        }
        print(method, out["loop"][method], flush=True)
    names = union_verifiers(pool)
    config = MRTPOConfig(
        output_dir=str(RESULTS / "_trl_step_cost"),
        seed=990,
        use_cpu=True,
        bf16=False,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        max_steps=args.steps,
        learning_rate=1e-6,
        per_device_train_batch_size=2 * s["group_size"],
        num_generations=s["group_size"],
        max_completion_length=s["max_new_tokens"],
        temperature=s["temperature"],
        log_tokens=False,
        logging_steps=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = MRTPOTrainer(task.MODEL, names, args=config, train_dataset=trl_dataset(pool))
        c = time.process_time()
        trainer.train()
        cpu = time.process_time() - c
    lengths = [h["completions/mean_length"] for h in trainer.state.log_history if "completions/mean_length" in h]
    tokens = sum(lengths) * 2 * s["group_size"]
    out["trl"]["mrtpo"] = {
        "cpu_s_per_step": round(cpu / args.steps, 2),
        "cpu_ms_per_token": round(1000 * cpu / tokens, 2),
        "mean_length": round(sum(lengths) / len(lengths), 1),
    }
    print("trl", out["trl"]["mrtpo"], flush=True)
    import shutil

    shutil.rmtree(RESULTS / "_trl_step_cost", ignore_errors=True)
    out["trl_over_loop_per_token"] = round(
        out["trl"]["mrtpo"]["cpu_ms_per_token"] / out["loop"]["mrtpo"]["cpu_ms_per_token"], 2
    )
    STEP_COST.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


def _cpu() -> dict:
    """The CPU model, its flags of interest and the load average (figures depend on all three)."""
    import platform

    model, flags = platform.processor(), []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                flags = sorted(have & {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})
                break
    except OSError:
        pass
    return {"model": model, "flags": flags, "cores": os.cpu_count(), "load_avg": list(os.getloadavg())}


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


def cmd_plan(args) -> int:
    """Write the plan from the pilots and the choices given (budget, rate, steps), before any main run."""
    stats = _stats()
    if RUNS.is_dir() and any(RUNS.glob("*.json")):
        raise SystemExit(f"{RUNS} already holds main runs: the plan precedes them")
    pilot = json.loads(PILOT_SUMMARY.read_text())
    b = str(args.max_new_tokens)
    kinds = pilot["budgets"][b]["kept"]
    lr_runs = [json.loads(f.read_text()) for f in sorted(PILOT_LR.glob(f"*-b{b}.json"))]
    start = json.loads((PILOT_LR / f"start-b{b}.json").read_text())
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
        "lr_rule": "the largest pilot rate at which GDPO (pilot seeds 900, 901; 10 steps) kept its pilot "
        "evaluation pass rate within 0.02 of the start policy's and never diverged; one rate for both arms",
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
