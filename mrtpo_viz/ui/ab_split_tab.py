"""The A/B tab's "compare over N examples": both wordings over a task's test split (or a file of examples), with
progress, Stop (the cases done stay), the per-case table sorted by B - A, a plot, a CSV, and a way to open one case
in the tab's single-example view above.

The work is :mod:`mrtpo_viz.relevance.ab_split`; the drawing :mod:`mrtpo_viz.viz.ab_split`. Stop sets the session's
:class:`~mrtpo_viz.ui.result_state.StopFlag` (no Gradio cancel, which leaves the error state on every output); the
generator checks it after every case. N is capped at the examples the single view lists (``MAX_EXAMPLES``), so
every case of a split can be opened there; a case of an uploaded file opens as a free prompt with its text.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr
import pandas as pd

from .. import viz
from ..relevance import ab_split
from ..serving.fair_share import fair
from ..viz.ab_over_split import TABLE_HEADERS, split_figure, split_table, summary_markdown
from .downloads import download_folder
from .example_picker import FREE_PROMPT, MAX_EXAMPLES, example_choices, examples, prompt_text
from .input_limits import rollout_limits
from .policy_choice import MODEL, get_policy, model_limit
from .result_state import StopFlag
from .zerogpu import gpu

HELP = (
    f"Both wordings over the first N examples (at most {MAX_EXAMPLES}) of the task's test split, or of an uploaded "
    "JSONL of examples (the Rollouts format; `response` is the gold). In a wording, `{own}` is the verifier's own "
    "information for each example and `{description}` its generic description. Each case is an example and one "
    "of its verifiers whose relevant spans on the gold are not empty."
)


def _cases(task, upload, n, only, verifier, wording_a, wording_b):
    """(cases, source label, bad lines, whether the cases come from the test split)."""
    n = int(n or 0)
    if not 1 <= n <= MAX_EXAMPLES:
        raise ValueError(f"N must lie between 1 and {MAX_EXAMPLES}.")
    if not (wording_a or "").strip() or not (wording_b or "").strip():
        raise ValueError("Both wordings need a text ({own} for each example's own information).")
    if upload:
        exs, problems = ab_split.examples_from_file(upload, rollout_limits())
        source, from_split = f"`{Path(upload).name}`", False
    else:
        exs, problems, source, from_split = list(examples(task)), [], f"the {task} test split", True
    cases = ab_split.split_cases(exs, n, wording_a, wording_b, [verifier] if only and verifier else ())
    if not cases:
        lines = "".join(f"\n- line {k}: {m}" for k, m in problems[:10])
        raise ValueError(
            f"No case in the first {n} examples of {source}: none has a gold response, a verifier with relevant "
            f"spans on it{' (only ' + verifier + ')' if only else ''} and two different wordings.{lines}"
        )
    return cases, source, problems, from_split


def _outputs(rows, total, state, stopped=False, out=None):
    summary = ab_split.summarize(rows)
    labels = [
        (f"{i}. {r.example} · {r.verifier} ({viz.fmt_sig(r.difference, signed=True)})", i - 1)
        for i, r in enumerate(sorted(rows, key=lambda r: r.difference), 1)
    ]
    state["order"] = [rows.index(r) for r in sorted(rows, key=lambda r: r.difference)]
    return (
        summary_markdown(summary, len(rows), total, stopped),
        split_figure(rows, summary) if rows else viz.placeholder_figure("Stopped before a case was done"),
        split_table(rows),
        gr.update(value=str(out), interactive=True) if out else gr.update(),
        gr.update(choices=labels, value=labels[0][1] if labels else None),
        state,
    )


@gpu("replay")
def compare_split(
    checkpoint,
    task,
    upload,
    n,
    only,
    verifier,
    wording_a,
    wording_b,
    position,
    metric,
    control,
    flag=None,
    progress=gr.Progress(),
):
    """Yields (status, plot, table, CSV, case picker, state) after every case; the table and plot at the end or at
    Stop."""
    flag = StopFlag() if flag is None else flag
    flag.start()
    try:
        cases, source, problems, from_split = _cases(task, upload, n, only, verifier, wording_a, wording_b)
        policy, rows, keep = get_policy(checkpoint), [], gr.update()
        state = {"task": task, "from_split": from_split, "cases": cases, "rows": rows}
        yield (f"Comparing over {source}: 0 / {len(cases)} cases ({metric}, control {control}).", *[keep] * 5)
        run = ab_split.compare_split(policy, cases, metric=metric, control=control, position=position)
        for row in run:
            rows.append(row)
            progress((len(rows), len(cases)), desc="replaying both wordings")
            if flag.stopped:
                break
            yield (f"Comparing over {source}: {len(rows)} / {len(cases)} cases.", *[keep] * 5)
        run.close()
        out = download_folder("ab-split-") / "ab_split.csv"
        pd.DataFrame([r.to_dict() for r in rows]).to_csv(out, index=False)
        status, *rest = _outputs(rows, len(cases), state, flag.stopped and len(rows) < len(cases), out)
        skipped = f" Skipped {len(problems)} bad line(s) of the file." if problems else ""
        yield (f"{status}{skipped} Over {source}, `{checkpoint}`.", *rest)
    finally:
        flag.running = False


def stop_split(flag: StopFlag) -> None:
    """The Stop button: the run ends after the case it is replaying, keeping every case done."""
    if flag.running:
        flag.stopped = True


def open_case(state, pick):
    """One case of the last split comparison -> the single-example view above (task, example, prompt, response,
    verifier, both wordings as filled in for it), its earlier results cleared."""
    if not state or pick is None:
        raise ValueError("Compare over N examples first, then pick a case.")
    case = state["cases"][state["order"][int(pick)]]  # rows are in case order; the picker in sorted order
    ex, task = case.example, state["task"] if state["from_split"] else case.example.task
    index = next((i for i, e in enumerate(examples(task)) if e.id == ex.id), FREE_PROMPT)
    from ..tasks import list_verifiers

    return (
        gr.update(value=task),
        gr.update(choices=example_choices(task), value=index),
        prompt_text(ex),
        ex.reference or "",
        gr.update(choices=list_verifiers(task), value=case.verifier),
        case.info_a,
        case.info_b,
        f"Opened case {int(pick) + 1} (`{ex.id}`, `{case.verifier}`) of the split comparison"
        + ("" if index != FREE_PROMPT else " as a free prompt (the file's example is not in the test split)")
        + ": press **Compare**.",
    )


def build_ab_split(checkpoint, single: dict) -> None:
    """The section under the single comparison; ``single`` holds the tab's components (task, example, prompt,
    response, verifier, info_a, info_b, position, metric, control, status)."""
    with gr.Accordion("Compare over N examples", open=True, elem_id="ab-split"):
        gr.Markdown(HELP, elem_classes=["mrtpo-footnote"])
        with gr.Row(equal_height=False):
            with gr.Column(scale=2, min_width=320):
                with gr.Row():
                    n = gr.Slider(1, MAX_EXAMPLES, value=20, step=1, label="N (examples)", elem_id="ab-split-n")
                    only = gr.Checkbox(False, label="only the verifier above", elem_id="ab-split-only")
                wording_a = gr.Textbox(ab_split.OWN, label="wording A", lines=2, elem_id="ab-split-a")
                wording_b = gr.Textbox(ab_split.DESCRIPTION, label="wording B", lines=2, elem_id="ab-split-b")
                upload = gr.File(
                    label="or a file of examples (.jsonl)", file_types=[".jsonl"], type="filepath", height=120
                )
                with gr.Row():
                    run_btn = gr.Button("Compare over N examples", variant="primary", elem_id="ab-split-btn")
                    stop_btn = gr.Button("Stop", variant="stop", size="sm", elem_id="ab-split-stop")
                download = gr.DownloadButton("Download the cases (CSV)", value=None, interactive=False)
            with gr.Column(scale=3, min_width=320):
                status = gr.Markdown("Press **Compare over N examples**.", elem_id="ab-split-status")
                plot = gr.Plot(
                    viz.placeholder_figure("B - A in span mass, one bar per case"),
                    label="B - A per case",
                    elem_id="ab-split-plot",
                )
                with gr.Row():
                    pick = gr.Dropdown(
                        [], label="case (worst for B first)", elem_id="ab-split-pick", scale=3, min_width=260
                    )
                    open_btn = gr.Button("Open in the view above", scale=1, min_width=120, elem_id="ab-split-open")
        table = gr.Dataframe(
            pd.DataFrame(columns=TABLE_HEADERS),
            label="cases, sorted by B - A in span mass",
            interactive=False,
            max_height=360,
            wrap=True,
            # wide enough that a header breaks between its words, never inside one ("effecti/ve")
            column_widths=["60px", "210px", "180px", *["90px"] * 5, *["110px"] * 3, "80px"],
            elem_id="ab-split-table",
        )
    state, flag = gr.State(None), gr.State(StopFlag())
    s = single
    run_btn.click(
        fair(compare_split),
        [
            checkpoint,
            s["task"],
            upload,
            n,
            only,
            s["verifier"],
            wording_a,
            wording_b,
            s["position"],
            s["metric"],
            s["control"],
            flag,
        ],
        [status, plot, table, download, pick, state],
        api_name="ab_split",
        concurrency_id=MODEL,
        concurrency_limit=model_limit(),
    )
    stop_btn.click(stop_split, flag, None, api_name=False, queue=False)
    open_btn.click(
        open_case,
        [state, pick],
        [s["task"], s["example"], s["prompt"], s["response"], s["verifier"], s["info_a"], s["info_b"], s["status"]],
        api_name=False,
    )
