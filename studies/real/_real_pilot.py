"""The real-model arm's pilots, written before the plan (``real.py pilot``, ``pilot-lr``, ``step-cost``): the start
policy's pass rate per constraint type and its lengths, the learning-rate pilot on pilot seeds, and the CPU cost of a
step in the project's loop against ``MRTPOTrainer``. They use the pilot pool and pilot seeds only."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import _real_task as task

ROOT = Path(__file__).resolve().parents[2]
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
PILOT_LR_RATES = (1e-5, 3e-5, 1e-4)
"""The candidate rates (AdamW; the earlier SmolLM2 arm barely moved in 16 steps at 1e-5)."""
LR_TOLERANCE = 0.02
"""How far below the start policy's pilot evaluation pass rate a rate may leave GDPO and still count as stable."""


def choose_rate(start: float, runs: list[dict]) -> float | None:
    """The rule, fixed before the learning-rate pilot ran: the largest candidate rate at which every GDPO pilot
    run (pilot seeds) finished without diverging and left the pilot evaluation pass rate no more than
    :data:`LR_TOLERANCE` below the start policy's; None when no rate qualifies."""
    ok = {}
    for r in runs:
        if r["method"] != "gdpo" or r["lr"] not in PILOT_LR_RATES:
            continue
        end = r["heldout"].get(str(r["settings"]["steps"]), {}).get("pass_rate")
        good = not r.get("diverged") and end is not None and end >= start - LR_TOLERANCE
        ok[r["lr"]] = ok.get(r["lr"], True) and good
    stable = [lr for lr, good in ok.items() if good]
    return max(stable) if stable else None


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
