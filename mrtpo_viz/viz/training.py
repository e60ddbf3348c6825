"""Training views: reward curves per reward and method (mean and a band over seeds), a step's sample completion
coloured by token advantage, and the time per phase. The statistics come from :mod:`mrtpo_viz.training.report`."""

from __future__ import annotations

import html
import math
from typing import Optional
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..names import PHASES
from ..training.report import curve_stats, reward_columns, summarize
from .colours import OKABE_ITO, visible
from .numbers import fmt_sig


LINE_STYLES = (
    ("solid", "circle-open", 4.5),
    ("dash", "square-open", 3.0),
    ("dot", "diamond", 2.0),
    ("dashdot", "triangle-up-open", 2.0),
    ("longdash", "x-thin-open", 2.0),
    ("longdashdot", "star", 2.0),
)
"""Per variant: dash, marker and width. Earlier variants draw wider and later ones thinner, dashed and dotted on top,
so lines that coincide (every method samples the same completions at the first step) still show every method."""
MAX_MARKERS = 15
"""Markers drawn per line (plotly thins them out evenly beyond this; the line keeps every point)."""


def _title(col: str) -> str:
    return {"reward/mean": "mean reward", "all_pass": "all verifiers pass"}.get(col, col.removeprefix("reward/"))


def _y_title(col: str) -> str:
    return "share of completions" if col == "all_pass" else "reward (0-1)"


def reward_curves_figure(
    df: pd.DataFrame, columns: Optional[Sequence[str]] = None, window: int = 1, title: str = "Reward per step"
) -> go.Figure:
    """One panel per reward, one line per variant (mean over seeds) and a band from the lowest to the highest seed.

    Every panel has its own axis titles and tick labels; variants differ by colour, dash, marker and width. The
    x axis counts steps from 1 (step 1: the starting policy's samples, before any update).

    Args:
        df: metrics rows with ``variant``, ``seed``, ``step`` (0-based) and the reward columns.
        columns: reward columns to plot (default: ``reward_columns(df)``).
        window: trailing-mean smoothing in steps; above 1 the raw per-step values stay as faint dots.
    """
    columns = list(columns or reward_columns(df))
    cols = min(len(columns), 3) or 1
    rows = math.ceil(len(columns) / cols) or 1
    height = 300 * rows + 110
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[_title(c) for c in columns],
        horizontal_spacing=0.07,
        vertical_spacing=min(0.3, 110 / height) if rows > 1 else 0.1,
    )  # room for x titles + titles
    variants = list(dict.fromkeys(df["variant"])) if len(df) else []
    window = max(1, int(window or 1))
    for j, col in enumerate(columns):
        at = dict(row=j // cols + 1, col=j % cols + 1)
        stats = curve_stats(df.dropna(subset=[col]), col, window)
        raw = curve_stats(df.dropna(subset=[col]), col, 1) if window > 1 else None
        for v, variant in enumerate(variants):
            style = _style(v)
            _add_curve(fig, stats[stats["variant"] == variant], variant, style, at, legend=(j == 0), label=_title(col))
            if raw is not None:
                _add_raw(fig, raw[raw["variant"] == variant], variant, style, at)
        fig.update_xaxes(title_text="step", **at)
        fig.update_yaxes(title_text=_y_title(col), **at)
    fig.update_xaxes(showticklabels=True, rangemode="tozero", tickformat="d")
    fig.update_yaxes(range=[-0.03, 1.03], showticklabels=True)
    for j in range(len(columns), rows * cols):  # the grid's empty cells: no bare axes
        fig.update_xaxes(visible=False, row=j // cols + 1, col=j % cols + 1)
        fig.update_yaxes(visible=False, row=j // cols + 1, col=j % cols + 1)
    smoothing = f" (trailing mean over {window} steps; dots: each step)" if window > 1 else ""
    fig.update_layout(
        title=title + smoothing,
        height=height,
        margin=dict(l=60, r=20, t=90, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.0 + 0.12 / rows, x=1, xanchor="right"),
        hovermode="closest",
        template="plotly_white",
    )  # legend above the subplot titles, right-aligned
    return fig


def _style(v: int) -> dict:
    dash, symbol, width = LINE_STYLES[v % len(LINE_STYLES)]
    return dict(
        colour=OKABE_ITO[v % len(OKABE_ITO)],
        dash=dash,
        symbol=symbol,
        width=width,
        size=11 - 2 * (v % len(LINE_STYLES)),
    )  # nested sizes: coinciding markers stay visible


def _add_curve(fig: go.Figure, s: pd.DataFrame, name: str, style: dict, at: dict, legend: bool, label: str) -> None:
    if s.empty:
        return
    x = (s["step"] + 1).tolist()
    colour = style["colour"]
    if int(s["count"].max()) > 1:  # band over seeds
        fig.add_trace(
            go.Scatter(
                x=x + x[::-1],
                y=s["max"].tolist() + s["min"].tolist()[::-1],
                fill="toself",
                fillcolor=colour,
                opacity=0.18,
                line=dict(width=0),
                hoverinfo="skip",
                showlegend=False,
                legendgroup=name,
            ),
            **at,
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=s["mean"].tolist(),
            mode="lines+markers",
            name=name,
            legendgroup=name,
            showlegend=legend,
            line=dict(color=colour, width=style["width"], dash=style["dash"]),
            marker=dict(
                symbol=style["symbol"],
                size=style["size"],
                color=colour,
                maxdisplayed=MAX_MARKERS,
                line=dict(width=1.5, color=colour),
            ),
            hovertemplate=f"{html.escape(name)} · step %{{x}} · {html.escape(label)} %{{y:.3f}}<extra></extra>",
        ),
        **at,
    )


def _add_raw(fig: go.Figure, s: pd.DataFrame, name: str, style: dict, at: dict) -> None:
    if s.empty:
        return
    fig.add_trace(
        go.Scatter(
            x=(s["step"] + 1).tolist(),
            y=s["mean"].tolist(),
            mode="markers",
            legendgroup=name,
            showlegend=False,
            hoverinfo="skip",
            opacity=0.35,
            name=f"{name} (each step)",
            marker=dict(size=5, color=style["colour"], symbol="circle"),
        ),
        **at,
    )


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
    dashes = {
        "solid": "-",
        "dash": "--",
        "dot": ":",
        "dashdot": "-.",
        "longdash": (0, (8, 3)),
        "longdashdot": (0, (8, 3, 1, 3)),
    }
    for ax, col in zip(axes[0], columns):
        stats = curve_stats(df.dropna(subset=[col]), col, window)
        for v, (variant, s) in enumerate(stats.groupby("variant", sort=False)):
            style = _style(v)
            ax.fill_between(s["step"] + 1, s["min"], s["max"], color=style["colour"], alpha=0.2, linewidth=0)
            ax.plot(
                s["step"] + 1,
                s["mean"],
                color=style["colour"],
                label=variant,
                linestyle=dashes[style["dash"]],
                linewidth=style["width"] * 0.6,
            )
        ax.set_title(_title(col))
        ax.set_xlabel("step")
        ax.set_ylabel(_y_title(col))
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def advantage_tokens_html(sample: dict, title: str = "") -> str:
    """A step's sample completion with each token coloured by its advantage (blue > 0, red < 0), escaped.

    Args:
        sample: ``StepMetrics.sample``: ``tokens``, ``adv`` (one per token), ``rewards``, optional ``relevance``
            (verifier -> one value per token) and ``prompt``.
        title: the heading, e.g. ``"Latest mrtpo sample (step 4)"``.
    """
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
        spans.append(
            f'<span class="mrtpo-train-tok" title="{html.escape(chr(10).join(tip), quote=True)}" '
            f'style="background:rgb{rgb};color:#000;padding:1px 0;white-space:pre-wrap">'
            f"{html.escape(visible(tok))}</span>"
        )
    rewards = ", ".join(f"{html.escape(k)} = {v:.2f}" for k, v in (sample.get("rewards") or {}).items())
    head = f"<b>{html.escape(title)}</b> · " if title else ""
    prompt = html.escape(str(sample.get("prompt", ""))[:300])
    hover = "its advantage and its relevance to each verifier" if relevance else "its advantage"
    return (
        f'<div class="mrtpo-train-sample"><p>{head}rewards: {rewards}</p>'
        f'<p style="opacity:0.75">prompt: {prompt}</p>'
        f'<div style="font-family:monospace;line-height:1.9">{"".join(spans)}</div>'
        f'<p style="font-size:0.85em;opacity:0.75">The step\'s completion with the largest token advantage. '
        f"Colour: the advantage each token was trained with (blue: made more likely, red: less likely, "
        f"white: about 0; scaled to this sample's largest, {vmax:.3f}). Hover a token for {hover}.</p></div>"
    )


def run_summary_markdown(df: pd.DataFrame, window: int = 5) -> str:
    """One line per variant for the end of a run: final mean reward, its change since the start, steps to threshold.

    Final and start are trailing means over ``window`` steps (at most a third of the steps, at least 1); the
    threshold is :func:`~mrtpo_viz.training.report.default_threshold`'s (half-way from the start to the best final).

    Args:
        df: metrics rows with ``variant``, ``seed``, ``step`` and ``reward/mean`` (one seed per variant, or several).
    """
    if df is None or not len(df):
        return ""
    steps = int(df["step"].max()) + 1
    w = max(1, min(int(window), steps // 3))
    summary = summarize(df, window=w)
    first = df[df["step"] < w].groupby("variant", sort=False)["reward/mean"].mean()
    lines = [
        f"**Summary after {steps} step{'s' * (steps != 1)}** (final and start: mean reward of the last and "
        f"first {w} step{'s' * (w != 1)}; threshold {summary['threshold']:.3f}, half-way from the start to "
        "the best final):",
        "",
    ]
    for variant, v in summary["variants"].items():
        final, start = v["final"]["reward/mean"]["mean"], float(first.get(variant, math.nan))
        hit = v["steps_to_threshold"]
        reached = (
            "not reached"
            if hit["mean"] is None
            else f"reached after {hit['mean']:.0f} step{'s' * (hit['mean'] != 1)}"
            if hit["runs"] == 1
            else f"reached in {hit['reached']}/{hit['runs']} seeds, after {hit['mean']:.1f} steps on average"
        )
        lines.append(
            f"- **{html.escape(variant)}**: final mean reward **{final:.3f}** (start {start:.3f}, "
            f"{final - start:+.3f}) · threshold {reached}"
        )
    return "\n".join(lines)


def phase_times_markdown(latest: dict[str, dict[str, float]]) -> str:
    """Seconds per phase of the latest step of each variant, as a markdown table."""
    if not latest:
        return ""
    lines = ["| method | " + " | ".join(PHASES) + " | total |", "|---" * (len(PHASES) + 2) + "|"]
    for variant, times in latest.items():
        cells = [fmt_sig(times.get(p, 0.0)) for p in PHASES]
        lines.append(f"| {variant} | " + " | ".join(cells) + f" | {fmt_sig(sum(times.values()))} |")
    return "Seconds per phase (latest step):\n\n" + "\n".join(lines)
