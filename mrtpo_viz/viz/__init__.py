"""Rendering: a :class:`~mrtpo_viz.relevance.Relevance` (or a metrics frame) becomes token HTML, a plotly figure, a
table or text. Pure functions of the data: no model, no gradio, and no math of its own (advantage parts come from
:mod:`mrtpo_viz.advantages`).

- :mod:`.colours`: scales and visible whitespace; :mod:`.tokens`: the token rows with hover text;
- :mod:`.figures`: heatmaps, A/B differences, advantage bars, rollout bars; :mod:`.advantages`: one response's
  advantage breakdown; :mod:`.summaries`: summary numbers and tables; :mod:`.text`: the CLI's table;
- :mod:`.training`: reward curves, phase times and a step's sample.
"""
from .advantages import AdvantageBreakdown, advantage_breakdown
from .colours import DIVERGING, OKABE_ITO, SCALE, VISIBLE_WHITESPACE, visible
from .figures import (advantage_bars, difference_heatmap, mean_relevance_bars, placeholder_figure,
                      relevance_heatmap)
from .summaries import relevance_summary, rollout_summary, top_tokens, verdict_rows
from .text import format_table
from .tokens import TOKEN_STYLE, legend_html, token_rows_html, tooltip

__all__ = ["AdvantageBreakdown", "DIVERGING", "OKABE_ITO", "SCALE", "TOKEN_STYLE", "VISIBLE_WHITESPACE",
           "advantage_bars", "advantage_breakdown", "difference_heatmap", "format_table", "legend_html",
           "mean_relevance_bars", "placeholder_figure", "relevance_heatmap", "relevance_summary", "rollout_summary",
           "token_rows_html", "tooltip", "top_tokens", "verdict_rows", "visible"]
