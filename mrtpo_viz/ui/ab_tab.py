"""Verifier information A/B tab: one response, one verifier, two information texts.

How people debug the wording of verifier information: both relevance rows on one colour scale, their difference,
and summary numbers (relevance mass on the verifier's relevant spans where known, concentration, top tokens).
"""
from __future__ import annotations

import gradio as gr
import pandas as pd

from .. import viz
from ..names import CONTROLS, INFO_POSITIONS, METRICS, TASKS
from ..tasks import available_tasks, get_verifier, list_verifiers
from .common import (MODEL, check_text, check_token_count, example_choices, get_example, get_policy, limits,
                     prompt_text, readable, with_prompt)
from .relevance_tab import task_examples

SUMMARY_ROWS = (
    ("mean", "mean relevance"), ("max", "max relevance"),
    ("span_mass", "share on the verifier's relevant spans"), ("top10_mass", "share on the top 10% of tokens"),
    ("effective_tokens", "effective number of tokens (exp entropy)"),
)


@readable
def ab_example(task: str, index):
    """Example -> prompt, reference response, the task's verifiers (first one chosen)."""
    ex = get_example(task, index)
    names = list_verifiers(task)
    first = ex.verifiers[0] if ex.verifiers else names[0]
    return prompt_text(ex), ex.reference or "", gr.update(choices=names, value=first)


@readable
def ab_infos(task: str, index, verifier: str):
    """Information A: the verifier's template for the example; B: its generic description, as a first rewording."""
    ex, v = get_example(task, index), get_verifier(verifier)
    return v.info(ex), v.description


def _summary(rel_a, rel_b, verifier: str) -> pd.DataFrame:
    a, b = viz.relevance_summary(rel_a, verifier), viz.relevance_summary(rel_b, verifier)
    fmt = lambda x: "n/a" if x is None else f"{x:.4f}"  # noqa: E731
    rows = [[label, fmt(a[key]), fmt(b[key])] for key, label in SUMMARY_ROWS]
    tops = [", ".join(f"{viz.visible(tok)!r} {s:.3f}" for tok, s in d["top_tokens"]) for d in (a, b)]
    return pd.DataFrame(rows + [["top tokens", *tops]], columns=["measure", "A", "B"])


@readable
def compare(checkpoint, task, index, prompt, response, verifier, info_a, info_b, position, metric, control):
    """Replay the response twice (information A, then B) and compare one verifier's relevance."""
    from ..relevance import replay

    ex = with_prompt(get_example(task, index), prompt)
    caps = limits()
    response = check_text("response", response, caps.max_chars)
    get_verifier(verifier)
    infos = [check_text(f"information {ab}", text, caps.max_info_chars, required=False)
             for ab, text in (("A", info_a), ("B", info_b))]
    policy = get_policy(checkpoint)
    check_token_count(policy, prompt_text(ex), response, max(infos, key=len))
    rel_a, rel_b = (replay(policy, ex, response, [verifier], infos={verifier: info}, metric=metric,
                           info_position=position, control=control) for info in infos)
    vmax = max(float(rel_a.scores.max()), float(rel_b.scores.max())) if rel_a.T else 0.0
    status = f"Compared two information texts for `{verifier}` over {rel_a.T} tokens ({metric}, control {control})."
    return (viz.token_rows_html(rel_a, vmax=vmax), viz.token_rows_html(rel_b, vmax=vmax),
            viz.difference_heatmap(rel_a, rel_b, verifier), _summary(rel_a, rel_b, verifier), status)


def _start_values(task: str, choices) -> dict:
    """The first example with its first verifier's information as A and its description as B."""
    if not choices:
        return {"example": None, "prompt": "", "response": "", "verifier": None, "a": "", "b": ""}
    ex = get_example(task, choices[0][1])
    v = get_verifier(ex.verifiers[0] if ex.verifiers else list_verifiers(task)[0])
    return {"example": choices[0][1], "prompt": prompt_text(ex), "response": ex.reference or "", "verifier": v.name,
            "a": v.info(ex), "b": v.description}


def build_ab_tab(checkpoint: gr.components.Component) -> None:
    first = example_choices(TASKS[0])
    start = _start_values(TASKS[0], first)
    with gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=360):
            with gr.Row():
                task = gr.Dropdown(available_tasks(), value=TASKS[0], label="Task family")
                example = gr.Dropdown(first, value=start["example"], label="Example (test split)")
            prompt = gr.Textbox(start["prompt"], label="Prompt", lines=3, max_lines=10)
            response = gr.Textbox(start["response"], label="Response", lines=3, max_lines=10)
            verifier = gr.Dropdown(list_verifiers(TASKS[0]), value=start["verifier"], label="Verifier")
            with gr.Row():
                info_a = gr.Textbox(start["a"], label="Information A", lines=4, max_lines=12)
                info_b = gr.Textbox(start["b"], label="Information B", lines=4, max_lines=12)
            with gr.Row():
                position = gr.Radio(list(INFO_POSITIONS), value=INFO_POSITIONS[0], label="information position")
                metric = gr.Dropdown(list(METRICS), value="js", label="metric")
                control = gr.Dropdown(list(CONTROLS), value="none", label="control")
            run_btn = gr.Button("Compare A and B", variant="primary")
        with gr.Column(scale=3, min_width=480):
            status = gr.Markdown("Pick an example, edit the two information texts, press **Compare**.")
            with gr.Row():
                html_a = gr.HTML(label="A")
                html_b = gr.HTML(label="B")
            diff = gr.Plot(viz.placeholder_figure("Press Compare: A, B and B - A per token"), label="A, B and B - A")
            summary = gr.Dataframe(label="summary", interactive=False)
    # the example index often stays 0 across tasks, so example.change would not fire: refill the fields explicitly
    task.change(task_examples, task, example, api_name=False
                ).success(ab_example, [task, example], [prompt, response, verifier], api_name=False)
    example.change(ab_example, [task, example], [prompt, response, verifier], api_name="ab_example")
    verifier.change(ab_infos, [task, example, verifier], [info_a, info_b], api_name=False)
    run_btn.click(compare, [checkpoint, task, example, prompt, response, verifier, info_a, info_b, position, metric,
                            control], [html_a, html_b, diff, summary, status], api_name="ab",
                  concurrency_id=MODEL, concurrency_limit=1)
