"""Comparing training runs: reward statistics per reward and method (mean and band over seeds) and a summary.

Pure functions of metrics frames (one row per step, ``StepMetrics.to_row`` columns plus ``variant``); no model.
A *variant* is a method with its relevance control, e.g. ``gdpo`` or ``mrtpo:others`` (``mrtpo`` alone means the
raw relevance of the paper).

"Steps to threshold": the first step at which a run's reward, smoothed by a trailing mean over ``window`` steps,
reaches the threshold. The default threshold is half-way from the mean starting reward (first ``window`` steps,
all runs) to the best final reward of any variant (last ``window`` steps): a level every method can be timed to.
"""

from __future__ import annotations

import math
from typing import Optional

import pandas as pd

from .. import names


def variant_label(method: str, control: str = "none") -> str:
    """``gdpo``, ``mrtpo`` (raw relevance), ``mrtpo:placebo`` (controlled relevance)."""
    return method if control == "none" else f"{method}:{control}"


def parse_variant(spec: str) -> tuple[str, str]:
    """``"mrtpo:others"`` -> ``("mrtpo", "others")``; ``"gdpo"`` -> ``("gdpo", "none")``; a registered method whose
    name has a colon (``"mrtpo:oracle"``) is that method with no control."""
    spec = spec.strip()
    if spec in names.METHODS:
        return spec, "none"
    method, _, control = spec.partition(":")
    return method, control or "none"


def reward_columns(df: pd.DataFrame) -> list[str]:
    """``reward/mean`` first, then ``all_pass``, then one column per verifier."""
    per = [c for c in df.columns if c.startswith("reward/") and c != "reward/mean"]
    return [c for c in ("reward/mean", "all_pass") if c in df.columns] + per


def curve_stats(df: pd.DataFrame, col: str, window: int = 1) -> pd.DataFrame:
    """Per variant and step: mean, min and max over seeds of ``col`` (smoothed per run by a trailing mean)."""
    smooth = (
        df.sort_values("step")
        .groupby(["variant", "seed"])[col]
        .transform(lambda s: s.rolling(window, min_periods=1).mean())
    )
    frame = df.assign(value=smooth)
    return frame.groupby(["variant", "step"])["value"].agg(["mean", "min", "max", "count"]).reset_index()


# --- summary -------------------------------------------------------------------------------------------------------


def default_threshold(df: pd.DataFrame, col: str = "reward/mean", window: int = 5) -> float:
    """Half-way from the mean starting reward to the best variant's final reward."""
    first = df[df["step"] < df["step"].min() + window][col].mean()
    last_steps = df.groupby(["variant", "seed"])["step"].transform("max") - window
    final = df[df["step"] > last_steps].groupby("variant")[col].mean()
    return float(first + 0.5 * (final.max() - first))


def steps_to_threshold(df: pd.DataFrame, threshold: float, col: str = "reward/mean", window: int = 5) -> pd.DataFrame:
    """Per run (variant, seed): the first step whose trailing-mean reward reaches ``threshold`` (NaN if never)."""
    out = []
    for (variant, seed), run in df.sort_values("step").groupby(["variant", "seed"]):
        smooth = run[col].rolling(window, min_periods=1).mean()
        hit = run["step"][smooth >= threshold]
        out.append({"variant": variant, "seed": seed, "steps": float(hit.iloc[0]) + 1 if len(hit) else math.nan})
    return pd.DataFrame(out)


def summarize(df: pd.DataFrame, threshold: Optional[float] = None, window: int = 5) -> dict:
    """Final rewards (mean and spread over seeds), steps to threshold, and time per phase, per variant."""
    threshold = default_threshold(df, window=window) if threshold is None else threshold
    hits = steps_to_threshold(df, threshold, window=window)
    last = df[df["step"] > df.groupby(["variant", "seed"])["step"].transform("max") - window]
    variants = {}
    for variant, runs in last.groupby("variant", sort=False):
        per_seed = runs.groupby("seed")[reward_columns(df)].mean()  # final reward of each seed
        h = hits[hits["variant"] == variant]["steps"]
        times = df[df["variant"] == variant][[c for c in df.columns if c.startswith("time/")]].mean()
        variants[variant] = {
            "final": {
                c: {
                    "mean": float(per_seed[c].mean()),
                    "std": float(per_seed[c].std(ddof=0)),
                    "min": float(per_seed[c].min()),
                    "max": float(per_seed[c].max()),
                }
                for c in per_seed
            },
            "steps_to_threshold": {
                "mean": float(h.mean()) if h.notna().any() else None,
                "per_seed": [None if math.isnan(x) else int(x) for x in h],
                "reached": int(h.notna().sum()),
                "runs": int(len(h)),
            },
            "seconds_per_step": {c.removeprefix("time/"): float(t) for c, t in times.items()},
            "step_seconds": float(times.sum()),
        }
    return {
        "threshold": threshold,
        "window": window,
        "steps": int(df["step"].max()) + 1,
        "seeds": int(df["seed"].nunique()),
        "variants": variants,
    }


def summary_markdown(summary: dict) -> str:
    """The summary as markdown tables: final rewards and steps to threshold; time per step."""
    lines = [
        f"Threshold: mean reward {summary['threshold']:.3f} (trailing mean over {summary['window']} steps); "
        f"{summary['steps']} steps, {summary['seeds']} seed(s). Final = mean of the last {summary['window']} "
        "steps; ± = std over seeds.",
        "",
        "| variant | final mean reward | final all-pass | steps to threshold (mean; per seed) | s/step |",
        "|---|---|---|---|---|",
    ]
    for name, v in summary["variants"].items():
        fm, ap, st = v["final"].get("reward/mean", {}), v["final"].get("all_pass", {}), v["steps_to_threshold"]
        reached = "; ".join("—" if s is None else str(s) for s in st["per_seed"])
        mean = "not reached" if st["mean"] is None else f"{st['mean']:.1f}"
        lines.append(
            f"| {name} | {fm.get('mean', math.nan):.3f} ± {fm.get('std', math.nan):.3f} | "
            f"{ap.get('mean', math.nan):.3f} ± {ap.get('std', math.nan):.3f} | {mean} ({reached}) | "
            f"{v['step_seconds']:.2f} |"
        )
    return "\n".join(lines) + "\n"
