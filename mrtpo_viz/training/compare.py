"""Run several methods x seeds on one task (what ``python -m mrtpo_viz train`` runs).

Each run trains its own copy of the policy in ``OUT/<variant>-seed<s>/`` (metrics CSV and checkpoints there, so
an interrupted comparison resumes where it stopped); the CLI then writes the combined ``OUT/metrics.csv``,
``curves.html``, ``curves.png`` (with matplotlib) and ``summary.{md,json}`` (statistics: :mod:`.report`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional
from collections.abc import Callable, Sequence

from .checkpoints import METRICS_FILE
from .config import TrainConfig
from .loop import train
from .report import parse_variant, variant_label


def run_variants(
    base: TrainConfig,
    variants: Sequence[str],
    seeds: Sequence[int],
    out: Path,
    *,
    examples=None,
    policy=None,
    on_step: Optional[Callable] = None,
):
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
            if (run_dir / METRICS_FILE).is_file():
                frames.append(pd.read_csv(run_dir / METRICS_FILE).assign(variant=label, seed=seed))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
