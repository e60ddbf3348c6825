"""Per-token streams a run logged (prime-rl's export: each loss channel's advantage, entropy, mismatch KL,
importance ratio, masks), one panel each on a shared token axis, with the replayed relevance on top when there is
one. Pure rendering: the values come in as lists; NaN (a token a stream does not cover) is left blank."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .colours import OKABE_ITO
from .figures import _layout, token_axis

PANEL_PX = 110


def token_streams_figure(
    tokens: Sequence[str],
    streams: Mapping[str, Sequence[float]],
    masks: Mapping[str, Sequence[float]],
    relevance: Mapping[str, Sequence[float]] | None = None,
    title: str = "Per-token values the run logged",
) -> go.Figure:
    """One panel per stream (a line of markers) and one strip for all the masks (1 dark, 0 light, NaN blank).

    Args:
        tokens: T display tokens; streams, masks, relevance: name -> T values (relevance: per reward, replayed).
    """
    x = token_axis(tokens)
    panels = ([("relevance", relevance)] if relevance else []) + [(n, {n: v}) for n, v in streams.items()]
    rows = len(panels) + (1 if masks else 0)
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.02)
    for r, (label, series) in enumerate(panels, 1):
        for k, (name, values) in enumerate(series.items()):
            fig.add_scatter(
                x=x,
                y=[None if _nan(v) else float(v) for v in values],
                mode="lines+markers",
                name=name,
                marker=dict(size=4, color=OKABE_ITO[(k + r) % len(OKABE_ITO)]),
                line=dict(width=1),
                connectgaps=False,
                row=r,
                col=1,
                hovertemplate=f"{name}<br>token %{{x}}<br>%{{y:.3g}}<extra></extra>",
            )
        fig.update_yaxes(title_text=label, row=r, col=1, title_font=dict(size=11))
    if masks:
        fig.add_heatmap(
            z=[[None if _nan(v) else float(v) for v in values] for values in masks.values()],
            x=x,
            y=list(masks),
            zmin=0,
            zmax=1,
            colorscale=[[0, "#f2f2f2"], [1, "#444444"]],
            showscale=False,
            row=rows,
            col=1,
            hovertemplate="%{y}<br>token %{x}<br>%{z}<extra></extra>",
        )
    fig = _layout(fig, title, 80 + PANEL_PX * rows + 12 * len(masks))
    return fig.update_layout(showlegend=bool(relevance), legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0))


def _nan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))
