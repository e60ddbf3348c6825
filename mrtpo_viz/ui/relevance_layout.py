"""The Token relevance tab's layout and wiring (its handlers: :mod:`.relevance_tab`).

Results never stay beside inputs they do not belong to: a task or example change clears them; any other input that
changes a result (the checkpoint, prompt, response, verifier ticks, information, arguments, position, metric,
control, template) marks them stale (:func:`~mrtpo_viz.ui.result_state.mark_stale`); Generate locks the Replay button
until the new response is in the box (a Replay queued behind Generate would replay the old one).
"""

from __future__ import annotations

from functools import partial

import gradio as gr
import pandas as pd

from .. import viz
from ..names import CONTROLS, INFO_POSITIONS, METRICS, TASKS
from ..relevance.contexts import DEFAULT_INFO_TEMPLATE
from ..tasks import available_tasks, list_verifiers
from .arguments import FIELDS
from .example_picker import example_choices, first_example, get_example, prompt_text
from .input_limits import MAX_VERIFIERS, limits
from ..serving.fair_share import fair
from .policy_choice import MODEL, model_limit
from .result_state import mark_stale
from .credit_view import compare_section, credit_choice, wire_compare
from .custom_verifiers import KIND_CHOICES, add_custom
from .relevance_tab import (
    RELEVANCE_SOURCES,
    VERDICT_HEADERS,
    GROUP_NOTE,
    advantages,
    cleared,
    derive_info,
    downloads,
    generate,
    info_boxes,
    pick_example,
    replay_live,
    reselect_info_boxes,
    sample_group,
    task_examples,
)
from .token_component import token_view


AFTER_HEATMAP = """() => new Promise((done) => {
  const t0 = performance.now();
  const check = () => (document.querySelector('#relevance-heatmap .heatmaplayer') || performance.now() - t0 > 2000)
    ? requestAnimationFrame(() => done()) : requestAnimationFrame(check);
  check();
})"""
"""Waits (in the browser, at most 2 s) until the heatmap is drawn: the advantage bars come after it, not at the same
moment, since on a small machine both drawings compete for the same CPU."""


def lock_buttons():
    """Generate and Replay greyed out while a response is being generated."""
    return gr.update(interactive=False), gr.update(interactive=False)


def unlock_buttons():
    return gr.update(interactive=True), gr.update(interactive=True)


def _start_values(task: str, choices) -> dict:
    """What the inputs show when the page opens: the first example, its reference, its information and fields."""
    index = first_example(choices)
    ex = get_example(task, index)
    chosen = list(ex.verifiers)[:MAX_VERIFIERS]
    out = info_boxes(task, index, chosen)
    plain = lambda u: {k: v for k, v in u.items() if k != "__type__"}  # noqa: E731  (an update as constructor args)
    return {
        "index": index,
        "prompt": prompt_text(ex),
        "response": ex.reference or "",
        "chosen": chosen,
        "infos": [plain(u) for u in out[:MAX_VERIFIERS]],
        "fields": [plain(u) for u in out[MAX_VERIFIERS:-1]],
    }


def _inputs_column(start: dict):
    """The left column's components, by name."""
    c = {}
    with gr.Row():
        c["task"] = gr.Dropdown(available_tasks(), value=TASKS[0], label="Task family")
        c["example"] = gr.Dropdown(example_choices(TASKS[0]), value=start["index"], label="Example (test split)")
    c["prompt"] = gr.Textbox(
        start["prompt"],
        label="Prompt (edit it, or pick the free prompt at the end of the examples)",
        lines=4,
        max_lines=12,
        elem_id="prompt-box",
    )
    c["response"] = gr.Textbox(
        start["response"],
        label="Response (generate one, or paste / edit)",
        lines=4,
        max_lines=12,
        elem_id="response-box",
    )
    with gr.Row():
        c["gen_btn"] = gr.Button("Generate", variant="secondary", elem_id="generate-btn")
        c["replay_btn"] = gr.Button("Replay", variant="primary", elem_id="replay-btn")
    with gr.Accordion("Generation settings", open=False):
        c["temperature"] = gr.Slider(0.0, 2.0, value=1.0, step=0.05, label="temperature (0 = greedy)")
        c["top_p"] = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label="top_p")
        c["max_new"] = gr.Slider(8, limits().max_new_tokens, value=128, step=8, label="max new tokens")
        c["seed"] = gr.Number(0, precision=0, label="seed")
    c["verifiers"] = gr.CheckboxGroup(
        list_verifiers(TASKS[0]),
        value=start["chosen"],
        elem_id="verifier-choice",
        label=f"Verifiers (at most {MAX_VERIFIERS} at once)",
    )
    c.update(_custom_form())
    with gr.Accordion(
        "Verifier information and arguments (editable; an empty information box takes the verifier's own)", open=True
    ):
        c["infos"], c["fields"], c["field_msgs"] = [], [], []
        for k in range(MAX_VERIFIERS):
            c["infos"].append(gr.Textbox(**start["infos"][k], lines=2, max_lines=8, elem_classes=["mrtpo-info"]))
            c["fields"] += [
                gr.Textbox(**start["fields"][k * FIELDS + j], lines=1, max_lines=4, elem_classes=["mrtpo-arg"])
                for j in range(FIELDS)
            ]
            c["field_msgs"].append(
                gr.Markdown("", visible=False, elem_id=f"field-msg-{k}", elem_classes=["mrtpo-field-msg"])
            )
        c["reset_btn"] = gr.Button("Reset information and arguments to the example's", size="sm")
    with gr.Row():
        c["position"] = gr.Radio(list(INFO_POSITIONS), value=INFO_POSITIONS[0], label="information position")
        c["metric"] = gr.Dropdown(list(METRICS), value="js", label="metric")
        c["control"] = gr.Dropdown(list(CONTROLS), value="none", label="control")
    with gr.Accordion("Information block template", open=False):
        c["template"] = gr.Textbox(
            DEFAULT_INFO_TEMPLATE, label="template ({title} and {info}; {info} is required)", lines=2
        )
    return c


def _custom_form() -> dict:
    """The declarative custom-verifier form (no user code runs): its components, by name."""
    f = {}
    with gr.Accordion("Add a custom verifier (regex, keywords or JSON schema; for this session)", open=False):
        with gr.Row():
            f["c_name"] = gr.Textbox("custom.no_apology", label="name (custom.<word>)", elem_id="custom-name")
            f["c_title"] = gr.Textbox("No apology", label="title")
            f["c_kind"] = gr.Dropdown(KIND_CHOICES, value="regex_must_not", label="kind", elem_id="custom-kind")
        f["c_info"] = gr.Textbox(
            "The response must not apologize.",
            label="information (what it checks, in words)",
            lines=2,
            elem_id="custom-info",
        )
        with gr.Row():
            f["c_pattern"] = gr.Textbox(
                r"\b(sorry|apologi[sz]e)\b", label="regex (regex kinds)", elem_id="custom-pattern"
            )
            f["c_case"] = gr.Checkbox(True, label="ignore case")
        f["c_keywords"] = gr.Textbox(
            "", label="keywords, comma-separated (keywords: the share present)", elem_id="custom-keywords"
        )
        f["c_schema"] = gr.Code("", language="json", label="JSON schema (json_schema)", elem_id="custom-schema")
        f["c_add"] = gr.Button("Add and choose it", size="sm", elem_id="custom-add")
        f["c_status"] = gr.Markdown(elem_id="custom-status")
    return f


def _results_column():
    """The right column's components, by name."""
    r = {}
    r["status"] = gr.Markdown(
        "Pick an example and press **Replay**.", elem_classes=["mrtpo-status"], elem_id="relevance-status"
    )
    with gr.Row():
        r["view"] = token_view(elem_id="relevance-tokens")
        r["raw_view"] = token_view(heading="raw (no control)", visible=False, elem_id="relevance-tokens-raw")
    # the heatmap takes the column's whole width (beside the diagnostics it was ~200 px of cells); the
    # diagnostics table follows under it and scrolls sideways when many verifiers make it wide
    r["heatmap"] = gr.Plot(
        viz.placeholder_figure("Press Replay: one row per verifier, one column per token"),
        label="verifiers x tokens",
        elem_id="relevance-heatmap",
    )
    gr.Markdown("**MRTPO weight diagnostics** (alpha, gamma and relevance from the advantage panel)")
    r["weights"] = gr.Markdown(
        "Replay a response to see how concentrated each verifier's credit is.",
        elem_id="weight-diagnostics",
        elem_classes=["mrtpo-weights", "mrtpo-table"],
    )
    r["raw_heatmap"] = gr.Plot(label="raw relevance (no control)", visible=False)
    r["verdicts"] = gr.Dataframe(
        pd.DataFrame(columns=VERDICT_HEADERS),
        label="verifier scores and reasons",
        interactive=False,
        wrap=True,  # px: on a phone the table scrolls, no header breaks per letter
        column_widths=["170px", "70px", "250px", "105px", "105px"],
        elem_id="verdicts",
    )
    with gr.Accordion("Advantages: GDPO vs MRTPO for a group", open=True):
        gr.Markdown(GROUP_NOTE)
        r["rewards"] = gr.Dataframe(
            pd.DataFrame(columns=["response"]),
            label="group rewards (G x K)",
            interactive=True,
            wrap=True,
            elem_id="group-rewards",
        )
        with gr.Row():
            r["alpha"] = gr.Slider(0.0, 1.0, value=1.0, step=0.05, label="alpha", elem_id="alpha")
            r["gamma"] = gr.Slider(0.0, 4.0, value=1.0, step=0.1, label="gamma", elem_id="gamma")
            r["source"] = gr.Radio(list(RELEVANCE_SOURCES), value="controlled", label="relevance for MRTPO")
            r["credit"] = credit_choice()
        with gr.Row():
            r["G"] = gr.Slider(2, 8, value=4, step=1, label="group size G")
            r["sample_btn"] = gr.Button("Sample a group with the policy", size="sm")
        r["adv_plot"] = gr.Plot(
            viz.placeholder_figure("Replay a response: per-token GDPO and MRTPO advantages"),
            label="per-token advantage",
            elem_id="advantage-bars",
        )
        r["adv_text"] = gr.Markdown()
    r.update(compare_section())
    with gr.Row():
        r["csv_file"] = gr.DownloadButton("Download CSV (per-token table)", value=None, interactive=False)
        r["json_file"] = gr.DownloadButton("Download JSON (Relevance)", value=None, interactive=False)
    return r


def build_relevance_tab(checkpoint: gr.components.Component) -> None:
    """The tab's layout and wiring; ``checkpoint`` is the app's shared checkpoint picker."""
    start = _start_values(TASKS[0], example_choices(TASKS[0]))
    with gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=360):
            c = _inputs_column(start)
        with gr.Column(scale=3, min_width=480):
            r = _results_column()
    rel_state = gr.State(None)
    shown = gr.State(start["chosen"])  # the verifiers whose information the boxes hold, in order
    customs = gr.State({})  # this session's custom verifiers: name -> declarative spec
    task, example, verifiers, infos, fields = c["task"], c["example"], c["verifiers"], c["infos"], c["fields"]
    boxes = [*infos, *fields, shown]
    results = [
        rel_state,
        r["view"],
        r["raw_view"],
        r["heatmap"],
        r["raw_heatmap"],
        r["verdicts"],
        r["rewards"],
        r["status"],
        r["adv_plot"],
        r["adv_text"],
        r["weights"],
        r["csv_file"],
        r["json_file"],
    ]
    picked = [c["prompt"], c["response"], verifiers]
    # the advantage breakdown is cheap and bounded (256 rows, bodies over 1 MiB refused): in the group, not gated
    heavy = dict(concurrency_id=MODEL, concurrency_limit=model_limit())

    # the example index often stays the same across tasks, so example.change would not fire: refill explicitly
    task.change(task_examples, task, example, api_name="task_examples").success(
        cleared, task, results, api_name=False
    ).success(pick_example, [task, example, customs], picked, api_name=False).success(
        info_boxes, [task, example, verifiers, customs], boxes, api_name=False
    )
    example.change(cleared, task, results, api_name=False).then(
        pick_example, [task, example, customs], picked, api_name="pick_example"
    ).success(info_boxes, [task, example, verifiers, customs], boxes, api_name=False)
    reselect = [task, example, verifiers, shown, customs, *infos, *fields]
    verifiers.input(reselect_info_boxes, reselect, [*boxes, verifiers], api_name=False)
    form = [c[k] for k in ("c_name", "c_title", "c_info", "c_kind", "c_pattern", "c_keywords", "c_schema", "c_case")]
    c["c_add"].click(
        fair(add_custom),
        [customs, task, verifiers, *form],
        [customs, verifiers, c["c_status"]],
        api_name="add_verifier",
        concurrency_id=MODEL,
        concurrency_limit=model_limit(),
    ).success(reselect_info_boxes, reselect, [*boxes, verifiers], api_name=False)
    for k in range(MAX_VERIFIERS):
        own = fields[k * FIELDS : (k + 1) * FIELDS]
        gr.on(
            [t for f in own for t in (f.blur, f.submit)],
            partial(derive_info, k),
            [task, example, shown, customs, *own],
            [infos[k], c["field_msgs"][k]],
            api_name=False,
            queue=False,
        )
    c["reset_btn"].click(info_boxes, [task, example, verifiers, customs], boxes, api_name=False)
    c["gen_btn"].click(lock_buttons, None, [c["gen_btn"], c["replay_btn"]], queue=False, api_name=False).then(
        fair(generate),
        [checkpoint, task, example, c["prompt"], c["temperature"], c["top_p"], c["max_new"], c["seed"]],
        [c["response"], r["status"]],
        api_name="generate",
        concurrency_id=MODEL,
        concurrency_limit=model_limit(),
    ).then(unlock_buttons, None, [c["gen_btn"], c["replay_btn"]], queue=False, api_name=False)
    # every input that changes a result: the results stay, their status line says they are stale
    affecting = [
        c["prompt"],
        c["response"],
        verifiers,
        *infos,
        *fields,
        c["position"],
        c["metric"],
        c["control"],
        c["template"],
    ]
    gr.on(
        [x.change for x in affecting] + [checkpoint.input],
        mark_stale,
        [rel_state, r["status"]],
        r["status"],
        api_name=False,
        queue=False,
        show_progress="hidden",
    )
    adv_in, adv_out = (
        [rel_state, r["rewards"], r["alpha"], r["gamma"], r["source"], r["credit"]],
        [r["adv_plot"], r["adv_text"], r["weights"], r["view"]],
    )
    replayed = (
        c["replay_btn"]
        .click(
            fair(replay_live),  # a generator: rows appear one by one where the replay is slow
            [
                checkpoint,
                task,
                example,
                c["prompt"],
                c["response"],
                verifiers,
                c["position"],
                c["metric"],
                c["control"],
                c["template"],
                customs,
                *infos,
                *fields,
            ],
            results[:8],
            api_name="replay",
            concurrency_id=MODEL,
            concurrency_limit=model_limit(),
            # no overlay: an animated overlay costs the browser CPU that, where the page and the app share a small
            # machine, the replay itself needs (with it and a heatmap redraw per row: 3.20 s against 2.84 s to the
            # heatmap, interleaved; benchmarks/results/ui_latency_v4_against.md); a slow replay's first step says
            # what it replays
            show_progress="hidden",
        )
        .success(None, js=AFTER_HEATMAP, api_name=False)
    )
    replayed = replayed.success(advantages, adv_in, adv_out, api_name="advantages", show_progress="hidden", **heavy)
    replayed.success(
        downloads, rel_state, [r["csv_file"], r["json_file"]], api_name="downloads", show_progress="hidden"
    )
    wire_compare(r, rel_state, replayed, **heavy)
    # .change, not .release: typing a value into a slider's number box and pressing Enter redraws too
    gr.on(
        [r["alpha"].change, r["gamma"].change, r["source"].change, r["credit"].change, r["rewards"].input],
        advantages,
        adv_in,
        adv_out,
        api_name=False,
        trigger_mode="always_last",
        **heavy,
        show_progress="hidden",
    )
    r["sample_btn"].click(
        fair(sample_group),
        [
            checkpoint,
            rel_state,
            task,
            example,
            c["prompt"],
            r["G"],
            c["temperature"],
            c["top_p"],
            c["max_new"],
            c["seed"],
            customs,
            shown,
            *fields,
        ],
        r["rewards"],
        api_name="sample_group",
        concurrency_id=MODEL,
        concurrency_limit=model_limit(),
    ).success(advantages, adv_in, adv_out, api_name=False, show_progress="hidden", **heavy)
