"""Run several methods x seeds on one task and write the comparison (``python -m mrtpo_viz train``).

Each run trains its own copy of the policy in ``OUT/<variant>-seed<s>/`` (metrics CSV and checkpoints there, so
an interrupted comparison resumes where it stopped); the combined ``OUT/metrics.csv``, ``curves.html``,
``curves.png`` (with matplotlib) and ``summary.{md,json}`` follow (see :mod:`mrtpo_viz.train_report`).
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

from .train_report import parse_variant, variant_label
from .training import TrainConfig, train


def run_variants(base: TrainConfig, variants: Sequence[str], seeds: Sequence[int], out: Path, *,
                 examples=None, policy=None, on_step: Optional[Callable] = None):
    """Train every variant with every seed; returns the combined metrics frame (with ``variant`` and ``seed``).

    Args:
        base: settings shared by all runs (method, control, seed and out_dir are replaced per run).
        variants: e.g. ``["grpo", "gdpo", "mrtpo", "mrtpo:others"]``.
        on_step: called with ``(variant, StepMetrics)`` after every step (progress output).
    """
    import pandas as pd

    frames = []
    for spec in variants:
        method, control = parse_variant(spec)
        label = variant_label(method, control)
        for seed in seeds:
            run_dir = out / f"{label.replace(':', '-')}-seed{seed}"
            cfg = dataclasses.replace(base, method=method, control=control, seed=seed, out_dir=str(run_dir))
            for metrics in train(cfg, examples=examples, policy=policy):
                if on_step is not None:
                    on_step(label, metrics)
            if (run_dir / "metrics.csv").is_file():
                frames.append(pd.read_csv(run_dir / "metrics.csv").assign(variant=label, seed=seed))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _progress(every: int) -> Callable:
    start = time.perf_counter()

    def show(label, m):
        if m.step % every == 0:
            rewards = " ".join(f"{k}={v:.2f}" for k, v in m.rewards.items())
            print(f"[{time.perf_counter() - start:7.1f}s] {label} seed {m.seed} step {m.step}: {rewards} "
                  f"all_pass={m.all_pass:.2f} ({sum(m.times.values()):.2f}s/step)", file=sys.stderr, flush=True)
    return show


def config_from_args(args) -> TrainConfig:
    """The shared TrainConfig from the ``train`` subcommand's arguments."""
    return TrainConfig(task=args.task, checkpoint=args.checkpoint, steps=args.steps, group_size=args.group_size,
                       prompts_per_step=args.prompts_per_step, lr=args.lr, max_new_tokens=args.max_new_tokens,
                       alpha=args.alpha, gamma=args.gamma, threads=args.threads, save_every=args.save_every,
                       out_dir=args.out)


def run_comparison(args) -> int:
    """``python -m mrtpo_viz train``: methods x seeds, then metrics CSV, curves (HTML, PNG) and a summary."""
    from accelerate import PartialState

    from .train_report import write_report

    variants = [v for v in args.methods.split(",") if v.strip()]
    if not variants:
        raise ValueError("--methods is empty; give e.g. grpo,gdpo,mrtpo")
    for spec in variants:  # fail before any training on a typo
        method, control = parse_variant(spec)
        TrainConfig(method=method, control=control)
    base = config_from_args(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df = run_variants(base, variants, range(args.seeds), out, on_step=_progress(max(1, args.steps // 10)))
    if not PartialState().is_main_process:  # under accelerate launch / torchrun: one report, by the main process
        return 0
    if df.empty:
        raise ValueError("no steps were run (steps = 0?)")
    summary = write_report(df, out, threshold=args.threshold, window=args.window)
    print((out / "summary.md").read_text(encoding="utf-8"))
    if not summary["png"]:
        print("note: curves.png skipped: matplotlib is not installed (plotly's PNG export needs kaleido); "
              "curves.html has the same curves", file=sys.stderr)
    print(f"wrote {out}/metrics.csv, curves.html, summary.md, summary.json", file=sys.stderr)
    return 0
