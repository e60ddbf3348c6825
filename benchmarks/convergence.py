"""Convergence of GRPO, GDPO and MRTPO (raw and controlled relevance) on the bundled policy, three task families.

Usage: python benchmarks/convergence.py [--cpu-budget-min 35] [--deadline-min 60] [--seeds 3] [--control others]
[--checkpoint DIR_OR_NAME] [--out benchmarks/results]

``--checkpoint`` trains another policy (a folder or a known model's name) instead of the bundled one; its results
name it (the ``model`` column, the title).

All runs (3 tasks x 4 variants x seeds, each a private copy of the policy) advance one step at a time, in turn,
so that every run has the same number of steps whenever the benchmark stops: after ``--max-steps``, or when this
process has used ``--cpu-budget-min`` of CPU time (one thread), or at the wall-clock ``--deadline-min`` (the
machine is shared; CPU time is what the budget means). Every method of a seed sees the same prompts and sampling
seeds. Step time is measured as this process's CPU time per step (robust to other load) and as wall time per phase.

Writes ``benchmarks/results/convergence.csv`` (one row per step), ``convergence.md`` (outcome, spread over seeds,
step-time cost of MRTPO over GDPO, sizes), ``convergence.json``, ``convergence.html`` and ``convergence.png``
(with matplotlib).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

from mrtpo_viz.names import TASKS  # noqa: E402
from mrtpo_viz.tasks.data import BUNDLED_POLICY_DIR  # noqa: E402
from mrtpo_viz.training.config import TrainConfig  # noqa: E402
from mrtpo_viz.training.loop import train  # noqa: E402
from mrtpo_viz.training.report import parse_variant, summarize  # noqa: E402
from mrtpo_viz.viz.training import reward_curves_figure, write_png  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
POLICY = BUNDLED_POLICY_DIR
BASE = TrainConfig(checkpoint=str(POLICY), group_size=4, prompts_per_step=2, max_new_tokens=40, lr=5e-4,
                   threads=1, save_every=0)
"""Shared settings of every run (method, control, task, seed and steps vary)."""


def policy_copy(dest: Path, source: Path = POLICY) -> str:
    """Copy the policy to ``dest`` (the bundled one may be rebuilt while the benchmark runs); returns its sha256."""
    import hashlib
    import shutil

    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source, dest)
    return hashlib.sha256((dest / "model.safetensors").read_bytes()).hexdigest()[:16]


def interleaved(runs: dict, max_steps: int, cpu_budget: float, deadline: float, log) -> tuple[list, dict, int]:
    """Advance every run one step in turn until a limit; returns metrics rows, CPU seconds per step, steps done."""
    rows, cpu, wall0, cpu0 = [], {k: [] for k in runs}, time.perf_counter(), time.process_time()
    steps = 0
    for step in range(max_steps):
        round_cpu = time.process_time()
        for key, gen in runs.items():
            t = time.process_time()
            m = next(gen)
            cpu[key].append(time.process_time() - t)
            rows.append({**m.to_row(), "task": key[0], "variant": key[1], "seed": key[2]})
        steps = step + 1
        used, round_cpu = time.process_time() - cpu0, time.process_time() - round_cpu
        elapsed = time.perf_counter() - wall0
        log(f"[{elapsed:6.0f}s wall, {used:6.0f}s cpu] step {step} done; mean reward "
            + " ".join(f"{k[0][:4]}/{k[1]}/{k[2]}={r['reward/mean']:.2f}" for k, r in zip(runs, rows[-len(runs):])
                       if k[2] == 0))
        round_wall = elapsed / steps
        if used + round_cpu > cpu_budget or elapsed + round_wall > deadline:
            break
    for gen in runs.values():
        gen.close()
    return rows, cpu, steps


def verdict(s: dict, a: str, b: str) -> str:
    """One honest sentence comparing variant ``a`` with ``b`` on final mean reward and steps to threshold."""
    va, vb = s["variants"][a], s["variants"][b]
    fa, fb = va["final"]["reward/mean"], vb["final"]["reward/mean"]
    spread = max(fa["std"], fb["std"], 1e-9)
    diff = fa["mean"] - fb["mean"]
    if abs(diff) <= spread:
        final = f"final mean reward {fa['mean']:.3f} vs {fb['mean']:.3f}: within the spread over seeds (±{spread:.3f})"
    else:
        final = (f"final mean reward {fa['mean']:.3f} vs {fb['mean']:.3f}: {a} {'higher' if diff > 0 else 'lower'} "
                 f"by more than the spread over seeds (±{spread:.3f})")
    sa, sb = va["steps_to_threshold"], vb["steps_to_threshold"]
    pa, pb = sa["per_seed"], sb["per_seed"]
    faster = sum(1 for x, y in zip(pa, pb) if x is not None and (y is None or x < y))
    slower = sum(1 for x, y in zip(pa, pb) if y is not None and (x is None or y < x))
    return (f"{a} vs {b}: {final}; reached the threshold first in {faster} of {len(pa)} seeds, later in "
            f"{slower} (steps: {a} {pa}, {b} {pb}).")


def task_section(task: str, s: dict, control: str) -> list[str]:
    ctrl = f"mrtpo:{control}"
    lines = [f"### {task}", "", f"Threshold: mean reward {s['threshold']:.3f} (half-way from the start to the best "
             f"final reward; trailing mean over {s['window']} steps).", "",
             "| variant | final mean reward (± std over seeds) | final all-pass | steps to threshold (per seed) "
             "| s/step (wall) |", "|---|---|---|---|---|"]
    for name, v in s["variants"].items():
        f, ap, st = v["final"]["reward/mean"], v["final"]["all_pass"], v["steps_to_threshold"]
        lines.append(f"| {name} | {f['mean']:.3f} ± {f['std']:.3f} (min {f['min']:.3f}, max {f['max']:.3f}) | "
                     f"{ap['mean']:.3f} ± {ap['std']:.3f} | {st['per_seed']} | {v['step_seconds']:.2f} |")
    lines += [""] + [f"- {verdict(s, a, b)}" for a, b in (("mrtpo", "gdpo"), ("mrtpo", "grpo"), (ctrl, "gdpo"))
                     if a in s["variants"] and b in s["variants"]]
    return lines + [""]


def step_time_section(cpu: dict, summaries: dict) -> list[str]:
    """MRTPO's step time over GDPO's: CPU time of this process (first step, which carries the setup, left out)."""
    def mean_cpu(task, variant):
        xs = [x for (t, v, _), steps in cpu.items() if t == task and v == variant for x in steps[1:]]
        return sum(xs) / max(len(xs), 1)

    lines = ["## Step time: MRTPO over GDPO (target <= 1.25x)", "",
             "CPU seconds of this process per step (one thread; the first step of each run, which carries the "
             "setup, left out), mean over seeds and steps. Wall time per phase is in the CSV (`time/*`).", "",
             "| task | GRPO | GDPO | MRTPO | MRTPO (controlled) | MRTPO / GDPO | controlled / GDPO "
             "| replay share of MRTPO's wall step |", "|---|---|---|---|---|---|---|---|"]
    for task, s in summaries.items():
        names = list(s["variants"])
        c = {v: mean_cpu(task, v) for v in names}
        ctrl = next(v for v in names if v.startswith("mrtpo:"))
        m = s["variants"]["mrtpo"]
        share = m["seconds_per_step"].get("replay", 0) / max(m["step_seconds"], 1e-9)
        lines.append(f"| {task} | {c['grpo']:.2f} | {c['gdpo']:.2f} | {c['mrtpo']:.2f} | {c[ctrl]:.2f} | "
                     f"{c['mrtpo'] / c['gdpo']:.2f}x | {c[ctrl] / c['gdpo']:.2f}x | {share:.0%} |")
    return lines + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu-budget-min", type=float, default=35.0, help="CPU time of the training (one thread)")
    ap.add_argument("--deadline-min", type=float, default=60.0, help="wall-clock limit (a shared machine)")
    ap.add_argument("--max-steps", type=int, default=60)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--control", default="others", help="relevance control of the controlled MRTPO variant")
    ap.add_argument("--runs-dir", default="/tmp/mrtpo_convergence", help="policy copy and per-run metrics")
    ap.add_argument("--checkpoint", default="tiny-mrtpo", help="the policy trained: a folder or a known name")
    ap.add_argument("--out", default=str(RESULTS), help="results folder")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    runs_dir = Path(args.runs_dir)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import checkpoint_folder

    digest = policy_copy(runs_dir / "policy", checkpoint_folder(args.checkpoint))
    variants = ["grpo", "gdpo", "mrtpo", f"mrtpo:{args.control}"]
    runs = {}
    for task in TASKS:
        for spec in variants:
            method, control = parse_variant(spec)
            for seed in range(args.seeds):
                cfg = dataclasses.replace(BASE, checkpoint=str(runs_dir / "policy"), task=task, method=method,
                                          control=control, seed=seed, steps=args.max_steps)
                runs[(task, spec, seed)] = train(cfg)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    rows, cpu, steps = interleaved(runs, args.max_steps, args.cpu_budget_min * 60, args.deadline_min * 60, log)
    write_results(rows, cpu, steps, args, digest, time.perf_counter() - start)
    return 0


def write_results(rows, cpu, steps, args, digest, elapsed) -> None:
    import pandas as pd
    from _common import model_label

    results = Path(args.out)
    results.mkdir(parents=True, exist_ok=True)
    model = model_label(args.checkpoint)
    df = pd.DataFrame([{"model": model, **r} for r in rows])
    df.to_csv(results / "convergence.csv", index=False)
    frames = {t: df[df["task"] == t].dropna(axis=1, how="all") for t in TASKS}
    summaries = {t: summarize(f, window=5) for t, f in frames.items()}
    html = "".join(reward_curves_figure(f, columns=["reward/mean", "all_pass"], window=3, title=t)
                   .to_html(full_html=False, include_plotlyjs=("cdn" if i == 0 else False))
                   for i, (t, f) in enumerate(frames.items()))  # plotly.js from its CDN keeps the file small
    (results / "convergence.html").write_text(f"<html><body>{html}</body></html>", encoding="utf-8")
    by_task = df.pivot_table(index=["variant", "seed", "step"], columns="task", values="reward/mean").reset_index()
    png = write_png(by_task, results / "convergence.png", columns=list(TASKS), window=3)  # a panel per task
    total_cpu = sum(sum(v) for v in cpu.values())
    lines = [f"# Convergence: GRPO, GDPO, MRTPO (raw) and MRTPO (controlled) on `{model}`", "",
             f"Produced by `python benchmarks/convergence.py`: {total_cpu / 60:.1f} min of CPU time on one thread, "
             f"{elapsed / 60:.1f} min wall on a shared 2-core machine. Policy: `{model}` "
             f"(model.safetensors sha256 {digest}...). Sizes: {steps} steps per run (all runs advance in turn, so "
             f"every run has the same number of steps when the budget ends), {args.seeds} seeds, "
             f"{BASE.prompts_per_step} prompts x G = {BASE.group_size} completions per step from the train split, "
             f"max {BASE.max_new_tokens} new tokens, temperature 1, lr {BASE.lr}, AdamW, clip 0.2, no KL, "
             f"alpha = gamma = 1; controlled variant: relevance control `{args.control}`. Every method of a seed "
             "sees the same prompts and sampling seeds. Curves: `convergence.html`"
             + (", `convergence.png`." if png else "."), ""]
    for task in TASKS:
        lines += task_section(task, summaries[task], args.control)
    lines += step_time_section(cpu, summaries)
    (results / "convergence.md").write_text("\n".join(lines), encoding="utf-8")
    (results / "convergence.json").write_text(json.dumps({"steps": steps, "summaries": summaries,
                                                          "cpu_per_step": {"/".join(map(str, k)): v
                                                                           for k, v in cpu.items()}}, indent=1),
                                              encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
