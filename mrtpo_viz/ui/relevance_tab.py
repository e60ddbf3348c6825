"""Token relevance tab: pick an example (or a free prompt), generate or paste a response, replay it against its
verifiers, and see which tokens each reward depends on, and where MRTPO would put each reward's advantage.

Handlers are module-level (each with an ``api_name``): they validate input, make one library call and convert its
result with :mod:`mrtpo_viz.viz`. The layout and wiring are in :mod:`.relevance_layout`, which imports these.

Each verifier box holds the verifier's information and one field per argument it declares
(:mod:`.arguments`); a verifier whose required arguments are empty "needs input": it is neither scored nor replayed.
An empty information box takes the verifier's own information for its arguments.
"""

from __future__ import annotations

import gradio as gr
import pandas as pd

from .. import viz
from ..relevance.contexts import DEFAULT_INFO_TEMPLATE
from ..relevance.diagnostics import relevance_weight_diagnostics
from ..viz.advantages import MAX_GROUP
from ..viz.credit_compare import response_weights
from .arguments import (
    API_HINT,
    FIELDS,
    field_updates,
    information,
    not_ready_reason,
    slot_texts,
    typed_values,
    with_typed_args,
)
from .custom_verifiers import resolve, task_choices
from .downloads import download_folder
from .errors import readable
from .example_picker import FREE_PROMPT, example_choices, first_example, get_example, prompt_text, with_prompt
from .input_limits import MAX_VERIFIERS, check_text, check_token_count, limits
from .policy_choice import get_policy
from .replay_progress import final_outputs, last_row_before_result, progress_outputs
from .token_component import advantages_json
from .zerogpu import gpu

RELEVANCE_SOURCES = ("controlled", "raw")
"""Which relevance MRTPO's weights use in the advantage panel: after the control, or the paper's raw signal."""
VERDICT_HEADERS = viz.VERDICT_HEADERS
GROUP_NOTE = "Type the group's rewards (row 1 is the replayed response) or sample a group."


# ----------------------------------------------------------------------------------------------- inputs


@readable
def pick_example(task: str, index, customs=None):
    """Example -> prompt box, its reference response, and its verifiers (choices, with the session's custom ones,
    and selection)."""
    ex = get_example(task, index)
    chosen = list(ex.verifiers)[:MAX_VERIFIERS] if index != FREE_PROMPT else []
    return prompt_text(ex), ex.reference or "", gr.update(choices=task_choices(task, customs), value=chosen)


def task_examples(task: str):
    choices = example_choices(task)
    return gr.update(choices=choices, value=first_example(choices))


def _box(name: str, example, customs=None) -> dict:
    """One verifier box's information update: the verifier's information, or empty and "needs input"."""
    v = resolve(name, customs)
    example, needs = with_typed_args(example, [name], [], customs)
    text = information(v, example)
    label = f"{name}: {v.title}" + (
        f" · needs input: {', '.join(needs[name])}"
        if name in needs
        else f" · needs input: {_refused(name, example, customs)}"
        if text is None
        else ""
    )
    return gr.update(visible=True, label=label, value=text or "")


def _refused(name: str, example, customs=None) -> str:
    """What a verifier without information needs: the reason its arguments are refused, else "its arguments"."""
    reason = not_ready_reason(resolve(name, customs), example)
    return f"valid arguments ({reason})" if reason else "its arguments"


@readable
def info_boxes(task: str, index, verifiers: list[str], customs=None):
    """Per chosen verifier its box (information and argument fields) filled for the example; and the names shown.

    Returns ``MAX_VERIFIERS`` information updates, ``MAX_VERIFIERS * FIELDS`` field updates, the names."""
    ex = get_example(task, index)
    names = list(verifiers or [])[:MAX_VERIFIERS]
    slots = names + [None] * (MAX_VERIFIERS - len(names))
    infos = [_box(n, ex, customs) if n else gr.update(visible=False, value="") for n in slots]
    return infos + [u for n in slots for u in field_updates(n, ex, customs)] + [names]


@readable
def reselect_info_boxes(task: str, index, verifiers: list[str], shown: list[str], customs, *texts: str):
    """After the verifier selection changes: a verifier that stays chosen keeps its (possibly edited) information
    and fields, a newly chosen one gets the example's. ``shown`` are the verifiers the boxes held, in order,
    ``customs`` the session's custom verifiers, ``texts`` the boxes' information then their fields. More than
    ``MAX_VERIFIERS`` are cut, with a warning.

    Returns :func:`info_boxes`'s outputs and the (possibly cut) selection."""
    verifiers = list(verifiers or [])
    if len(verifiers) > MAX_VERIFIERS:
        gr.Warning(f"At most {MAX_VERIFIERS} verifiers at once: {', '.join(verifiers[MAX_VERIFIERS:])} left out.")
        verifiers = verifiers[:MAX_VERIFIERS]
    infos, fields = texts[:MAX_VERIFIERS], texts[MAX_VERIFIERS:]
    kept = {name: (infos[k], slot_texts(fields, k)) for k, name in enumerate(shown or [])}
    out = info_boxes(task, index, verifiers, customs)
    for k, name in enumerate(out[-1]):  # the verifiers the boxes now hold
        if name in kept:
            out[k]["value"] = kept[name][0]
            for j, text in enumerate(kept[name][1]):
                out[MAX_VERIFIERS + k * FIELDS + j]["value"] = text
    return [*out, gr.update(value=verifiers)]


def field_message(text: str = "") -> dict:
    """The message under a verifier box's fields: what is wrong with a field's value, where (hidden when empty)."""
    return gr.update(value=f"**⚠ {text}**" if text else "", visible=bool(text))


@readable
def derive_info(k: int, task: str, index, shown: list[str], customs, *fields: str):
    """After box ``k``'s fields change: its information derived from the typed values (or "needs input"), and the
    message under the fields. A value that does not parse (JSON with its line and column) is reported there, in
    place: the information box and everything else stay as they were."""
    names = list(shown or [])
    if k >= len(names):
        return gr.update(), field_message()
    v = resolve(names[k], customs)
    try:
        values = typed_values(v, fields)
    except ValueError as e:
        return gr.update(), field_message(str(e).removesuffix(API_HINT))
    ex = v.with_args(get_example(task, index), values)
    return _box(names[k], ex, customs), field_message()


def _mean_note(credit) -> str:
    from ..advantages import get_method

    return "= GDPO's, by construction" if get_method(credit or "mrtpo").mean_preserving else "not GDPO's, by design"


@gpu("replay")
@readable
def generate(checkpoint, task, index, prompt, temperature, top_p, max_new_tokens, seed):
    """Sample a response from the policy; returns the text and a status line."""
    ex = with_prompt(get_example(task, index), prompt)
    policy = get_policy(checkpoint)
    n = min(int(max_new_tokens), limits().max_new_tokens)
    out = policy.generate(ex, max_new_tokens=n, temperature=float(temperature), top_p=float(top_p), seed=int(seed))
    return (
        out.text,
        f"Generated {len(out.token_ids)} tokens with `{policy.name}`. Press **Replay** to see their relevance.",
    )


# ----------------------------------------------------------------------------------------------- replay


def _chosen(verifiers, customs) -> list[str]:
    names = list(verifiers or [])
    if not names:
        raise ValueError("Choose at least one verifier.")
    if len(names) > MAX_VERIFIERS:
        raise ValueError(f"At most {MAX_VERIFIERS} verifiers at once; {len(names)} were chosen.")
    for name in names:
        resolve(name, customs)  # a KeyError that lists the known verifiers
    return names


def _infos(example, names: list[str], texts, customs) -> dict[str, str]:
    """Each ready verifier's information: its box's text, or (box left empty) its own for the example."""
    cap, texts = limits().max_info_chars, list(texts) + [""] * len(names)  # an API call may give fewer boxes
    return {
        n: check_text(f"information for {n}", t, cap, required=False) or information(resolve(n, customs), example)
        for n, t in zip(names, texts)
    }


@readable
def downloads(rel):
    """Write the per-token table as CSV and the Relevance as JSON; the two download buttons' updates.

    A step after the replay (and its advantages), not inside it: on a loaded 2-core machine writing them took a
    fifth of the replay's time before the heatmap could be drawn."""
    if rel is None:
        raise ValueError("Replay a response first: the downloads are its tables.")
    folder = download_folder("relevance-")
    csv, js = folder / "relevance.csv", folder / "relevance.json"
    rel.to_frame().to_csv(csv, index=False)
    js.write_text(rel.to_json(), encoding="utf-8")
    return gr.update(value=str(csv), interactive=True), gr.update(value=str(js), interactive=True)


@gpu("replay")
@readable
def replay_response(
    checkpoint, task, index, prompt, response, verifiers, position, metric, control, template, customs, *texts
):
    """Replay the response with and without each ready verifier's information; render the token view, heatmaps,
    verdicts. ``customs``: the session's custom verifiers (a state, not an API parameter); ``texts``: the
    ``MAX_VERIFIERS`` information boxes, then their argument fields (optional). One shot: the outputs of the last
    step of :func:`replay_live`."""
    *_, last = replay_updates(
        checkpoint, task, index, prompt, response, verifiers, position, metric, control, template, customs, *texts
    )
    return last


@gpu("replay")
@readable
def replay_live(
    checkpoint, task, index, prompt, response, verifiers, position, metric, control, template, customs, *texts
):
    """The Replay button and ``/replay``: :func:`replay_response`'s outputs, and before them, where the replay is
    slow (:func:`mrtpo_viz.relevance.progressive.estimate_seconds`), the tokens without colour, then each verifier's
    row as soon as it is replayed (:mod:`.replay_progress`). Its last yield is exactly :func:`replay_response`'s."""
    yield from replay_updates(
        checkpoint,
        task,
        index,
        prompt,
        response,
        verifiers,
        position,
        metric,
        control,
        template,
        customs,
        *texts,
        progressive=None,
    )


def replay_updates(
    checkpoint,
    task,
    index,
    prompt,
    response,
    verifiers,
    position,
    metric,
    control,
    template,
    customs,
    *texts,
    progressive=False,
):
    """The replay's outputs, step by step (a generator; ``progressive`` as
    :func:`mrtpo_viz.relevance.engine.replay_steps`): a partial update per step before the last, then the results."""
    from ..relevance.engine import replay_steps

    ex = with_prompt(get_example(task, index), prompt)
    response = check_text("response", response, limits().max_chars)
    names = _chosen(verifiers, customs)
    ex, needs = with_typed_args(ex, names, texts[MAX_VERIFIERS:], customs)
    infos = _infos(ex, names, texts[:MAX_VERIFIERS], customs)
    needs.update({n: [_refused(n, ex, customs)] for n in names if infos[n] is None and n not in needs})
    ready = [n for n in names if n not in needs]
    if not ready:
        raise ValueError(
            "Every chosen verifier needs input: "
            + "; ".join(f"{n} needs {', '.join(m)}" for n, m in needs.items())
            + ". Fill its fields (or pick an example)."
        )
    infos = {n: infos[n] for n in ready}
    policy = get_policy(checkpoint)
    check_token_count(policy, prompt_text(ex), response, *infos.values())
    steps = replay_steps(
        policy,
        ex,
        response,
        [resolve(n, customs) for n in ready],
        [(metric, control)],
        infos=infos,
        info_position=position,
        template=template or DEFAULT_INFO_TEMPLATE,
        progressive=progressive,
    )
    for step in steps:
        if step.results is None and not last_row_before_result(step, control):
            yield progress_outputs(step, policy.name, metric, control)
    yield final_outputs(step.relevance, policy.name, needs)


def _group_rewards(frame: pd.DataFrame, verifiers: list[str]):
    """The (G, K) rewards typed into the table, as floats; a table longer than the displayed group's cap
    (``viz.advantages.MAX_GROUP``) is refused before any cell is parsed."""
    if len(frame) > MAX_GROUP:
        raise ValueError(f"the group has {len(frame):,} responses; at most {MAX_GROUP} are shown")
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
def advantages(rel, rewards, alpha, gamma, source, credit="mrtpo"):
    """Per-token advantages of the replayed response under GDPO and a credit method (MRTPO by default) for the group
    in the table, the weight diagnostics per verifier, and the token view's advantages (both methods per token)."""
    if rel is None:
        return None, "Replay a response first.", None, gr.update()
    frame = rewards if isinstance(rewards, pd.DataFrame) else pd.DataFrame(**rewards)
    values = _group_rewards(frame, rel.verifiers)
    relevance = rel.raw_scores if source == "raw" else rel.scores
    w = (
        None
        if credit in (None, "mrtpo")
        else response_weights(rel, credit, float(alpha), float(gamma), source == "raw")
    )
    br = viz.advantage_breakdown(values, relevance, float(alpha), float(gamma), token_weights=w)
    diag = relevance_weight_diagnostics(rel, float(alpha), float(gamma), raw=source == "raw")
    per_reward = "; ".join(f"{n} {viz.fmt_sig(a, signed=True)}" for n, a in zip(rel.verifiers, br.per_reward[0]))
    group = ", ".join(viz.fmt_sig(a, signed=True) for a in br.group_gdpo)
    text = (
        f"**Replayed response** (row 1): GDPO advantage {viz.fmt_sig(br.gdpo, signed=True)}; "
        f"per-reward `Ahat_k`: {per_reward}.  \n"
        f"Group GDPO advantages: {group}. Credit method `{credit or 'mrtpo'}`: token advantages range "
        f"{viz.fmt_sig(br.mrtpo.min(), signed=True)} .. {viz.fmt_sig(br.mrtpo.max(), signed=True)}, mean "
        f"{viz.fmt_sig(br.mrtpo.mean(), signed=True)} ({_mean_note(credit)}). Relevance used: {source}."
    )
    adv = advantages_json({"GDPO": br.gdpo, "MRTPO": br.mrtpo}, rel.T)
    return (viz.advantage_bars(rel.tokens, rel.verifiers, br), text, viz.weight_markdown(diag), gr.update(adv=adv))


@gpu("replay")
@readable
def sample_group(
    checkpoint, rel, task, index, prompt, G, temperature, top_p, max_new_tokens, seed, customs=None, shown=None, *fields
):
    """Sample G-1 more responses, score them with the replayed verifiers; the replayed response stays row 1.
    ``shown`` and ``fields``: the verifiers of the boxes and their argument fields (a free prompt's values)."""
    if rel is None:
        raise ValueError("Replay a response first: the group is built around it.")
    ex = with_prompt(get_example(task, index), prompt)
    ex, _ = with_typed_args(ex, list(shown or rel.verifiers), fields if shown else [], customs)
    policy = get_policy(checkpoint)
    outs = policy.generate_group(
        ex,
        int(G) - 1,
        max_new_tokens=min(int(max_new_tokens), limits().max_new_tokens),
        temperature=float(temperature),
        top_p=float(top_p),
        seed=int(seed),
    )
    rows = [[rel.rewards.get(n, 0.0) for n in rel.verifiers]]
    rows += [[viz.round_sig(resolve(n, customs).score(c.text, ex)) for n in rel.verifiers] for c in outs]
    frame = pd.DataFrame(rows, columns=rel.verifiers)
    labels = viz.distinct_snippets([rel.response] + [c.text for c in outs])
    frame.insert(0, "response", [f"1 (replayed): {labels[0]}"] + [f"{i + 2}: {s}" for i, s in enumerate(labels[1:])])
    return frame


def cleared(task: str):
    """Every result output emptied after the task or the example changed (they were for other inputs): the outputs
    of :func:`replay_response`, then the advantage chart, its text, the weight diagnostics and the downloads."""
    empty = gr.update(value=None, interactive=False)
    return (
        None,
        gr.update(value=None, adv=None),
        gr.update(value=None, visible=False),
        viz.placeholder_figure("Press Replay: one row per verifier, one column per token"),
        gr.update(value=None, visible=False),
        pd.DataFrame(columns=VERDICT_HEADERS),
        pd.DataFrame(),
        f"Example changed (task `{task}`): the earlier results were cleared. Press **Replay**.",
        viz.placeholder_figure("Replay a response: per-token GDPO and MRTPO advantages"),
        "",
        "",
        empty,
        empty,
    )
