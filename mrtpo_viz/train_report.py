"""Comparing training runs: reward curves per reward and method (mean and band over seeds) and a summary.

Pure functions of metrics frames (one row per step, ``StepMetrics.to_row`` columns plus ``variant``); no model.
A *variant* is a method with its relevance control, e.g. ``gdpo`` or ``mrtpo:others`` (``mrtpo`` alone means the
raw relevance of the paper).

"Steps to threshold": the first step at which a run's reward, smoothed by a trailing mean over ``window`` steps,
reaches the threshold. The default threshold is half-way from the mean starting reward (first ``window`` steps,
all runs) to the best final reward of any variant (last ``window`` steps): a level every method can be timed to.
"""
from __future__ import annotations

import json
import math
from typing import Optional, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .viz import OKABE_ITO

PHASES = ("sample", "score", "replay", "advantages", "update")


def variant_label(method: str, control: str = "none") -> str:
    """``gdpo``, ``mrtpo`` (raw relevance), ``mrtpo:placebo`` (controlled relevance)."""
    return method if control == "none" else f"{method}:{control}"


def parse_variant(spec: str) -> tuple[str, str]:
    """``"mrtpo:others"`` -> ``("mrtpo", "others")``; ``"gdpo"`` -> ``("gdpo", "none")``."""
    method, _, control = spec.strip().partition(":")
    return method, control or "none"


def reward_columns(df: pd.DataFrame) -> list[str]:
    """``reward/mean`` first, then ``all_pass``, then one column per verifier."""
    per = [c for c in df.columns if c.startswith("reward/") and c != "reward/mean"]
    return [c for c in ("reward/mean", "all_pass") if c in df.columns] + per


def _title(col: str) -> str:
    return {"reward/mean": "mean reward", "all_pass": "all verifiers pass"}.get(col, col.removeprefix("reward/"))


def curve_stats(df: pd.DataFrame, col: str, window: int = 1) -> pd.DataFrame:
    """Per variant and step: mean, min and max over seeds of ``col`` (smoothed per run by a trailing mean)."""
    smooth = (df.sort_values("step").groupby(["variant", "seed"])[col]
              .transform(lambda s: s.rolling(window, min_periods=1).mean()))
    frame = df.assign(value=smooth)
    return frame.groupby(["variant", "step"])["value"].agg(["mean", "min", "max", "count"]).reset_index()


def reward_curves_figure(df: pd.DataFrame, columns: Optional[Sequence[str]] = None, window: int = 1,
                         title: str = "Reward per step") -> go.Figure:
    """One panel per reward, one line per variant (mean over seeds) and a band from the lowest to the highest seed.

    Args:
        df: metrics rows with ``variant``, ``seed``, ``step`` and the reward columns.
        columns: reward columns to plot (default: ``reward_columns(df)``).
        window: trailing-mean smoothing in steps.
    """
    columns = list(columns or reward_columns(df))
    cols = min(len(columns), 3) or 1
    rows = math.ceil(len(columns) / cols) or 1
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[_title(c) for c in columns], shared_xaxes=True,
                        horizontal_spacing=0.06, vertical_spacing=0.12)
    variants = list(dict.fromkeys(df["variant"])) if len(df) else []
    for j, col in enumerate(columns):
        stats = curve_stats(df.dropna(subset=[col]), col, window)
        for v, variant in enumerate(variants):
            _add_curve(fig, stats[stats["variant"] == variant], variant, OKABE_ITO[v % len(OKABE_ITO)],
                       row=j // cols + 1, col=j % cols + 1, legend=(j == 0))
    fig.update_yaxes(range=[-0.02, 1.02])
    fig.update_layout(title=title, height=280 * rows + 80, margin=dict(l=40, r=20, t=80, b=40),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0 + 0.12 / rows, x=1, xanchor="right"),
                      template="plotly_white")  # legend above the subplot titles, right-aligned (clear of the title)
    return fig


def _add_curve(fig: go.Figure, s: pd.DataFrame, name: str, colour: str, row: int, col: int, legend: bool) -> None:
    if s.empty:
        return
    x = s["step"].tolist()
    if int(s["count"].max()) > 1:  # band over seeds
        fig.add_trace(go.Scatter(x=x + x[::-1], y=s["max"].tolist() + s["min"].tolist()[::-1], fill="toself",
                                 fillcolor=colour, opacity=0.18, line=dict(width=0), hoverinfo="skip",
                                 showlegend=False, legendgroup=name), row=row, col=col)
    fig.add_trace(go.Scatter(x=x, y=s["mean"].tolist(), mode="lines", name=name, legendgroup=name,
                             line=dict(color=colour, width=2), showlegend=legend), row=row, col=col)


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
            "final": {c: {"mean": float(per_seed[c].mean()), "std": float(per_seed[c].std(ddof=0)),
                          "min": float(per_seed[c].min()), "max": float(per_seed[c].max())} for c in per_seed},
            "steps_to_threshold": {"mean": float(h.mean()) if h.notna().any() else None,
                                   "per_seed": [None if math.isnan(x) else int(x) for x in h],
                                   "reached": int(h.notna().sum()), "runs": int(len(h))},
            "seconds_per_step": {c.removeprefix("time/"): float(t) for c, t in times.items()},
            "step_seconds": float(times.sum()),
        }
    return {"threshold": threshold, "window": window, "steps": int(df["step"].max()) + 1,
            "seeds": int(df["seed"].nunique()), "variants": variants}


def summary_markdown(summary: dict) -> str:
    """The summary as markdown tables: final rewards and steps to threshold; time per step."""
    lines = [f"Threshold: mean reward {summary['threshold']:.3f} (trailing mean over {summary['window']} steps); "
             f"{summary['steps']} steps, {summary['seeds']} seed(s). Final = mean of the last {summary['window']} "
             "steps; ± = std over seeds.", "",
             "| variant | final mean reward | final all-pass | steps to threshold (mean; per seed) | s/step |",
             "|---|---|---|---|---|"]
    for name, v in summary["variants"].items():
        fm, ap, st = v["final"].get("reward/mean", {}), v["final"].get("all_pass", {}), v["steps_to_threshold"]
        reached = "; ".join("—" if s is None else str(s) for s in st["per_seed"])
        mean = "not reached" if st["mean"] is None else f"{st['mean']:.1f}"
        lines.append(f"| {name} | {fm.get('mean', math.nan):.3f} ± {fm.get('std', math.nan):.3f} | "
                     f"{ap.get('mean', math.nan):.3f} ± {ap.get('std', math.nan):.3f} | {mean} ({reached}) | "
                     f"{v['step_seconds']:.2f} |")
    return "\n".join(lines) + "\n"


def write_png(df: pd.DataFrame, path, columns: Optional[Sequence[str]] = None, window: int = 1) -> bool:
    """Reward curves as PNG through matplotlib when it is installed (plotly's PNG export needs kaleido, which is
    not a dependency). Returns whether a file was written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    columns = list(columns or reward_columns(df))
    fig, axes = plt.subplots(1, len(columns), figsize=(4 * len(columns), 3.2), squeeze=False)
    for ax, col in zip(axes[0], columns):
        stats = curve_stats(df.dropna(subset=[col]), col, window)
        for v, (variant, s) in enumerate(stats.groupby("variant", sort=False)):
            colour = OKABE_ITO[v % len(OKABE_ITO)]
            ax.fill_between(s["step"], s["min"], s["max"], color=colour, alpha=0.2, linewidth=0)
            ax.plot(s["step"], s["mean"], color=colour, label=variant)
        ax.set_title(_title(col))
        ax.set_xlabel("step")
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_report(df: pd.DataFrame, out_dir, threshold: Optional[float] = None, window: int = 5) -> dict:
    """metrics.csv, curves.html, curves.png (if matplotlib), summary.json and summary.md in ``out_dir``."""
    from pathlib import Path

    out = Path(out_dir)
    df.to_csv(out / "metrics.csv", index=False)
    reward_curves_figure(df, window=window).write_html(out / "curves.html", include_plotlyjs=True)
    png = write_png(df, out / "curves.png", window=window)
    summary = summarize(df, threshold, window)
    summary["png"] = png
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (out / "summary.md").write_text(summary_markdown(summary), encoding="utf-8")
    return summary


# --- live display --------------------------------------------------------------------------------------------------

def advantage_tokens_html(sample: dict, title: str = "") -> str:
    """A step's sample completion with each token coloured by its advantage (blue > 0, red < 0), escaped.

    Args:
        sample: ``StepMetrics.sample``: ``tokens``, ``adv`` (one per token), ``rewards``, optional ``relevance``
            (verifier -> one value per token) and ``prompt``.
    """
    import html

    from .viz import visible

    tokens, adv = sample.get("tokens") or [], sample.get("adv") or []
    if not tokens:
        return "<p>No sample yet.</p>"
    vmax = max((abs(a) for a in adv), default=0.0) or 1.0
    relevance = sample.get("relevance") or {}
    spans = []
    for t, (tok, a) in enumerate(zip(tokens, adv)):
        x = max(-1.0, min(1.0, a / vmax))
        fade = (int(255 - 180 * abs(x)), int(255 - 120 * abs(x)))
        rgb = (fade[0], fade[1], 255) if x >= 0 else (255, fade[1], fade[0])  # blue for > 0, red for < 0
        tip = [f"token {t}: {visible(tok)!r}", f"advantage {a:+.3f}"]
        tip += [f"relevance to {name}: {vals[t]:.3f}" for name, vals in relevance.items() if t < len(vals)]
        spans.append(f'<span title="{html.escape(chr(10).join(tip), quote=True)}" style="background:rgb{rgb};'
                     f'padding:1px 0;white-space:pre-wrap">{html.escape(visible(tok))}</span>')
    rewards = ", ".join(f"{html.escape(k)} = {v:.2f}" for k, v in (sample.get("rewards") or {}).items())
    head = f"<p><b>{html.escape(title)}</b> rewards: {rewards}</p>" if title else f"<p>rewards: {rewards}</p>"
    prompt = html.escape(str(sample.get("prompt", ""))[:300])
    return (f'<div class="mrtpo-train-sample">{head}<p style="opacity:0.7">prompt: {prompt}</p>'
            f'<div style="font-family:monospace;line-height:1.9">{"".join(spans)}</div>'
            '<p style="font-size:0.85em;opacity:0.7">Colour: token advantage (blue positive, red negative); '
            'hover a token for its relevance to each verifier.</p></div>')


def phase_times_markdown(latest: dict[str, dict[str, float]]) -> str:
    """Seconds per phase of the latest step of each variant, as a markdown table."""
    if not latest:
        return ""
    lines = ["| method | " + " | ".join(PHASES) + " | total |", "|---" * (len(PHASES) + 2) + "|"]
    for variant, times in latest.items():
        cells = [f"{times.get(p, 0.0):.2f}" for p in PHASES]
        lines.append(f"| {variant} | " + " | ".join(cells) + f" | {sum(times.values()):.2f} |")
    return "Seconds per phase (latest step):\n\n" + "\n".join(lines)
