"""Runs tab: open a run of any format of :mod:`mrtpo_viz.integrations.run_formats` (a TRL ``output_dir``, a verl
``rollout_data_dir``, a prime-rl ``output_dir`` with ``token_exports/``), a folder under ``MRTPO_RUNS_DIR`` or an
upload; see its curves, pick a step, a group and a completion, and see its tokens with their relevance and
advantages (a prime-rl row: its logged per-channel advantages, entropy, mismatch KL and masks beside the
relevance of a replay of its exact ids).

An MRTPO run (``MRTPOTrainer``) shows what its per-token log holds; a plain TRL run (GRPO, GDPO) or a verl dump
logged no tokens, so its completions are replayed on demand with the chosen checkpoint and the information typed
(or found for a bundled example, or a verl row's ground truth). Reading and aggregation are
:mod:`mrtpo_viz.integrations.run_view` and :mod:`~mrtpo_viz.integrations.run_replay`; rendering is
:mod:`mrtpo_viz.viz`.
"""

from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from .. import viz
from ..integrations import run_files, run_formats, run_replay, run_uploads, run_view
from ..settings import get_settings
from ..viz.training import reward_curves_figure
from .downloads import download_folder
from .errors import readable
from .input_limits import limits
from ..serving.fair_share import fair
from .policy_choice import MODEL, model_limit, get_policy
from .runs_follow import build_follow
from .token_component import token_view, view_value
from .zerogpu import gpu

ALL = "all"


def _run(state) -> run_view.RunFiles:
    if not state:
        raise ValueError("Open a run first: type its folder or upload a zip or parquet file.")
    return run_view.open_run(state["path"], state["base"], _max_file_bytes())


def _max_file_bytes() -> int:
    """Decompressed bytes one run parquet file may hold here: 20x the upload cap (MRTPO_MAX_UPLOAD_MB), within the
    reader's own cap."""
    return min(20 * limits().max_upload_bytes, run_files.MAX_FILE_BYTES)


def _step(key: str) -> tuple[str, int]:
    mode, _, step = str(key or "").partition(":")
    if mode not in ("train", "eval") or not step.isdigit() or len(step) > 9:
        raise ValueError("Pick a step of the run.")
    return mode, int(step)


def _whole(value, what: str) -> int:
    """A group or row number typed or sent through the API; a ValueError that says what to give."""
    try:
        number = float(value)
        if number.is_integer() and abs(number) < 2**53:
            return int(number)
    except (TypeError, ValueError, OverflowError):
        pass
    raise ValueError(f"The {what} must be a whole number (pick one from the list), got {str(value)[:40]!r}.")


@readable
def open_run(typed: str, upload):
    """A typed run folder (under MRTPO_RUNS_DIR) or an upload -> state, status, curves, the step picker."""
    if upload:
        dest = download_folder("run-")
        path = run_uploads.extract_upload(upload, dest, limits().max_upload_bytes)
        base = dest if path == dest else Path(upload).parent  # a parquet upload stays in Gradio's upload folder
    elif (typed or "").strip():
        path = get_settings().run_folder(typed)
        base = Path(get_settings().runs_dir).resolve()
    else:
        raise ValueError("Type a run folder (relative to MRTPO_RUNS_DIR) or upload a zip or parquet file.")
    run = run_view.open_run(path, base, _max_file_bytes())
    names, steps, shown = run_view.reward_names(run), run.steps(), run_view.curve_names(run)
    curves = run_view.reward_curves(run)
    fig = reward_curves_figure(curves, [f"reward/{n}" for n in shown], title=run.format.curves_title)
    values = curves[[f"reward/{n}" for n in shown]].to_numpy()
    if values.size and (values.min() < 0 or values.max() > 1):  # TRL rewards need not lie in [0, 1]
        fig.update_yaxes(range=None, autorange=True)
    logged = f"rewards {', '.join(f'`{n}`' for n in names)}" if names else "no rewards logged"
    status = f"Opened {run.format.title}: {len(steps)} step file(s), {logged}."
    status += f" {curves.attrs['note']}" if curves.attrs.get("note") else ""
    choices = [(f"step {s}" + (" (eval)" if m == "eval" else ""), f"{m}:{s}") for m, s in steps]
    last = next((c[1] for c in reversed(choices) if c[1].startswith("train:")), choices[-1][1])
    state = {"path": str(path), "base": str(base), "names": names, "kind": run.kind}
    return state, status, fig, gr.update(choices=choices, value=last)


@readable
def run_step(state, key):
    """A step -> its groups table and the group picker (no change while no run is open: an open that failed says
    why on the status line, and its chained listing adds nothing)."""
    if not state:
        return gr.update(), gr.update()
    mode, step = _step(key)
    frame = run_view.step_frame(_run(state), step, mode)
    groups = sorted(set(frame["group"].tolist()))
    return (
        run_view.groups_table(frame, state["names"]),
        gr.update(choices=[ALL] + [str(g) for g in groups], value=ALL),
    )


@readable
def run_completions(state, key, group, text, sort_by, descending):
    """The step's completions, filtered by group and text, sorted (no change while no run is open)."""
    if not state:
        return gr.update()
    mode, step = _step(key)
    frame = run_view.step_frame(_run(state), step, mode)
    group = None if group in (None, "", ALL) else _whole(group, "group")
    return run_view.completions_table(
        frame, state["names"], group=group, text=text or "", sort_by=sort_by, descending=bool(descending)
    )


def pick_row(table, evt: gr.SelectData):
    """A click in the completions table -> that completion's row number."""
    try:  # the clicked row's own values (the table may be sorted on the page), else its index in ours
        return int(evt.row_value[0]) if getattr(evt, "row_value", None) else int(table.iloc[evt.index[0]]["row"])
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        return gr.update()


def _view_outputs(view: run_replay.CompletionView, record: dict, note: str, fmt: run_formats.RunFormat):
    rel, br = view.relevance, view.breakdown
    rewards = ", ".join(f"{n} {viz.fmt_sig(v)}" for n, v in rel.rewards.items()) or "none scored"
    sequence = fmt.advantage
    text = (
        f"**Row {record['row']}** (group {record['group']}), {note}: rewards {rewards}; {sequence} "
        f"{viz.fmt_sig(record['advantage'], signed=True)}; token advantages "
        f"{viz.fmt_sig(br.mrtpo.min(), signed=True)} .. {viz.fmt_sig(br.mrtpo.max(), signed=True)}.  \n"
        f"Prompt: {record['prompt'][:300]}"
    )
    return view_value(viz.relevance_payload(rel)), viz.advantage_bars(rel.tokens, rel.verifiers, br), text


def _streams(record: dict, rel=None):
    """The per-token values a prime-rl export logged for this row, with the replayed relevance on top."""
    from ..integrations.prime_rl_runs import logged_streams
    from ..viz.token_streams import token_streams_figure

    streams, masks = logged_streams(record)
    if rel is not None:
        tokens, relevance = rel.tokens, dict(zip(rel.verifiers, rel.scores.tolist()))
    else:  # no tokenizer yet: the ids
        tokens, relevance = [f"#{i}" for i in record["completion_ids"]], None
    return token_streams_figure(tokens, streams, masks, relevance, title="Per-token values the run logged")


def _streams_note(record: dict, fmt: run_formats.RunFormat, rel=None) -> str:
    head = f"**Row {record['row']}** (group {record['group']}, env {record.get('env_name') or 'not named'})"
    adv = f"{fmt.advantage} {viz.fmt_sig(record['advantage'], signed=True)}"
    if rel is None:
        return (
            f"{head}: {len(record['completion_ids'])} response tokens; {adv}. The run holds token ids, no text: type "
            "each reward's information (`reward: text`, one line per reward) and press Replay to decode them with "
            "the checkpoint (it must be the run's tokenizer) and see their relevance beside these values."
        )
    return f"{head}, replayed with the checkpoint (the exported ids, decoded): {adv}."


def default_infos(record: dict, names, fmt=None) -> dict[str, str]:
    """The information a replay starts from: what the run's rows say (:func:`run_replay.record_infos`: a bundled
    example's, a verl dump's ground truth), else each registered verifier's own information for the logged prompt,
    else its description (a verifier whose information needs arguments the run did not log). Rewards that are not
    registered verifiers get none."""
    from ..tasks import VERIFIERS, Example, MissingArguments

    try:
        messages = json.loads(record["messages"])
        infos = run_replay.record_infos(record, names, fmt)
    except (KeyError, TypeError, ValueError, RecursionError):  # no messages, or hand-made ones: no prompt to read
        return {}
    for name in names:
        if name in infos or name not in VERIFIERS:
            continue
        v = VERIFIERS[name]
        try:
            infos[name] = v.info(Example(task=v.task, prompt=messages, id="run")) or v.description
        except (MissingArguments, KeyError, TypeError, ValueError):
            infos[name] = v.description
    return infos


def _info_lines(infos: dict[str, str], names) -> str:
    return "\n".join(f"{n}: {' '.join(infos.get(n, '').split())}" for n in names)


@readable
def run_completion(state, key, row):
    """A completion -> its token view (from the per-token log), or an invitation to replay it, with information
    lines prefilled where the prompt is a bundled example."""
    run = _run(state)
    mode, step = _step(key)
    record = run_view.completion_record(run_view.step_frame(run, step, mode), _whole(row, "completion row"))
    names, fmt = state["names"], run.format
    lines = _info_lines(default_infos(record, names, fmt), names)  # what "Replay with the checkpoint" starts from
    if "token_advantages" in record:
        view = _logged(record, names, run.info)
        return (*_view_outputs(view, record, f"{mode} step {step}, from the run's per-token log", fmt), lines)
    if fmt.rollout is not None:  # ids, no text: the logged streams now, the tokens and relevance with a replay
        return None, _streams(record), _streams_note(record, fmt), lines
    try:
        infos = run_replay.record_infos(record, names, fmt)
    except (TypeError, ValueError, RecursionError):  # a hand-made file's messages: replay with typed information
        infos = {}
    found = fmt.infos_found
    note = (
        f"Information {found}: check it and press Replay."
        if infos
        else "Each reward's verifier information is filled in where it is known: check or type it (one line per "
        "reward, `reward: text`) and press Replay."
    )
    what = fmt.what
    return (
        None,
        viz.placeholder_figure("Replay this completion to see its token advantages"),
        f"**Row {record['row']}**: {what} logged no tokens. {note}",
        lines,
    )


def _logged(record: dict, names: list[str], info: dict) -> run_replay.CompletionView:
    """The logged view of a record, with a message that names what is wrong in a malformed token log."""
    try:
        return run_replay.logged_view(record, names, str(info.get("metric", "js")), str(info.get("control", "none")))
    except KeyError as e:
        raise ValueError(
            f"This completion's per-token log has no column {str(e.args[0])[:80]!r}; it cannot be "
            "shown (is the file from MRTPOTrainer?)."
        ) from None
    except (TypeError, ValueError, RuntimeError, IndexError, OverflowError):
        raise ValueError(
            "This completion's per-token log is malformed (its per-token columns must be lists of "
            "numbers of one length per completion); it cannot be shown."
        ) from None


@gpu("replay")
@readable
def replay_completion(checkpoint, state, key, row, infos_text, alpha, gamma):
    """Replay a completion of a plain run with the checkpoint and the typed information."""
    run = _run(state)
    mode, step = _step(key)
    frame = run_view.step_frame(run, step, mode)
    record = run_view.completion_record(frame, _whole(row, "completion row"))
    if run.format.rollout is not None:
        return _replay_ids(checkpoint, run.format, record, infos_text, state["names"])
    if not (infos_text or "").strip():  # nothing typed: each reward's default information
        infos_text = _info_lines(default_infos(record, state["names"], run.format), state["names"])
    infos = run_replay.parse_infos(infos_text, state["names"])
    if any(len(i) > limits().max_info_chars for i in infos.values()):
        raise ValueError(f"An information text is longer than {limits().max_info_chars:,} characters.")
    if len(record["completion"]) > limits().max_chars:
        raise ValueError(f"The completion is longer than {limits().max_chars:,} characters; not replayed here.")
    view = run_replay.replayed_view(
        get_policy(checkpoint),
        frame,
        record,
        state["names"],
        infos,
        weights=run.info.get("reward_weights"),
        alpha=float(alpha),
        gamma=float(gamma),
    )
    return _view_outputs(view, record, f"replayed with `{checkpoint}` (re-tokenized from its text)", run.format)


def _replay_ids(checkpoint, fmt: run_formats.RunFormat, record: dict, infos_text: str, names):
    """A row that logged ids (prime-rl): its exact response ids replayed with the typed information; the token
    view shows relevance, the figure the logged values beside it."""
    infos = run_replay.parse_infos(infos_text, names)
    if any(len(i) > limits().max_info_chars for i in infos.values()):
        raise ValueError(f"An information text is longer than {limits().max_info_chars:,} characters.")
    if len(record["completion_ids"]) > limits().max_chars:
        raise ValueError(f"The response has more than {limits().max_chars:,} tokens; not replayed here.")
    policy = get_policy(checkpoint)
    messages, ids = fmt.rollout(record, policy)
    rel = run_replay.replayed_relevance(policy, messages, ids, infos)
    return view_value(viz.relevance_payload(rel)), _streams(record, rel), _streams_note(record, fmt, rel)


# ----------------------------------------------------------------------------------------------- layout


def build_runs_tab(checkpoint: gr.components.Component) -> None:
    state = gr.State(None)
    gr.Markdown(
        "Open a TRL run: its `output_dir` (with `log_completions=True` for TRL's files; `MRTPOTrainer` "
        "also writes `mrtpo/tokens_*.parquet`; see `examples/trl_mrtpo.py`), a verl rollout dump "
        "(the folder of `trainer.rollout_data_dir`), or a prime-rl run (its `output_dir`, with "
        "`token_exports/` from `trainer.enable_token_export = true`)."
    )
    with gr.Row():
        typed = gr.Textbox(
            label="Run folder, relative to the operator's runs folder (MRTPO_RUNS_DIR)", scale=3, elem_id="run-path"
        )
        upload = gr.File(
            label="or upload a zip of the run, one parquet file, one verl {step}.jsonl or one prime-rl rank_*.jsonl",
            file_types=[".zip", ".parquet", ".jsonl"],
            type="filepath",
            scale=2,
        )
        open_btn = gr.Button("Open run", variant="primary", scale=0, min_width=110, elem_id="run-open")
    status = gr.Markdown("No run open.", elem_id="run-status")
    curves = gr.Plot(
        viz.placeholder_figure("Open a run: mean reward per step"), label="reward curves", elem_id="run-curves"
    )
    with gr.Row():
        step = gr.Dropdown([], label="step", elem_id="run-step", scale=1)
        group = gr.Dropdown([ALL], value=ALL, label="group", scale=1)
        text = gr.Textbox(label="filter by text (prompt or completion)", scale=2)
        sort_by = gr.Dropdown(
            list(run_view.SORT_KEYS),
            value="row",
            allow_custom_value=True,
            label="sort by (or a reward's name)",
            scale=1,
        )
        descending = gr.Checkbox(False, label="descending", scale=0)
    build_follow(state, curves, step, _run)  # the Follow box: refreshes the curves and steps of a run being written
    groups = gr.Dataframe(label="groups of the step", interactive=False, max_height=220)
    table = gr.Dataframe(label="completions (click one)", interactive=False, max_height=320, elem_id="run-table")
    with gr.Row():
        row = gr.Number(label="completion (row)", precision=0, minimum=0, elem_id="run-row", scale=1)
        show_btn = gr.Button("Show tokens", elem_id="run-show", scale=0, min_width=120)
        alpha = gr.Slider(0, 1, value=1.0, step=0.05, label="alpha (replayed runs)", scale=1)
        gamma = gr.Slider(0, 4, value=1.0, step=0.1, label="gamma (replayed runs)", scale=1)
    infos = gr.Textbox(label="information per reward, for a replay (reward: text)", lines=3, max_lines=8)
    replay_btn = gr.Button("Replay with the checkpoint", elem_id="run-replay")
    note = gr.Markdown(elem_id="run-note")
    tokens = token_view(elem_id="run-tokens", placeholder="Pick a completion and press Show tokens.")
    bars = gr.Plot(
        viz.placeholder_figure("Pick a completion: its per-token advantages"),
        label="token advantages",
        elem_id="run-bars",
    )

    listing = [state, step, group, text, sort_by, descending]
    open_btn.click(
        fair(open_run),
        [typed, upload],
        [state, status, curves, step],
        api_name="open_run",
        concurrency_id=MODEL,
        concurrency_limit=model_limit(),
    ).success(run_step, [state, step], [groups, group], api_name=False).success(
        run_completions, listing, table, api_name=False
    )
    step.input(run_step, [state, step], [groups, group], api_name="run_step").success(
        run_completions, listing, table, api_name=False
    )
    for c in (group, sort_by, descending):
        c.input(run_completions, listing, table, api_name=False)
    text.submit(run_completions, listing, table, api_name="run_completions")
    table.select(pick_row, table, row, api_name=False).success(
        run_completion, [state, step, row], [tokens, bars, note, infos], api_name=False
    )
    show_btn.click(run_completion, [state, step, row], [tokens, bars, note, infos], api_name="run_completion")
    replay_btn.click(
        fair(replay_completion),
        [checkpoint, state, step, row, infos, alpha, gamma],
        [tokens, bars, note],
        api_name="replay_run_completion",
        concurrency_id=MODEL,
        concurrency_limit=model_limit(),
    )
