"""Rollouts tab: relevance for a whole JSONL file of rollouts, with aggregate views, one rollout's token view and a
download.

The scoring is :func:`mrtpo_viz.relevance.scoring.score_rows` (what the CLI's ``score`` runs); this tab streams its
progress and renders the table with :mod:`mrtpo_viz.viz`. A run starts by clearing the previous run's views. Stop
sets the session's :class:`~mrtpo_viz.ui.result_state.StopFlag` (no Gradio cancel, which would leave an error badge
on every output); the generator checks it after every rollout and ends with "Stopped at rollout n / m", showing the
rollouts scored before it.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import gradio as gr
import pandas as pd

from .. import viz
from ..names import CONTROLS, INFO_POSITIONS, METRICS
from ..relevance.scoring import ScoreProgress, read_rollouts, score_rows, write_atomic
from ..tasks.bundled_data import SAMPLE_ROLLOUTS
from .downloads import download_folder
from .errors import readable
from .input_limits import limits
from ..serving.fair_share import fair
from .policy_choice import MODEL, model_limit, get_policy
from .result_state import StopFlag
from .token_component import token_view, view_value
from .zerogpu import gpu

TOP_HEADERS = ["verifier", "token", "mean relevance", "count"]
TABLE_HEADERS = ["id", "verifier", "reward", "tokens", "mean relevance", "max relevance", "top token", "span share"]
UPLOAD_HELP = (
    "One JSON object per line: `task`, `prompt`, `response`, and optionally `meta`, `verifiers`, `id`. "
    f"Without a file, the bundled sample `{SAMPLE_ROLLOUTS.name}` is scored."
)
_PROGRESS = re.compile(r"Scoring `(?P<name>[^`]*)`: (?P<done>\d+) / (?P<total>\d+) rollouts")


def _rollouts_file(upload) -> tuple[Path, list[dict], list]:
    """The uploaded file, or the bundled sample when nothing is uploaded, read and checked for size and row count:
    (path, valid rows, problems of the bad lines)."""
    path = Path(upload) if upload else SAMPLE_ROLLOUTS
    caps = limits()
    rows, problems = read_rollouts(path, max_bytes=caps.max_upload_bytes)
    if not rows:
        raise ValueError(
            f"{path.name} holds no valid rollout (each line: a JSON object with task, prompt, response)."
            f"{_problems_md(problems)}"
        )
    if len(rows) > caps.max_rollouts:
        raise ValueError(
            f"{path.name} has {len(rows)} rollouts; at most {caps.max_rollouts} are scored here "
            "(env MRTPO_MAX_ROLLOUTS); use `python -m mrtpo_viz score` for more."
        )
    return path, rows, problems


def _problems_md(problems) -> str:
    if not problems:
        return ""
    lines = "\n".join(f"- line {n}: {msg}" for n, msg in problems[:20])
    more = f"\n- ... and {len(problems) - 20} more" if len(problems) > 20 else ""
    return f"\n\n**Skipped {len(problems)} line(s):**\n{lines}{more}"


def _empty(status: str):
    """The outputs of a run that has no results yet: the status, and every view emptied."""
    return (
        status,
        viz.placeholder_figure("Scoring: mean relevance per verifier"),
        pd.DataFrame(columns=TOP_HEADERS),
        pd.DataFrame(columns=TABLE_HEADERS),
        gr.update(value=None, interactive=False),
        gr.update(choices=[], value=None),
        None,
        None,
    )


@gpu("score")
@readable
def score_file(checkpoint, upload, metric, control, position, flag: StopFlag | None = None, progress=gr.Progress()):
    """Score every rollout (streaming progress), then show the aggregates and the first rollout's tokens.
    ``flag``: the session's stop flag (the Stop button sets it; the run ends after the rollout it is replaying).

    Yields (status, bars, top tokens, per-rollout table, CSV, rollout picker, token view, CSV path)."""
    flag = StopFlag() if flag is None else flag
    flag.start()
    try:
        yield from _score(checkpoint, upload, metric, control, position, flag, progress)
    finally:
        flag.running = False


def _score(checkpoint, upload, metric, control, position, flag: StopFlag, progress):
    path, rows, problems = _rollouts_file(upload)
    policy = get_policy(checkpoint)
    out = download_folder("rollouts-") / "relevance.csv"
    keep = gr.update()
    yield _empty(f"Scoring `{path.name}`: 0 / ... rollouts ({metric}, control {control}, `{checkpoint}`).")
    records, step = [], ScoreProgress(total=len(rows), problems=list(problems))
    # the tab keeps the records itself: after Stop, the rollouts scored so far are written and shown
    steps = score_rows(
        policy, rows, records, step, out=out, suffix=".csv", metric=metric, control=control, info_position=position
    )
    line, halted = "", False
    try:
        for step in itertools.chain([step], steps):  # noqa: B020 -- one progress object: 0 / n first, then each row
            progress((step.done, max(step.total, 1)), desc="replaying rollouts")
            line = f"Scoring `{path.name}`: {step.done} / {step.total} rollouts."
            if flag.stopped:
                halted = True
                break
            yield (line, *[keep] * 7)
    finally:
        steps.close()
    if halted and not step.scored:
        yield (stopped(line), viz.placeholder_figure("Stopped before a rollout was scored"), *[keep] * 6)
        return
    write_atomic(out, records, ".csv")
    frame = pd.read_csv(out) if records else pd.DataFrame()
    if frame.empty:
        raise ValueError(f"No rollout of {path.name} could be scored.{_problems_md(step.problems)}")
    status = (
        f"Scored {step.scored} rollouts of `{path.name}` with `{checkpoint}` ({metric}, control {control}), "
        f"{len(frame):,} token-verifier rows.{_problems_md(step.problems)}"
    )
    ids = [str(i) for i in dict.fromkeys(frame["id"].astype(str))]
    yield (
        stopped(line, step.scored) if halted else status,
        viz.mean_relevance_bars(frame),
        viz.top_tokens(frame, n=8, min_count=2),
        viz.rollout_summary(frame),
        gr.update(value=str(out), interactive=True),
        gr.update(choices=ids, value=ids[0]),
        view_value(_rollout_payload(frame, ids[0])),
        str(out),
    )


def _rollout_payload(frame: pd.DataFrame, rollout: str) -> dict:
    rows = frame[frame["id"].astype(str) == str(rollout)]
    if rows.empty:
        raise ValueError(f"No rollout {rollout!r} in the scored table.")
    return viz.frame_payload(rows, title=f"rollout {rollout} ({rows['task'].iloc[0]})" if "task" in rows else None)


@readable
def show_rollout(table_path, rollout):
    """One scored rollout's token view, read back from the per-token CSV of the run."""
    if not table_path or rollout is None:
        return None
    return view_value(_rollout_payload(pd.read_csv(table_path), rollout))


def stopped(status: str, scored: int = 0) -> str:
    """The status line after Stop: where the run stopped, and how many rollouts scored before it are shown."""
    m = _PROGRESS.search(status or "")
    if not m:
        return status
    shown = (
        f"the {scored} rollout{'s' * (scored != 1)} scored before it are shown below"
        if scored
        else "no rollout was scored"
    )
    return (
        f"**Stopped at rollout {m['done']}** / {m['total']} of `{m['name']}`; {shown}. "
        "Press the button to score the file again."
    )


def stop_scoring(flag: StopFlag) -> None:
    """The Stop button: the running run ends after the rollout it is replaying and says "Stopped at rollout n".
    It writes nothing itself (its answer could reach the page after the run's last update and overwrite it). Nothing
    happens when no run is going."""
    if flag.running:
        flag.stopped = True


def build_rollouts_tab(checkpoint: gr.components.Component) -> None:
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=320):
            gr.Markdown(UPLOAD_HELP, elem_classes=["mrtpo-footnote"])
            upload = gr.File(
                label="Rollouts (.jsonl)", file_types=[".jsonl"], type="filepath", height=120, elem_id="rollouts-upload"
            )
            metric = gr.Dropdown(list(METRICS), value="js", label="metric")
            control = gr.Dropdown(list(CONTROLS), value="none", label="control")
            position = gr.Radio(list(INFO_POSITIONS), value=INFO_POSITIONS[0], label="information position")
            run_btn = gr.Button("Compute relevance for all", variant="primary", elem_id="rollouts-btn")
            stop_btn = gr.Button("Stop", variant="stop", size="sm", elem_id="rollouts-stop")
            download = gr.DownloadButton("Download per-token CSV", value=None, interactive=False)
        with gr.Column(scale=3, min_width=480):
            status = gr.Markdown(
                f"Upload a file, or press the button to score the bundled sample `{SAMPLE_ROLLOUTS.name}`.",
                elem_id="rollouts-status",
            )
            bars = gr.Plot(
                viz.placeholder_figure("Score a file: mean relevance per verifier"),
                label="mean relevance per verifier",
                elem_id="rollouts-bars",
            )
            with gr.Row():
                picker = gr.Dropdown([], label="Rollout (its tokens below)", elem_id="rollout-picker", scale=1)
            view = token_view(elem_id="rollout-tokens", placeholder="Score a file to see a rollout's tokens.")
            top = gr.Dataframe(
                pd.DataFrame(columns=TOP_HEADERS),
                interactive=False,
                max_height=320,
                wrap=True,
                label="top tokens per verifier (mean relevance, seen at least twice)",
            )
            table = gr.Dataframe(
                pd.DataFrame(columns=TABLE_HEADERS),
                label="per rollout and verifier (filter by column)",
                interactive=False,
                show_search="filter",
                max_height=420,
                wrap=True,
                column_widths=["150px", "150px", "75px", "70px", "100px", "100px", "90px", "80px"],
                elem_id="rollouts-table",
            )
    table_path = gr.State(None)
    flag = gr.State(StopFlag())
    run_btn.click(
        fair(score_file),
        [checkpoint, upload, metric, control, position, flag],
        [status, bars, top, table, download, picker, view, table_path],
        api_name="rollouts",
        concurrency_id=MODEL,
        concurrency_limit=model_limit(),
    )
    # no cancels=[...]: a cancelled event leaves Gradio's error state on every output
    stop_btn.click(stop_scoring, flag, None, api_name=False, queue=False)
    picker.input(show_rollout, [table_path, picker], view, api_name=False)
