"""Training views: reward curves per reward and method (mean and a band over seeds), a step's sample completion
coloured by token advantage, and the time per phase. The statistics come from :mod:`mrtpo_viz.training.report`."""
from __future__ import annotations

import html
import math
from typing import Optional, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..names import PHASES
from ..training.report import curve_stats, reward_columns
from .colours import OKABE_ITO, visible


def _title(col: str) -> str:
    return {"reward/mean": "mean reward", "all_pass": "all verifiers pass"}.get(col, col.removeprefix("reward/"))


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


def advantage_tokens_html(sample: dict, title: str = "") -> str:
    """A step's sample completion with each token coloured by its advantage (blue > 0, red < 0), escaped.

    Args:
        sample: ``StepMetrics.sample``: ``tokens``, ``adv`` (one per token), ``rewards``, optional ``relevance``
            (verifier -> one value per token) and ``prompt``.
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
