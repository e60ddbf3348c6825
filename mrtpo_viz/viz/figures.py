"""Plotly figures of replays and rollouts: relevance heatmaps, A/B differences, per-token advantage bars, mean
relevance per verifier."""

from __future__ import annotations

from typing import Optional
from collections.abc import Sequence

import html

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..relevance.results import Relevance
from .advantages import AdvantageBreakdown
from .colours import DIVERGING, OKABE_ITO, SCALE, visible

TICK_FONT = dict(family="monospace", size=10)
_GRID = "#EBF0F8"
LIGHT = go.layout.Template(
    layout=dict(
        paper_bgcolor="white",
        plot_bgcolor="white",
        font=dict(color="#2a3f5f"),
        colorway=list(OKABE_ITO),
        xaxis=dict(gridcolor=_GRID, linecolor=_GRID, zerolinecolor=_GRID, automargin=True),
        yaxis=dict(gridcolor=_GRID, linecolor=_GRID, zerolinecolor=_GRID, automargin=True),
    )
)
"""The look of plotly's "plotly_white" in the few properties these charts use. Setting "plotly_white" itself
deep-copies the whole template into every figure: 0.17 s per heatmap on a loaded 2-core machine, a sixth of the
click-to-heatmap budget (benchmarks/results/ui_latency.md); this one costs a few milliseconds."""


def plotly_text(token: str) -> str:
    """A token for a plotly label or hover text: whitespace made visible and ``< > &`` escaped (plotly reads a
    subset of HTML in labels: ``<b>`` would turn bold, ``<br>`` break the line)."""
    return html.escape(visible(token), quote=False)


def token_axis(tokens: Sequence[str]) -> list[str]:
    """Unique x labels ``"t token"`` (tokens repeat, positions do not): a category axis that plotly thins to the
    labels that fit, and shows more of when zoomed in."""
    return [f"{t} {plotly_text(tok)}" for t, tok in enumerate(tokens)]


def _heatmap(
    z, tokens, rows, colorscale, zmid=None, colorbar_title="", colorbar_y=0.5, colorbar_len=1.0, what="relevance"
):
    return go.Heatmap(
        z=z,
        x=token_axis(tokens),
        y=list(rows),
        colorscale=colorscale,
        zmid=zmid,
        colorbar=dict(title=dict(text=colorbar_title), y=colorbar_y, len=colorbar_len),
        hovertemplate=f"%{{y}}<br>token %{{x}}<br>{what} %{{z:.3g}}<extra></extra>",
        xgap=1,
        ygap=1,
    )


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    """Title, size and white template; token labels under the x axis (rotated, monospace)."""
    fig.update_layout(title=dict(text=title), height=height, margin=dict(l=10, r=10, t=50, b=10), template=LIGHT)
    fig.update_xaxes(type="category", tickangle=-90, tickfont=TICK_FONT, automargin=True, showgrid=False)
    return fig


def placeholder_figure(text: str, height: int = 200) -> go.Figure:
    """An empty chart with a hint. Shown before the first result, it also makes the page load the plotting
    library at once, not on the first click (that load took ~1-1.5 s of the click-to-heatmap time)."""
    fig = go.Figure()
    fig.add_annotation(
        text=text, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5, font=dict(size=14, color="#777")
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig.update_layout(height=height, margin=dict(l=10, r=10, t=10, b=10), template=LIGHT)


def relevance_heatmap(rel: Relevance, raw: bool = False, title: Optional[str] = None) -> go.Figure:
    """Verifiers x tokens heatmap of ``scores`` (or ``raw_scores``), ``z`` of shape (K, T)."""
    scores = rel.raw_scores if raw else rel.scores
    label = f"{'raw ' if raw else ''}{rel.metric}"
    fig = go.Figure(_heatmap(scores.tolist(), rel.tokens, rel.verifiers, SCALE, colorbar_title=label))
    fig.update_traces(zmin=0.0)
    fig.update_yaxes(autorange="reversed")  # first verifier on top, as in the token rows
    default = f"Relevance ({label}{'' if raw or rel.control == 'none' else ', control ' + rel.control})"
    return _layout(fig, title or default, 200 + 45 * rel.K)  # + room for the token labels


def difference_heatmap(rel_a: Relevance, rel_b: Relevance, verifier: str) -> go.Figure:
    """A, B and B - A relevance of one verifier over the same response tokens (three rows)."""
    if rel_a.token_ids != rel_b.token_ids:
        raise ValueError("A and B must be replays of the same response tokens")
    a = rel_a.scores[rel_a.verifiers.index(verifier)]  # (T,)
    b = rel_b.scores[rel_b.verifiers.index(verifier)]  # (T,)
    zmax = float(torch.maximum(a.max(), b.max())) if a.numel() else 1.0
    diff_max = float((b - a).abs().max()) if a.numel() else 1.0
    # the gap leaves "B - A" its own line under A and B's cells (0.08 made the title touch them)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        row_heights=[0.62, 0.38],
        vertical_spacing=0.2,
        subplot_titles=("A and B", "B - A"),
    )
    fig.add_trace(
        _heatmap(
            [a.tolist(), b.tolist()],
            rel_a.tokens,
            ["A", "B"],
            SCALE,
            colorbar_title=rel_a.metric,
            colorbar_y=0.8,
            colorbar_len=0.45,
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        _heatmap(
            [(b - a).tolist()],
            rel_a.tokens,
            ["B - A"],
            DIVERGING,
            zmid=0.0,
            colorbar_title="B - A",
            colorbar_y=0.17,
            colorbar_len=0.35,
            what="difference",
        ),
        row=2,
        col=1,
    )
    fig.data[0].update(zmin=0.0, zmax=zmax)
    fig.update_yaxes(autorange="reversed", row=1, col=1)  # A above B
    fig.data[1].update(zmin=-diff_max, zmax=diff_max)
    fig = _layout(fig, f"{verifier}: information A vs B", 420)
    fig.update_xaxes(showticklabels=False, row=1, col=1)  # the labels once, under B - A
    return fig


def advantage_bars(tokens: Sequence[str], verifiers: Sequence[str], br: AdvantageBreakdown) -> go.Figure:
    """Per-token advantage: MRTPO stacked per reward (bars), GDPO's uniform advantage and MRTPO's total (lines)."""
    x = token_axis(tokens)
    fig = go.Figure()
    for k, name in enumerate(verifiers):
        fig.add_bar(
            x=x,
            y=br.parts[k].tolist(),
            name=f"MRTPO: {name}",
            marker_color=OKABE_ITO[k % len(OKABE_ITO)],
            hovertemplate=f"MRTPO: {plotly_text(name)}<br>token %{{x}}<br>advantage %{{y:.3g}}<extra></extra>",
        )
    if float(br.baseline.abs().max()) > 1e-6:
        fig.add_bar(
            x=x,
            y=br.baseline.tolist(),
            name="batch centering",
            marker_color="#999999",
            hovertemplate="batch centering<br>token %{x}<br>advantage %{y:.3g}<extra></extra>",
        )
    fig.add_scatter(
        x=x,
        y=br.mrtpo.tolist(),
        mode="markers",
        name="MRTPO total",
        marker=dict(color="#000", size=5),
        hovertemplate="MRTPO total<br>token %{x}<br>advantage %{y:.3g}<extra></extra>",
    )
    fig.add_scatter(
        x=x,
        y=[br.gdpo] * len(x),
        mode="lines",
        name=f"GDPO (uniform) {br.gdpo:.3g}",
        line=dict(color="#D55E00", dash="dash"),
        hovertemplate="GDPO (uniform)<br>token %{x}<br>advantage %{y:.3g}<extra></extra>",
    )
    fig.update_layout(
        barmode="relative", legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0), yaxis_title="advantage"
    )
    fig = _layout(fig, "Per-token advantage: GDPO (uniform) vs MRTPO (stacked per reward)", 420)
    return fig.update_layout(margin=dict(t=90))  # the legend sits between the title and the bars


def mean_relevance_bars(frame) -> go.Figure:
    """Mean relevance per verifier over all scored tokens, controlled and raw side by side.

    Args:
        frame: long per-token table (``Relevance.to_frame`` rows of many rollouts): ``verifier``, ``score``,
            ``raw_score``.
    """
    means = frame.groupby("verifier", sort=False)[["score", "raw_score"]].mean()
    fig = go.Figure()
    for col, name, colour in (
        ("score", "relevance (after control)", OKABE_ITO[0]),
        ("raw_score", "raw relevance", OKABE_ITO[1]),
    ):
        fig.add_bar(
            x=list(means.index),
            y=means[col].tolist(),
            name=name,
            marker_color=colour,
            hovertemplate=f"%{{x}}<br>{name} %{{y:.3g}}<extra></extra>",
        )
    fig.update_layout(
        barmode="group",
        yaxis_title="mean relevance per token",
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
    )
    fig = _layout(fig, "Mean relevance per verifier", 340)
    return fig.update_xaxes(tickangle=-30, tickfont=dict(size=11))  # verifier names, not tokens
