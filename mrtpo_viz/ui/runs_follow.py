"""The Runs tab's Follow switch: while it is on, the open run's reward curves and step list refresh as a trainer
writes new steps, every :data:`FOLLOW_S` seconds, reading only what is new (:mod:`mrtpo_viz.integrations.run_follow`:
new step files once, a growing verl step file from where the last look stopped).

Off by default: a finished run needs no polling, and each look lists the run's folder again.
"""

from __future__ import annotations

import functools

import gradio as gr

from ..integrations import run_follow
from ..viz.training import reward_curves_figure
from .errors import readable

FOLLOW_S = 2.0
"""Seconds between two looks at a followed run."""


@readable
def follow_run(opened, state, followed):
    """One look at the open run -> (what was read, the curves, the step picker's choices, the note); the curves and
    the steps change only when a step is new or has grown. ``opened``: the tab's opener (state -> the run, within
    its caps)."""
    if not state:
        return None, gr.update(), gr.update(), "Open a run first: Follow then refreshes it as steps appear."
    key = [state["path"], state["base"]]
    cache = followed["cache"] if followed and followed.get("run") == key else None
    run = opened(state)
    curves, cache, changed = run_follow.refresh(run, state["names"], cache)
    followed = {"run": key, "cache": cache}
    if not changed:
        return followed, gr.update(), gr.update(), gr.update()
    steps = run.steps()
    choices = [(f"step {s}" + (" (eval)" if m == "eval" else ""), f"{m}:{s}") for m, s in steps]
    mode, last = steps[-1]
    note = f"Following: {len(steps)} step file(s), the last step {last}" + (" (eval)" if mode == "eval" else "")
    note += f"; read just now: {', '.join(f'step {s}' for _, s in changed[-5:])}."
    note += f" {curves.attrs['note']}" if curves.attrs.get("note") else ""
    return followed, _figure(run, curves), gr.update(choices=choices), note


def _figure(run, curves):
    columns = [c for c in curves.columns if c.startswith("reward/")]
    fig = reward_curves_figure(curves, columns, title=run.format.curves_title)
    values = curves[columns].to_numpy()
    if values.size and (values.min() < 0 or values.max() > 1):  # TRL rewards need not lie in [0, 1]
        fig.update_yaxes(range=None, autorange=True)
    return fig


def toggle(on: bool):
    """The Follow box -> the timer on or off."""
    return gr.Timer(active=bool(on))


def build_follow(state, curves, step, opened) -> None:
    """The Follow box and its note; while it is on, a timer looks at the open run (``state``, opened with
    ``opened``) and refreshes ``curves`` and ``step``'s choices."""
    with gr.Row():
        follow = gr.Checkbox(
            False, label=f"Follow the run (refresh every {FOLLOW_S:g} s as steps appear)", elem_id="run-follow", scale=0
        )
        note = gr.Markdown(elem_id="run-follow-note")
    followed = gr.State(None)
    timer = gr.Timer(FOLLOW_S, active=False)
    follow.change(toggle, follow, timer, api_name=False, queue=False)
    timer.tick(
        functools.partial(follow_run, opened),
        [state, followed],
        [followed, curves, step, note],
        api_name=False,
        show_progress="hidden",
        concurrency_id="run-follow",
        concurrency_limit=2,
    )
