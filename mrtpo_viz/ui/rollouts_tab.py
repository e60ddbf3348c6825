"""Rollouts tab: relevance for a whole JSONL file of rollouts, with aggregate views and a download.

The scoring is :func:`mrtpo_viz.scoring.score_rollouts` (the CLI's ``score``); this tab streams its progress and
renders the written table with :mod:`mrtpo_viz.viz`.
"""
from __future__ import annotations

from pathlib import Path

import gradio as gr
import pandas as pd

from .. import viz
from ..names import CONTROLS, INFO_POSITIONS, METRICS
from ..relevance.scoring import read_rollouts, score_rollouts
from ..tasks.data import SAMPLE_ROLLOUTS
from .common import MODEL, download_folder, get_policy, limits, readable


def _rollouts_file(upload) -> Path:
    """The uploaded file, or the bundled sample when nothing is uploaded; checked for size and row count."""
    path = Path(upload) if upload else SAMPLE_ROLLOUTS
    caps = limits()
    rows, _ = read_rollouts(path, max_bytes=caps.max_upload_bytes)
    if not rows:
        raise ValueError(f"{path.name} holds no valid rollout (each line: a JSON object with task, prompt, response).")
    if len(rows) > caps.max_rollouts:
        raise ValueError(f"{path.name} has {len(rows)} rollouts; at most {caps.max_rollouts} are scored here "
                         "(env MRTPO_MAX_ROLLOUTS); use `python -m mrtpo_viz score` for more.")
    return path


def _problems_md(problems) -> str:
    if not problems:
        return ""
    lines = "\n".join(f"- line {n}: {msg}" for n, msg in problems[:20])
    more = f"\n- ... and {len(problems) - 20} more" if len(problems) > 20 else ""
    return f"\n\n**Skipped {len(problems)} line(s):**\n{lines}{more}"


@readable
def score_file(checkpoint, upload, metric, control, position, progress=gr.Progress()):
    """Score every rollout (streaming progress), then show the aggregates; yields (status, bars, top, table, csv)."""
    path = _rollouts_file(upload)
    policy = get_policy(checkpoint)
    out = download_folder("rollouts-") / "relevance.csv"
    keep = gr.update()
    for step in score_rollouts(policy, path, out=out, metric=metric, control=control, info_position=position):
        progress((step.done, max(step.total, 1)), desc="replaying rollouts")
        yield f"Scoring `{path.name}`: {step.done} / {step.total} rollouts.", keep, keep, keep, keep
    frame = pd.read_csv(out) if out.stat().st_size else pd.DataFrame()
    if frame.empty:
        raise ValueError(f"No rollout of {path.name} could be scored.{_problems_md(step.problems)}")
    status = (f"Scored {step.scored} rollouts of `{path.name}` ({metric}, control {control}), "
              f"{len(frame):,} token-verifier rows.{_problems_md(step.problems)}")
    yield (status, viz.mean_relevance_bars(frame), viz.top_tokens(frame, n=8, min_count=2),
           viz.rollout_summary(frame), str(out))


def build_rollouts_tab(checkpoint: gr.components.Component) -> None:
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=320):
            upload = gr.File(label="Rollouts JSONL (one object per line: task, prompt, response, meta?, "
                                   "verifiers?, id?); empty = the bundled sample", file_types=[".jsonl"],
                             type="filepath")
            metric = gr.Dropdown(list(METRICS), value="js", label="metric")
            control = gr.Dropdown(list(CONTROLS), value="none", label="control")
            position = gr.Radio(list(INFO_POSITIONS), value=INFO_POSITIONS[0], label="information position")
            run_btn = gr.Button("Compute relevance for all", variant="primary")
            stop_btn = gr.Button("Stop", variant="stop", size="sm")
            download = gr.DownloadButton("Download per-token CSV", value=None)
        with gr.Column(scale=3, min_width=480):
            status = gr.Markdown(f"Upload a file, or press the button to score the bundled sample "
                                 f"`{SAMPLE_ROLLOUTS.name}`.")
            bars = gr.Plot(viz.placeholder_figure("Score a file: mean relevance per verifier"),
                           label="mean relevance per verifier")
            top = gr.Dataframe(label="top tokens per verifier (mean relevance, seen at least twice)",
                               interactive=False, max_height=320)
            table = gr.Dataframe(label="per rollout and verifier (filter by column)", interactive=False,
                                 show_search="filter", max_height=420)
    event = run_btn.click(score_file, [checkpoint, upload, metric, control, position],
                          [status, bars, top, table, download], api_name="rollouts", concurrency_id=MODEL,
                          concurrency_limit=1)
    stop_btn.click(None, cancels=[event])
