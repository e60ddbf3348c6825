"""The credit study's figure: per arm, the mean training reward per step of each method (mean over its seeds) and
each method's paired AUC difference from GDPO with its 95% t interval. Written as ``.png`` (matplotlib, when
installed) beside the report; the numbers are the report's (``summarize``)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

COLORS = {
    "gdpo": "#555555",
    "mrtpo:oracle-mask": "#1f77b4",
    "mrtpo:oracle": "#17becf",
    "mrtpo": "#d62728",
    "mrtpo-mask": "#ff7f0e",
    "mrtpo@others": "#9467bd",
    "mrtpo@kl": "#8c564b",
    "mrtpo-mask@others": "#e377c2",
    "mrtpo:placebo-mask": "#7f7f7f",
    "grpo": "#2ca02c",
}


def curves(records: list[dict], reward: str | None = None) -> dict:
    """``{arm: {method: (mean curve over seeds, seed count)}}``; ``reward`` picks one reward's curve instead of the
    mean over rewards."""
    by = defaultdict(lambda: defaultdict(list))
    for rec in records:
        if reward is None:
            c = [r["mean_reward"] for r in rec["rows"]]
        elif reward in rec["rows"][0].get("rewards", {}):
            c = [r["rewards"][reward] for r in rec["rows"]]
        else:
            continue
        by[rec["arm"]][rec["method"]].append(c)
    return {a: {m: (np.mean(cs, axis=0), len(cs)) for m, cs in ms.items()} for a, ms in by.items()}


def paired_gaps(records: list[dict], arm: str, ref: str = "gdpo") -> dict:
    """``{method: per-step mean of (method's mean reward - the reference's)}`` over the seeds both ran on the same
    build of the policy."""
    runs = defaultdict(dict)
    for rec in records:
        if rec["arm"] == arm:
            runs[rec["method"]][rec["seed"]] = rec
    out = {}
    for m, seeds in runs.items():
        common = [s for s in seeds if s in runs.get(ref, {}) and seeds[s].get("policy") == runs[ref][s].get("policy")]
        if m == ref or not common:
            continue
        gaps = [
            [a["mean_reward"] - b["mean_reward"] for a, b in zip(seeds[s]["rows"], runs[ref][s]["rows"])]
            for s in common
        ]
        out[m] = np.mean(gaps, axis=0)
    return out


def write_png(summary: dict, records: list[dict], path: Path, extra_reward: str = "slots.weather") -> bool:
    """One row per arm: mean reward per step, then (where the arm has it) ``extra_reward``'s curve, then the paired
    differences from GDPO. Returns whether a file was written (False without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    arms = list(summary)
    mean_c, extra_c = curves(records), curves(records, extra_reward)
    fig, axes = plt.subplots(len(arms), 3, figsize=(13, 3.4 * len(arms)), squeeze=False)
    for row, arm in zip(axes, arms):
        for m, (c, n) in sorted(mean_c.get(arm, {}).items()):
            row[0].plot(range(len(c)), c, label=f"{m} ({n})", color=COLORS.get(m), linewidth=1.4)
        row[0].set_title(f"{arm}: mean reward per step (mean over seeds)", fontsize=9)
        row[0].set_xlabel("step")
        row[0].legend(fontsize=7, loc="lower right")
        if arm in extra_c:
            for m, (c, _n) in sorted(extra_c[arm].items()):
                row[1].plot(range(len(c)), c, label=m, color=COLORS.get(m), linewidth=1.4)
            row[1].set_title(f"{arm}: {extra_reward} (whole-response reward)", fontsize=9)
            row[1].set_xlabel("step")
        else:
            for m, c in sorted(paired_gaps(records, arm).items()):
                row[1].plot(range(len(c)), c, label=m, color=COLORS.get(m), linewidth=1.2)
            row[1].axhline(0, color="grey", linewidth=0.8)
            row[1].set_title(f"{arm}: mean reward minus GDPO's, paired by seed, per step", fontsize=9)
            row[1].set_xlabel("step")
        diffs = summary[arm]["vs_reference"]
        names = list(diffs)
        for i, m in enumerate(names):
            p = diffs[m]
            row[2].errorbar(
                p["mean"],
                i,
                xerr=[[p["mean"] - p["t_lo"]], [p["t_hi"] - p["mean"]]],
                fmt="o",
                capsize=3,
                color=COLORS.get(m, "black"),
            )
        row[2].axvline(0, color="grey", linewidth=0.8)
        row[2].set_yticks(range(len(names)), [f"{m} (n {diffs[m]['n']})" for m in names], fontsize=8)
        row[2].set_title(f"{arm}: AUC - GDPO, paired (95% t)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
