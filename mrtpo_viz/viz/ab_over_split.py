"""A/B over a split, drawn: the per-case difference B - A in span mass (sorted, one bar per case) with the mean and
its paired interval, and the table of cases sorted by that difference. Takes the rows and the summary of
:mod:`mrtpo_viz.relevance.ab_split`; no model, no gradio."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from .colours import OKABE_ITO
from .figures import LIGHT
from .numbers import fmt_sig

B_BETTER, A_BETTER = OKABE_ITO[0], OKABE_ITO[1]
"""Bars where B puts more of the relevance on the spans (blue) and where A does (orange)."""
TABLE_HEADERS = [
    "rank",
    "example",
    "verifier",
    "span mass A",
    "span mass B",
    "B - A",
    "mean A",
    "mean B",
    "effective tokens A",
    "effective tokens B",
    "max |B - A|",
    "seconds",
]


def split_figure(rows: Sequence, summary, height: int = 260) -> go.Figure:
    """One bar per case, B - A in span mass, sorted from where B does worst; a line at the mean and a band over its
    95% paired interval (none for a single case)."""
    order = sorted(rows, key=lambda r: r.difference)
    d = [r.difference for r in order]
    labels = [f"{r.example} · {r.verifier}" for r in order]
    fig = go.Figure(
        go.Bar(
            x=list(range(1, len(d) + 1)),
            y=d,
            marker_color=[B_BETTER if x > 0 else A_BETTER for x in d],
            customdata=labels,
            hovertemplate="%{customdata}<br>B - A %{y:.3g}<extra></extra>",
            name="B - A per case",
        )
    )
    if summary is not None:
        fig.add_hline(y=summary.mean_difference, line_color="#000", line_dash="dash", line_width=1.5)
        if not math.isnan(summary.lo):
            fig.add_hrect(y0=summary.lo, y1=summary.hi, fillcolor="#000", opacity=0.08, line_width=0)
    fig.add_hline(y=0, line_color="#777", line_width=1)
    fig.update_xaxes(title_text="case, sorted by B - A", tickmode="auto", nticks=10)
    fig.update_yaxes(title_text="B - A in span mass", zeroline=False)
    return fig.update_layout(height=height, margin=dict(l=60, r=10, t=10, b=40), template=LIGHT, showlegend=False)


def summary_markdown(summary, done: int, total: int, stopped: bool = False) -> str:
    """The status line of a split comparison: progress, then the mean with its interval, the share where B beats A,
    the mean span mass of each wording and the seconds per example."""
    head = f"**Stopped after {done}** of {total} cases" if stopped else f"{done} / {total} cases"
    if summary is None:
        return head + "."
    interval = (
        "" if math.isnan(summary.lo) else f" [{fmt_sig(summary.lo, signed=True)}, {fmt_sig(summary.hi, signed=True)}]"
    )
    return (
        f"{head} of {summary.examples} examples: B - A in span mass, mean "
        f"{fmt_sig(summary.mean_difference, signed=True)}"
        f"{interval} (95% paired t); B beats A in {summary.b_beats_a:.0%} of the cases; mean span mass A "
        f"{fmt_sig(summary.mean_a['span_mass'])}, B {fmt_sig(summary.mean_b['span_mass'])}; "
        f"{summary.seconds_per_example:.2f} s per example."
    )


def split_table(rows: Sequence) -> pd.DataFrame:
    """The cases sorted by B - A in span mass, where B does worst first (rank 1), 3 significant digits."""
    order = sorted(rows, key=lambda r: r.difference)
    data = [
        [
            i,
            r.example,
            r.verifier,
            fmt_sig(r.span_mass_a),
            fmt_sig(r.span_mass_b),
            fmt_sig(r.difference, signed=True),
            fmt_sig(r.mean_a),
            fmt_sig(r.mean_b),
            fmt_sig(r.effective_tokens_a),
            fmt_sig(r.effective_tokens_b),
            fmt_sig(r.max_abs_b_minus_a),
            f"{r.seconds:.2f}",
        ]
        for i, r in enumerate(order, 1)
    ]
    return pd.DataFrame(data, columns=TABLE_HEADERS)
