"""Verifier information A/B tab: one response, one verifier, two information texts.

How people debug the wording of verifier information: both token views on one colour scale (headed A and B), their
difference, and summary numbers (relevance mass on the verifier's relevant spans where known, concentration, top
tokens). A verifier that needs input (a free prompt without its arguments) is still replayed against the two typed
texts, but not scored. Under it, the same comparison over N examples (:mod:`.ab_split_tab`).
"""

from __future__ import annotations

import gradio as gr
import pandas as pd

from .. import viz
from ..names import CONTROLS, INFO_POSITIONS, METRICS, TASKS
from ..relevance.diagnostics import relevance_summary
from ..tasks import available_tasks, get_verifier, list_verifiers
from .ab_split_tab import build_ab_split
from .arguments import information, with_typed_args
from .errors import readable
from .example_picker import FREE_PROMPT, example_choices, first_example, get_example, prompt_text, with_prompt
from .input_limits import check_text, check_token_count, limits
from ..serving.fair_share import fair
from .policy_choice import MODEL, model_limit, get_policy
from .result_state import stale_status
from .relevance_tab import task_examples
from .token_component import token_view, view_value
from .zerogpu import gpu

SUMMARY_ROWS = (
    ("mean", "mean relevance"),
    ("max", "max relevance"),
    ("span_mass", "share on the verifier's relevant spans"),
    ("top10_mass", "share on the top 10% of tokens"),
    ("effective_tokens", "effective number of tokens (exp entropy)"),
)
SUMMARY_HEADERS = ["measure", "A", "B"]


@readable
def ab_example(task: str, index):
    """Example -> prompt, reference response, the task's verifiers (the example's first one chosen)."""
    ex = get_example(task, index)
    names = list_verifiers(task)
    first = ex.verifiers[0] if ex.verifiers else names[0]
    return prompt_text(ex), ex.reference or "", gr.update(choices=names, value=first)


@readable
def ab_infos(task: str, index, verifier: str):
    """Information A: the verifier's own for the example (empty when it needs input); B: its generic description,
    as a first rewording."""
    v = get_verifier(verifier)
    ex, _ = with_typed_args(get_example(task, index), [verifier], [])
    return information(v, ex) or "", v.description


def _summary(rel_a, rel_b, verifier: str) -> pd.DataFrame:
    a, b = relevance_summary(rel_a, verifier), relevance_summary(rel_b, verifier)
    rows = [[label, viz.fmt_sig(a[key]), viz.fmt_sig(b[key])] for key, label in SUMMARY_ROWS]
    tops = [", ".join(f"{viz.visible(tok)!r} {viz.fmt_sig(s)}" for tok, s in d["top_tokens"]) for d in (a, b)]
    return pd.DataFrame(rows + [["top tokens", *tops]], columns=SUMMARY_HEADERS)


def _title(text: str) -> str:
    one_line = " ".join(text.split())
    return f"information: {one_line[:90]}{'...' if len(one_line) > 90 else ''}" if one_line else "no information"


@gpu("replay")
@readable
def compare(checkpoint, task, index, prompt, response, verifier, info_a, info_b, position, metric, control):
    """Replay the response twice (information A, then B) and compare one verifier's relevance."""
    from ..relevance import replay

    ex = with_prompt(get_example(task, index), prompt)
    caps = limits()
    response = check_text("response", response, caps.max_chars)
    get_verifier(verifier)
    infos = [
        check_text(f"information {ab}", text, caps.max_info_chars, required=False)
        for ab, text in (("A", info_a), ("B", info_b))
    ]
    ex, needs = with_typed_args(ex, [verifier], [])
    target = ex if not needs else ex.messages()  # needs input: replayed against the typed texts, not scored
    policy = get_policy(checkpoint)
    check_token_count(policy, prompt_text(ex), response, max(infos, key=len))
    rel_a, rel_b = (
        replay(
            policy,
            target,
            response,
            [verifier],
            infos={verifier: info},
            metric=metric,
            info_position=position,
            control=control,
        )
        for info in infos
    )
    vmax = max(float(rel_a.scores.max()), float(rel_b.scores.max())) if rel_a.T else 0.0
    status = (
        f"Compared two information texts for `{verifier}` over {rel_a.T} tokens with `{policy.name}` "
        f"({metric}, control {control})."
    )
    if needs:
        status += f" Not scored: `{verifier}` needs input ({', '.join(needs[verifier])}); pick an example to score it."
    return (
        view_value(viz.relevance_payload(rel_a, vmax=vmax, title=_title(infos[0]))),
        view_value(viz.relevance_payload(rel_b, vmax=vmax, title=_title(infos[1]))),
        viz.difference_heatmap(rel_a, rel_b, verifier),
        _summary(rel_a, rel_b, verifier),
        status,
    )


def ab_stale(status: str):
    """An input of a comparison changed: a comparison's status line is marked stale (none shown: no change)."""
    return stale_status(status, "Compare") if (status or "").startswith("Compared") else gr.update()


def ab_cleared():
    """The results emptied after the task or the example changed."""
    return (
        None,
        None,
        viz.placeholder_figure("Press Compare: A, B and B - A per token"),
        pd.DataFrame(columns=SUMMARY_HEADERS),
        "Example changed: the earlier comparison was cleared. Press **Compare**.",
    )


def _start_values(task: str, choices) -> dict:
    """The first example with its first verifier's information as A and its description as B."""
    index = first_example(choices)
    ex = get_example(task, index)
    name = ex.verifiers[0] if ex.verifiers and index != FREE_PROMPT else list_verifiers(task)[0]
    a, b = ab_infos(task, index, name)
    return {
        "example": index,
        "prompt": prompt_text(ex),
        "response": ex.reference or "",
        "verifier": name,
        "a": a,
        "b": b,
    }


def build_ab_tab(checkpoint: gr.components.Component) -> None:
    start = _start_values(TASKS[0], example_choices(TASKS[0]))
    with gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=360):
            with gr.Row():
                task = gr.Dropdown(available_tasks(), value=TASKS[0], label="Task family", elem_id="ab-task")
                example = gr.Dropdown(
                    example_choices(TASKS[0]),
                    value=start["example"],
                    label="Example (test split)",
                    elem_id="ab-example",
                )
            prompt = gr.Textbox(start["prompt"], label="Prompt", lines=3, max_lines=10)
            response = gr.Textbox(start["response"], label="Response", lines=3, max_lines=10, elem_id="ab-response")
            verifier = gr.Dropdown(
                list_verifiers(TASKS[0]), value=start["verifier"], label="Verifier", elem_id="ab-verifier"
            )
            info_a = gr.Textbox(start["a"], label="Information A", lines=4, max_lines=12, elem_id="info-a")
            info_b = gr.Textbox(start["b"], label="Information B", lines=4, max_lines=12, elem_id="info-b")
            with gr.Row():
                position = gr.Radio(list(INFO_POSITIONS), value=INFO_POSITIONS[0], label="information position")
                metric = gr.Dropdown(list(METRICS), value="js", label="metric")
                control = gr.Dropdown(list(CONTROLS), value="none", label="control")
            run_btn = gr.Button("Compare A and B", variant="primary", elem_id="ab-btn")
        with gr.Column(scale=3, min_width=480):
            status = gr.Markdown(
                "Pick an example, edit the two information texts, press **Compare**.", elem_id="ab-status"
            )
            with gr.Row(equal_height=False, elem_classes=["mrtpo-ab-views"]):
                # a pin in one view pins the same position in the other; on a phone B goes under A
                view_a = token_view(heading="A", elem_id="ab-tokens-a", placeholder="Press Compare.", link="ab")
                view_b = token_view(heading="B", elem_id="ab-tokens-b", placeholder="Press Compare.", link="ab")
            diff = gr.Plot(
                viz.placeholder_figure("Press Compare: A, B and B - A per token"),
                label="A, B and B - A",
                elem_id="ab-diff",
            )
            summary = gr.Dataframe(
                pd.DataFrame(columns=SUMMARY_HEADERS),
                label="summary",
                interactive=False,
                wrap=True,
                column_widths=["34%", "33%", "33%"],
                elem_id="ab-summary",
            )
    results = [view_a, view_b, diff, summary, status]
    # a user's pick refills what follows from it, explicitly (.input: a case opened from the split comparison sets
    # task, example, verifier and both texts at once, and nothing may refill them after it)
    task.input(task_examples, task, example, api_name=False).success(ab_cleared, None, results, api_name=False).success(
        ab_example, [task, example], [prompt, response, verifier], api_name=False
    ).success(ab_infos, [task, example, verifier], [info_a, info_b], api_name=False)
    example.input(ab_cleared, None, results, api_name=False).then(
        ab_example, [task, example], [prompt, response, verifier], api_name="ab_example"
    ).success(ab_infos, [task, example, verifier], [info_a, info_b], api_name=False)
    verifier.input(ab_infos, [task, example, verifier], [info_a, info_b], api_name=False)
    gr.on(
        [x.change for x in (prompt, response, verifier, info_a, info_b, position, metric, control)]
        + [checkpoint.input],
        ab_stale,
        status,
        status,
        api_name=False,
        queue=False,
        show_progress="hidden",
    )
    run_btn.click(
        fair(compare),
        [checkpoint, task, example, prompt, response, verifier, info_a, info_b, position, metric, control],
        results,
        api_name="ab",
        concurrency_id=MODEL,
        concurrency_limit=model_limit(),
    )
    single = dict(task=task, example=example, prompt=prompt, response=response, verifier=verifier, info_a=info_a)
    single.update(info_b=info_b, position=position, metric=metric, control=control, status=status)
    build_ab_split(checkpoint, single)
