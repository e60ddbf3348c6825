"""Token relevance tab: pick an example, generate or paste a response, replay it against its verifiers, and see
which tokens each reward depends on, and where MRTPO would put each reward's advantage.

Handlers are module-level (each with an ``api_name``): they validate input, make one library call and convert its
result with :mod:`mrtpo_viz.viz`.
"""
from __future__ import annotations


import gradio as gr
import pandas as pd

from .. import viz
from ..names import CONTROLS, INFO_POSITIONS, METRICS, TASKS
from ..relevance.contexts import DEFAULT_INFO_TEMPLATE
from ..tasks import available_tasks, get_verifier, list_verifiers
from .common import (MAX_VERIFIERS, MODEL, check_text, check_token_count, download_folder, example_choices,
                     get_example, get_policy, limits, prompt_text, readable, with_prompt)

VERDICT_HEADERS = ["verifier", "reward", "reason", "mean relevance", "max relevance"]
RELEVANCE_SOURCES = ("controlled", "raw")
"""Which relevance MRTPO's weights use in the advantage panel: after the control, or the paper's raw signal."""


# ----------------------------------------------------------------------------------------------- handlers

@readable
def pick_example(task: str, index):
    """Example -> prompt box, its reference response, and its verifiers (choices and selection)."""
    ex = get_example(task, index)
    chosen = (list(ex.verifiers) or list_verifiers(task))[:MAX_VERIFIERS]
    return prompt_text(ex), ex.reference or "", gr.update(choices=list_verifiers(task), value=chosen)


def task_examples(task: str):
    choices = example_choices(task)
    return gr.update(choices=choices, value=choices[0][1] if choices else None)


@readable
def info_boxes(task: str, index, verifiers: list[str]):
    """One information box per chosen verifier, filled with its template for the example; and the names shown."""
    ex = get_example(task, index)
    verifiers = list(verifiers or [])[:MAX_VERIFIERS]
    boxes = [gr.update(visible=True, label=f"{name}: {get_verifier(name).title}", value=get_verifier(name).info(ex))
             for name in verifiers]
    return boxes + [gr.update(visible=False, value="") for _ in range(MAX_VERIFIERS - len(verifiers))] + [verifiers]


@readable
def reselect_info_boxes(task: str, index, verifiers: list[str], shown: list[str], *texts: str):
    """After the verifier selection changes: a verifier that stays chosen keeps its (possibly edited) text, a newly
    chosen one gets its template. ``shown`` are the verifiers the boxes held, in order, ``texts`` the boxes' text."""
    kept = dict(zip(shown or [], texts))
    out = info_boxes(task, index, verifiers)
    for i, name in enumerate(out[-1]):  # the verifiers the boxes now hold
        if name in kept:
            out[i]["value"] = kept[name]
    return out


@readable
def generate(checkpoint, task, index, prompt, temperature, top_p, max_new_tokens, seed):
    """Sample a response from the policy; returns the text and a status line."""
    ex = with_prompt(get_example(task, index), prompt)
    policy = get_policy(checkpoint)
    n = min(int(max_new_tokens), limits().max_new_tokens)
    out = policy.generate(ex, max_new_tokens=n, temperature=float(temperature), top_p=float(top_p), seed=int(seed))
    return out.text, f"Generated {len(out.token_ids)} tokens with `{policy.name}`."


def _chosen_infos(verifiers: list[str], infos: tuple[str, ...]) -> dict[str, str]:
    if not verifiers:
        raise ValueError("Choose at least one verifier.")
    if len(verifiers) > MAX_VERIFIERS:
        raise ValueError(f"At most {MAX_VERIFIERS} verifiers at once; {len(verifiers)} were chosen.")
    for name in verifiers:
        get_verifier(name)  # a KeyError that lists the known verifiers
    return {name: check_text(f"information for {name}", text, limits().max_info_chars, required=False)
            for name, text in zip(verifiers, infos)}


def _downloads(rel) -> tuple[str, str]:
    """Write the per-token table as CSV and the Relevance as JSON; returns their paths."""
    folder = download_folder("relevance-")
    csv, js = folder / "relevance.csv", folder / "relevance.json"
    rel.to_frame().to_csv(csv, index=False)
    js.write_text(rel.to_json(), encoding="utf-8")
    return str(csv), str(js)


def default_group(rel) -> pd.DataFrame:
    """A group of four: the replayed response (its real rewards) and three contrasting ones, so every reward varies."""
    K = rel.K
    rows = [[rel.rewards.get(n, 0.0) for n in rel.verifiers], [0.0] * K, [1.0] * K, [float(k % 2 == 0) for k in range(K)]]
    frame = pd.DataFrame(rows, columns=rel.verifiers)
    frame.insert(0, "response", ["replayed", "2", "3", "4"])
    return frame


@readable
def replay_response(checkpoint, task, index, prompt, response, verifiers, position, metric, control, template,
                    *infos):
    """Replay the response with and without each verifier's information; render tokens, heatmaps, verdicts."""
    from ..relevance import replay

    ex = with_prompt(get_example(task, index), prompt)
    response = check_text("response", response, limits().max_chars)
    chosen = _chosen_infos(list(verifiers or []), infos)
    policy = get_policy(checkpoint)
    check_token_count(policy, prompt_text(ex), response, *chosen.values())
    rel = replay(policy, ex, response, list(chosen), infos=chosen, metric=metric, info_position=position,
                 control=control, template=template or DEFAULT_INFO_TEMPLATE)
    show_raw = rel.control != "none"
    csv, js = _downloads(rel)
    status = (f"Replayed {rel.T} tokens against {rel.K} verifier(s) with `{policy.name}` "
              f"({rel.metric}, control {rel.control}).")
    # the raw views are only rendered when they differ from the controlled ones (control != none)
    raw_html = gr.update(value=viz.token_rows_html(rel, raw=True) if show_raw else "", visible=show_raw)
    raw_heat = gr.update(value=viz.relevance_heatmap(rel, raw=True) if show_raw else None, visible=show_raw)
    return (rel, viz.token_rows_html(rel), raw_html, viz.relevance_heatmap(rel), raw_heat,
            pd.DataFrame(viz.verdict_rows(rel), columns=VERDICT_HEADERS), default_group(rel), csv, js, status)


def _group_rewards(frame: pd.DataFrame, verifiers: list[str]):
    """The (G, K) rewards typed into the table, as floats."""
    missing = [v for v in verifiers if v not in frame.columns]
    if missing:
        raise ValueError(f"The rewards table lacks the column(s) {', '.join(missing)}; replay again to reset it.")
    try:
        values = frame[verifiers].apply(pd.to_numeric, errors="raise").to_numpy(dtype=float, copy=True)
    except (ValueError, TypeError):
        raise ValueError("Every reward in the table must be a number (e.g. 0, 0.5, 1).") from None
    if (abs(values) == float("inf")).any():  # NaN stays allowed: TRL's None, "does not apply"
        raise ValueError("Every reward in the table must be a number (e.g. 0, 0.5, 1); infinity is not one.")
    if values.shape[0] < 2:
        raise ValueError("A group needs at least two responses to compare.")
    return values


@readable
def advantages(rel, rewards, alpha, gamma, source):
    """Per-token advantages of the replayed response under GDPO and MRTPO for the group in the table."""
    if rel is None:
        return None, "Replay a response first."
    frame = rewards if isinstance(rewards, pd.DataFrame) else pd.DataFrame(**rewards)
    values = _group_rewards(frame, rel.verifiers)
    relevance = rel.raw_scores if source == "raw" else rel.scores
    br = viz.advantage_breakdown(values, relevance, float(alpha), float(gamma))
    per_reward = "; ".join(f"{n} {float(a):+.3f}" for n, a in zip(rel.verifiers, br.per_reward[0]))
    group = ", ".join(f"{float(a):+.3f}" for a in br.group_gdpo)
    text = (f"**Replayed response** (row 1): GDPO advantage {br.gdpo:+.3f}; per-reward `Ahat_k`: {per_reward}.  \n"
            f"Group GDPO advantages: {group}. MRTPO token advantages range "
            f"{float(br.mrtpo.min()):+.3f} .. {float(br.mrtpo.max()):+.3f}, mean {float(br.mrtpo.mean()):+.3f} "
            f"(= GDPO's, by construction). Relevance used: {source}.")
    return viz.advantage_bars(rel.tokens, rel.verifiers, br), text


@readable
def sample_group(checkpoint, rel, task, index, prompt, G, temperature, top_p, max_new_tokens, seed):
    """Sample G-1 more responses, score them with the replayed verifiers; the replayed response stays row 1."""
    if rel is None:
        raise ValueError("Replay a response first: the group is built around it.")
    ex = with_prompt(get_example(task, index), prompt)
    policy = get_policy(checkpoint)
    outs = policy.generate_group(ex, int(G) - 1, max_new_tokens=min(int(max_new_tokens), limits().max_new_tokens),
                                 temperature=float(temperature), top_p=float(top_p), seed=int(seed))
    rows = [[rel.rewards.get(n, 0.0) for n in rel.verifiers]]
    rows += [[get_verifier(n).score(c.text, ex) for n in rel.verifiers] for c in outs]
    frame = pd.DataFrame(rows, columns=rel.verifiers)
    frame.insert(0, "response", ["replayed"] + [c.text[:60] for c in outs])
    return frame


# ----------------------------------------------------------------------------------------------- layout

def _start_values(task: str, choices) -> dict:
    """What the inputs show when the page opens: the first example, its reference and its information."""
    empty = {"prompt": "", "response": "", "choices": list_verifiers(task), "chosen": [],
             "boxes": [{"visible": False, "value": ""}] * MAX_VERIFIERS}
    if not choices:
        return empty
    ex = get_example(task, choices[0][1])
    chosen = (list(ex.verifiers) or list_verifiers(task))[:MAX_VERIFIERS]
    boxes = [{"visible": True, "label": f"{n}: {get_verifier(n).title}", "value": get_verifier(n).info(ex)}
             for n in chosen]
    return {**empty, "prompt": prompt_text(ex), "response": ex.reference or "", "chosen": chosen,
            "boxes": boxes + empty["boxes"][len(boxes):]}


def build_relevance_tab(checkpoint: gr.components.Component) -> None:
    """The tab's layout and wiring; ``checkpoint`` is the app's shared checkpoint picker."""
    first = example_choices(TASKS[0])
    start = _start_values(TASKS[0], first)
    with gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=360):
            with gr.Row():
                task = gr.Dropdown(available_tasks(), value=TASKS[0], label="Task family")
                example = gr.Dropdown(first, value=first[0][1] if first else None, label="Example (test split)")
            prompt = gr.Textbox(start["prompt"], label="Prompt (edit it for a free prompt; the example's verifiers "
                                "still apply)", lines=4, max_lines=12)
            response = gr.Textbox(start["response"], label="Response (generate one, or paste / edit)", lines=4,
                                  max_lines=12, elem_id="response-box")
            with gr.Row():
                gen_btn = gr.Button("Generate", variant="secondary")
                replay_btn = gr.Button("Replay", variant="primary", elem_id="replay-btn")
            with gr.Accordion("Generation settings", open=False):
                temperature = gr.Slider(0.0, 2.0, value=1.0, step=0.05, label="temperature (0 = greedy)")
                top_p = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label="top_p")
                max_new = gr.Slider(8, limits().max_new_tokens, value=128, step=8, label="max new tokens")
                seed = gr.Number(0, precision=0, label="seed")
            verifiers = gr.CheckboxGroup(start["choices"], value=start["chosen"], label="Verifiers")
            with gr.Accordion("Verifier information (what each verifier checks; editable)", open=True):
                infos = [gr.Textbox(**box, lines=2, max_lines=8) for box in start["boxes"]]
                reset_btn = gr.Button("Reset information to the templates", size="sm")
            with gr.Row():
                position = gr.Radio(list(INFO_POSITIONS), value=INFO_POSITIONS[0], label="information position")
                metric = gr.Dropdown(list(METRICS), value="js", label="metric")
                control = gr.Dropdown(list(CONTROLS), value="none", label="control")
            with gr.Accordion("Information block template", open=False):
                template = gr.Textbox(DEFAULT_INFO_TEMPLATE, label="template ({title}, {info})", lines=2)
        with gr.Column(scale=3, min_width=480):
            status = gr.Markdown("Pick an example and press **Replay**.", elem_classes=["mrtpo-status"])
            with gr.Row():
                tokens_html = gr.HTML(label="relevance", elem_id="relevance-tokens")
                raw_html = gr.HTML(label="raw relevance", visible=False, elem_id="relevance-tokens-raw")
            heatmap = gr.Plot(viz.placeholder_figure("Press Replay: one row per verifier, one column per token"),
                              label="verifiers x tokens", elem_id="relevance-heatmap")
            raw_heatmap = gr.Plot(label="raw relevance (no control)", visible=False)
            verdicts = gr.Dataframe(headers=VERDICT_HEADERS, label="verifier scores and reasons", interactive=False)
            with gr.Accordion("Advantages: GDPO vs MRTPO for a group", open=True):
                gr.Markdown("Type the group's rewards (row 1 is the replayed response) or sample a group.")
                rewards = gr.Dataframe(label="group rewards (G x K)", interactive=True, elem_id="group-rewards")
                with gr.Row():
                    alpha = gr.Slider(0.0, 1.0, value=1.0, step=0.05, label="alpha")
                    gamma = gr.Slider(0.0, 4.0, value=1.0, step=0.1, label="gamma")
                    source = gr.Radio(list(RELEVANCE_SOURCES), value="controlled", label="relevance for MRTPO")
                with gr.Row():
                    G = gr.Slider(2, 8, value=4, step=1, label="group size G")
                    sample_btn = gr.Button("Sample a group with the policy", size="sm")
                adv_plot = gr.Plot(viz.placeholder_figure("Replay a response: per-token GDPO and MRTPO advantages"),
                                   label="per-token advantage", elem_id="advantage-bars")
                adv_text = gr.Markdown()
            with gr.Row():
                csv_file = gr.DownloadButton("Download CSV (per-token table)", value=None)
                json_file = gr.DownloadButton("Download JSON (Relevance)", value=None)
    rel_state = gr.State(None)
    shown = gr.State(start["chosen"])  # the verifiers whose information the boxes hold, in order

    # the example index often stays 0 across tasks, so example.change would not fire: refill the fields explicitly
    task.change(task_examples, task, example, api_name="task_examples"
                ).success(pick_example, [task, example], [prompt, response, verifiers], api_name=False
                          ).success(info_boxes, [task, example, verifiers], [*infos, shown], api_name=False)
    example.change(pick_example, [task, example], [prompt, response, verifiers], api_name="pick_example"
                   ).success(info_boxes, [task, example, verifiers], [*infos, shown], api_name=False)
    verifiers.input(reselect_info_boxes, [task, example, verifiers, shown, *infos], [*infos, shown], api_name=False)
    reset_btn.click(info_boxes, [task, example, verifiers], [*infos, shown], api_name=False)
    gen_btn.click(generate, [checkpoint, task, example, prompt, temperature, top_p, max_new, seed],
                  [response, status], api_name="generate", concurrency_id=MODEL, concurrency_limit=1)
    adv_in, adv_out = [rel_state, rewards, alpha, gamma, source], [adv_plot, adv_text]
    replay_btn.click(
        replay_response, [checkpoint, task, example, prompt, response, verifiers, position, metric, control,
                          template, *infos],
        [rel_state, tokens_html, raw_html, heatmap, raw_heatmap, verdicts, rewards, csv_file, json_file, status],
        api_name="replay", concurrency_id=MODEL, concurrency_limit=1,
        # one progress overlay (on the token view), not ten: each animated overlay costs the browser CPU that, on
        # a small machine, the replay itself needs (profile in benchmarks/results/ui_latency.md)
        show_progress_on=tokens_html,
    ).success(advantages, adv_in, adv_out, api_name="advantages", show_progress="hidden")
    for trigger in (alpha.release, gamma.release, source.change, rewards.input):
        trigger(advantages, adv_in, adv_out, api_name=False)
    sample_btn.click(sample_group, [checkpoint, rel_state, task, example, prompt, G, temperature, top_p, max_new, seed],
                     rewards, api_name="sample_group", concurrency_id=MODEL, concurrency_limit=1
                     ).success(advantages, adv_in, adv_out, api_name=False)
