"""The convergence study's results (``benchmarks/results/convergence.json``, written by its report; the study's code
was retired for the credit study and is in the git history) as a plotly figure and a short markdown summary. Pure
functions of that dict.

The figure is a forest plot: one panel per arm (task and policy), one row per variant, the mean over seeds of the
variant's final mean reward minus GDPO's with its 95% bootstrap interval (paired by seed); 0 is "same as GDPO".
"""

from __future__ import annotations

import math
from typing import Optional

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .colours import OKABE_ITO

SCHEMA = "mrtpo-convergence/1"
"""The results format this module reads (the retired convergence study's report wrote it)."""


def is_study(results: object) -> bool:
    """Whether ``results`` is a convergence study's results dict that this module can show."""
    return isinstance(results, dict) and results.get("schema") == SCHEMA and isinstance(results.get("arms"), dict)


def forest_rows(results: dict, arm: str) -> list[dict]:
    """``[{variant, label, mean, lo, hi, n}]`` for every variant compared with GDPO on ``arm`` (variant order)."""
    a = results["arms"][arm]
    labels = results.get("labels", {})
    out = []
    for v in results["variants"]:
        d = a.get("vs_gdpo", {}).get(v)
        if d is None:
            continue
        f = d["final"]
        mean = _num(f.get("mean"))
        out.append(
            {
                "variant": v,
                "label": labels.get(v, v),
                "mean": mean,
                "lo": _num(f.get("lo"), mean),
                "hi": _num(f.get("hi"), mean),
                "n": f.get("n", 0),
            }
        )
    return out


def _num(x, default: float = math.nan) -> float:
    return default if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def study_figure(
    results: dict, title: str = "Final mean reward minus GDPO's (95% interval, paired by seed)"
) -> go.Figure:
    """One panel per arm; one point with its interval per variant; a line at 0."""
    arms = list(results["arms"])
    titles = [a.replace("@", "<br>on ") for a in arms]  # "instruction_following@smollm2" fits its panel in two lines
    fig = make_subplots(
        rows=1, cols=max(len(arms), 1), subplot_titles=titles, shared_yaxes=True, horizontal_spacing=0.04
    )
    for j, arm in enumerate(arms):
        for i, r in enumerate(forest_rows(results, arm)):
            colour = OKABE_ITO[i % len(OKABE_ITO)]
            fig.add_trace(
                go.Scatter(
                    x=[r["mean"]],
                    y=[r["label"]],
                    mode="markers",
                    marker=dict(color=colour, size=9),
                    error_x=dict(
                        type="data",
                        symmetric=False,
                        array=[r["hi"] - r["mean"]],
                        arrayminus=[r["mean"] - r["lo"]],
                        color=colour,
                    ),
                    name=r["label"],
                    legendgroup=r["variant"],
                    showlegend=(j == 0),
                    hovertemplate=f"{r['label']}: %{{x:+.3f}} [{r['lo']:+.3f}, {r['hi']:+.3f}], {r['n']} seeds"
                    "<extra></extra>",
                ),
                row=1,
                col=j + 1,
            )
        fig.add_vline(x=0, line=dict(color="grey", width=1, dash="dot"), row=1, col=j + 1)
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        title=title, height=340, template="plotly_white", margin=dict(l=40, r=20, t=80, b=40), showlegend=False
    )
    return fig


def study_markdown(results: Optional[dict]) -> str:
    """The summary the Method tab shows: the conclusion and one line per arm, or "not run yet"."""
    if not is_study(results):
        return (
            "**Not run yet.** No convergence study results here (`benchmarks/results/convergence.json`: a checkout "
            "has them; the study's code was retired for the credit study, `docs/study.md`)."
        )
    seeds = results.get("min_seeds", 0)
    head = (
        f"Study `{results.get('study', '')}`: {len(results['arms'])} arms, at least {seeds} seeds each, "
        f"{results.get('cpu_h', 0):.1f} CPU hours"
        + ("" if results.get("complete") else " (**incomplete**: not every planned seed has finished)")
    )
    lines = [head + ".", "", results.get("conclusion", "")]
    lines += [f"- {a['verdict']}" for a in results["arms"].values() if a.get("verdict")]
    return "\n".join(lines)
