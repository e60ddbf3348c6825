"""Rendering: a :class:`~mrtpo_viz.relevance.Relevance` (or a metrics frame) becomes a token-view payload, a plotly
figure, a table or text. Pure functions of the data: no model, no gradio, and no math of its own (advantage parts
come from :mod:`mrtpo_viz.advantages`, diagnostics from :mod:`mrtpo_viz.relevance.diagnostics`).

- :mod:`.colours`: scales and visible whitespace; :mod:`.numbers`: 3 significant digits;
- :mod:`.token_view`: the interactive token view's compact JSON (drawn by :mod:`mrtpo_viz.ui.token_component`);
- :mod:`.figures`: heatmaps, A/B differences, advantage bars, rollout bars (tokens on the x axis);
  :mod:`.advantages`: one response's advantage breakdown; :mod:`.summaries`: tables; :mod:`.text`: the CLI's table;
- :mod:`.training`: reward curves, phase times and a step's sample.
"""

from .advantages import AdvantageBreakdown, advantage_breakdown
from .colours import DIVERGING, OKABE_ITO, SCALE, VISIBLE_WHITESPACE, visible
from .figures import (
    advantage_bars,
    difference_heatmap,
    mean_relevance_bars,
    placeholder_figure,
    relevance_heatmap,
    token_axis,
)
from .numbers import fmt_sig, round_sig
from .summaries import (
    NEEDS_INPUT,
    VERDICT_HEADERS,
    WEIGHT_NOTE,
    distinct_snippets,
    rollout_summary,
    top_tokens,
    verdict_rows,
    weight_markdown,
)
from .text import format_table
from .token_view import frame_payload, payload_bytes, relevance_payload, step_payload, token_view_payload

__all__ = [
    "AdvantageBreakdown",
    "DIVERGING",
    "NEEDS_INPUT",
    "OKABE_ITO",
    "SCALE",
    "VERDICT_HEADERS",
    "VISIBLE_WHITESPACE",
    "WEIGHT_NOTE",
    "advantage_bars",
    "advantage_breakdown",
    "difference_heatmap",
    "distinct_snippets",
    "fmt_sig",
    "format_table",
    "frame_payload",
    "mean_relevance_bars",
    "payload_bytes",
    "placeholder_figure",
    "relevance_heatmap",
    "relevance_payload",
    "rollout_summary",
    "round_sig",
    "step_payload",
    "token_axis",
    "token_view_payload",
    "top_tokens",
    "verdict_rows",
    "visible",
    "weight_markdown",
]
