"""The Token relevance tab's replay outputs: while a replay is in progress (:func:`.relevance_tab.replay_live`)
and at its end (:func:`final_outputs`).

A replay that :func:`mrtpo_viz.relevance.progressive.estimate_seconds` finds slow (SmolLM2-135M on one CPU core:
~3-4 s for 128 tokens and 3 verifiers) runs row by row; each step before the last becomes one update of the
replay's eight outputs: the token view with every token and the finished rows coloured (the others without
colour) and the status line saying which verifier is being replayed. The heatmap is cleared at the first step and
drawn once, with the result: a plotly redraw at every step takes CPU from the replay where page and app share a
2-core machine (SmolLM2, 128 tokens, K = 3, 2 threads: click to final heatmap 3.20 s with a redraw per row and a
progress overlay, 2.84 s with neither, interleaved; benchmarks/results/ui_latency_v4_against.md). The result state
is emptied at the first step (the earlier result no longer matches what the views show: the advantage
panel then says "Replay a response first" until the replay ends), the raw views are hidden and the verdicts
cleared; the group table keeps what it holds until the last step replaces it.
"""

from __future__ import annotations

import gradio as gr
import pandas as pd

from .. import viz
from .token_component import view_value


def default_group(rel) -> pd.DataFrame:
    """A group of four: the replayed response (its real rewards) and three contrasting ones, so every reward varies."""
    K = rel.K
    rows = [
        [rel.rewards.get(n, 0.0) for n in rel.verifiers],
        [0.0] * K,
        [1.0] * K,
        [float(k % 2 == 0) for k in range(K)],
    ]
    frame = pd.DataFrame(rows, columns=rel.verifiers)
    frame.insert(0, "response", ["replayed", "2", "3", "4"])
    return frame


def replayed_status(rel, policy_name: str, needs: dict) -> str:
    """The status line after a replay: what was replayed with what, and which verifiers need input."""
    text = (
        f"Replayed {rel.T} tokens with `{policy_name}` against {', '.join(f'`{n}`' for n in rel.verifiers)} "
        f"({rel.metric}, control {rel.control})."
    )
    if needs:
        text += (
            " **Needs input** (not scored, not replayed): "
            + "; ".join(f"`{n}` ({', '.join(m)})" for n, m in needs.items())
            + "."
        )
    return text


def final_outputs(rel, policy_name: str, needs: dict) -> tuple:
    """The eight outputs of :func:`.relevance_tab.replay_response` for a finished replay (a ``Relevance``): the
    state, the token view, the raw view, the heatmap, the raw heatmap, the verdicts, the group, the status line."""
    show_raw = rel.control != "none"
    # the raw views are only rendered when they differ from the controlled ones (control != none)
    raw_view = gr.update(
        value=view_value(viz.relevance_payload(rel, raw=True)) if show_raw else None, visible=show_raw, adv=None
    )
    raw_heat = gr.update(value=viz.relevance_heatmap(rel, raw=True) if show_raw else None, visible=show_raw)
    return (
        rel,
        gr.update(value=view_value(viz.relevance_payload(rel)), adv=None),
        raw_view,
        viz.relevance_heatmap(rel),
        raw_heat,
        pd.DataFrame(viz.verdict_rows(rel, needs), columns=viz.VERDICT_HEADERS),
        default_group(rel),
        replayed_status(rel, policy_name, needs),
    )


def last_row_before_result(step, control: str) -> bool:
    """Whether a step is the last verifier's row with the result right behind it (only the columns and verdicts
    left, ~0.1 s for SmolLM2): not shown, which spares the page a redraw of the token view and the heatmap. A
    control with extra branches (``placebo``, ``corrupted``, ``wrong_hint``) still runs them after it: shown."""
    from ..relevance.controls import get_control

    return step.done == step.K and get_control(control).extra_infos is None


def progress_title(step, policy_name: str) -> str:
    """What a step says: which verifier is being replayed, of how many, or that the scoring is left."""
    if step.done < step.K:
        return f"Replaying verifier {step.done + 1} of {step.K} (`{step.verifiers[step.done]}`) with `{policy_name}`…"
    return f"All {step.K} verifiers replayed with `{policy_name}`; scoring…"  # "Replayed ...": the result's


def progress_outputs(step, policy_name: str, metric: str, control: str) -> tuple:
    """The eight outputs of :func:`.relevance_tab.replay_response` for a step in progress (a
    :class:`mrtpo_viz.relevance.progressive.ReplayStep` without results): rows so far are the raw metric."""
    title = progress_title(step, policy_name)
    plain = title.replace("`", "")
    first = step.done == 0
    note = "" if control == "none" else f" Rows so far: raw {metric}; the {control} control comes at the end."
    return (
        None if first else gr.update(),
        gr.update(value=view_value(viz.step_payload(step, metric, title=plain)), adv=None),
        gr.update(value=None, visible=False) if first else gr.update(),
        None if first else gr.update(),  # drawn once, at the end (module docstring)
        gr.update(value=None, visible=False) if first else gr.update(),
        pd.DataFrame(columns=viz.VERDICT_HEADERS) if first else gr.update(),
        gr.update(),
        title + note,
    )
