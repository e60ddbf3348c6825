"""A TRL run's files, read for the app's Runs view (pandas only; no torch, no trl).

A run is a TRL ``output_dir``: TRL's ``completions/completions_{step:05d}.parquet`` (written when
``log_completions=True``: ``step, prompt, completion, <one column per reward>, <log_extra columns>, advantage``) and,
for an MRTPO run, :mod:`.trl_log`'s ``mrtpo/`` files (``run.json``, ``tokens_*.parquet``, ``eval_tokens_*.parquet``).
Plain TRL runs (GRPO, GDPO: no ``mrtpo/``) open too, from TRL's files alone; a single parquet file of either kind
opens as a run of one step.

Known limits of TRL's own files, which the reader cannot undo: an evaluation at step ``s`` overwrites the training
completions of step ``s``; with ``steps_per_generation > 1`` consecutive files repeat the same completions; prompts
are grouped by runs of equal consecutive prompts (TRL logs no group index).

The view functions here (:func:`step_frame`, :func:`reward_curves`, the tables) read a run of every format of
:mod:`.run_formats` (verl's dumps: :mod:`.verl_runs`; prime-rl's exports: :mod:`.prime_rl_runs`).

Frames have one row per completion, columns ``step, mode, row, group, prompt, completion, advantage``,
``reward/<name>`` per reward and, from a token log, its per-token columns (:mod:`.trl_log`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from . import run_files, run_formats, trl_log
from .run_files import RunFileError
from ..viz.numbers import sig_frame

COMPLETIONS_FILE = re.compile(r"^completions_(\d{1,9})\.parquet$")
TOKENS_FILE = re.compile(r"^(eval_)?tokens_(\d{1,9})\.parquet$")
"""Step numbers have at most 9 digits (a member named with a step beyond int64 is not a run file)."""
SORT_KEYS = ("row", "advantage", "token advantage spread")
"""What completions can be sorted by, besides each ``reward/<name>`` column."""


RunFiles = run_formats.RunFiles
reward_column = run_formats.reward_column


def open_run(path, base=None, max_bytes: int = run_files.MAX_FILE_BYTES) -> RunFiles:
    """A run of any registered format (:func:`.run_formats.open_run`)."""
    return run_formats.open_run(path, base, max_bytes)


shown = run_formats.shown


def _read(run: RunFiles, path: Path, columns=None) -> pd.DataFrame:
    return run_files.read_parquet(path, run.allowed, columns, max_bytes=run.max_bytes)


# ----------------------------------------------------------------------------------------------- TRL and MRTPO


def _root(path: Path) -> Path:
    return path.parent if path.name in ("completions", trl_log.LOG_DIR) else path


def _find_tokens(path: Path, base: Path) -> dict[tuple[str, int], Path]:
    return {
        ("eval" if m[1] else "train", int(m[2])): p
        for p in run_files.files_in(_root(path) / trl_log.LOG_DIR, base)
        if (m := TOKENS_FILE.match(p.name))
    }


def _find_completions(path: Path, base: Path) -> dict[tuple[str, int], Path]:
    return {
        ("train", int(m[1])): p
        for p in run_files.files_in(_root(path) / "completions", base)
        if (m := COMPLETIONS_FILE.match(p.name))
    }


def _single(path: Path, base: Path, column: str):
    """One parquet file of a kind (it has ``column``) -> its step, else None."""
    if path.suffix.lower() != ".parquet":
        return None
    columns = run_files.parquet_columns(path, base)
    if column not in columns or (column == "completion" and "advantage" not in columns):
        return None
    mode = "eval" if column == "token_advantages" and path.name.startswith("eval_") else "train"
    return {(mode, _file_step(path, base)): path}


def _member_tokens(member: str):
    name = member.replace("\\", "/").rsplit("/", 1)[-1]
    return f"{trl_log.LOG_DIR}/{name}" if TOKENS_FILE.match(name) or name == trl_log.RUN_FILE else None


def _member_completions(member: str):
    name = member.replace("\\", "/").rsplit("/", 1)[-1]
    return f"completions/{name}" if COMPLETIONS_FILE.match(name) else None


def _file_step(path: Path, base: Path) -> int:
    m = re.search(r"(\d{1,9})\.parquet$", path.name)
    if m:
        return int(m[1])
    if "step" not in run_files.parquet_columns(path, base):
        return 0
    steps = run_files.read_parquet(path, base, ["step"])["step"]
    try:
        step = int(steps.iloc[0]) if len(steps) else 0
    except (TypeError, ValueError, OverflowError):
        step = -1
    if not 0 <= step < 10**9:
        raise RunFileError(f"{shown(path)}: its step column does not hold a step number (0 to 999,999,999)")
    return step


# ----------------------------------------------------------------------------------------------- reading


def reward_names(run: RunFiles) -> list[str]:
    """The rewards of the run (its format's :attr:`~.run_formats.RunFormat.reward_names`; an MRTPO run's
    ``run.json`` lists them first), at most :data:`~.run_files.MAX_REWARDS`."""
    listed, first = run.info.get("rewards"), shown(next(iter(run.files.values())))
    if listed and run.kind in ("mrtpo", "trl"):
        if not isinstance(listed, list) or not all(isinstance(n, str) and 0 < len(n) <= 200 for n in listed):
            raise ValueError("the run's mrtpo/run.json lists its rewards wrongly: 'rewards' must be a list of names")
        names, first = list(listed), trl_log.RUN_FILE
    else:
        names = run.format.reward_names(run)
    if len(names) > run_files.MAX_REWARDS:
        raise RunFileError(f"{first} has {len(names):,} rewards; a run here has at most {run_files.MAX_REWARDS}")
    return names


def _token_log_names(run: RunFiles) -> list[str]:
    cols = run_files.parquet_columns(next(iter(run.files.values())), run.allowed)
    return [c.removeprefix("reward/") for c in cols if c.startswith("reward/")]


def _completions_names(run: RunFiles) -> list[str]:
    """TRL's numeric columns besides ``step`` and ``advantage``, from the first file's footer."""
    schema = run_files.parquet_schema(next(iter(run.files.values())), run.allowed)
    return [f.name for f in schema if f.name not in ("step", "advantage") and _numeric(f.type)]


def _numeric(t) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


TOKEN_LOG_COLUMNS = ("row", "group", "prompt", "completion", "advantage", "token_advantages")
"""The token log's columns the Runs view reads (besides ``reward/<name>``)."""


def step_frame(run: RunFiles, step: int, mode: str = "train") -> pd.DataFrame:
    """The completions of a (mode, step): one row per completion, in its format's order (:data:`.run_formats.
    VIEW_COLUMNS`, ``reward/<name>`` per reward, and what else the format holds).

    Raises:
        KeyError: no such step. ValueError: the file lacks a column the view needs, or holds values of the wrong
            kind (named).
    """
    if (mode, step) not in run.files:
        raise KeyError(f"the run has no {mode} step {step}; it has {', '.join(f'{m} {s}' for m, s in run.steps())}")
    return run.format.rows(run, run.files[(mode, step)], step, mode)


def _token_log_rows(run: RunFiles, path: Path, step: int, mode: str) -> pd.DataFrame:
    names = reward_names(run)
    frame = _nonempty(_read(run, path), path)
    _require(frame.columns, path, [*TOKEN_LOG_COLUMNS, *map(reward_column, names)])
    return _checked(frame, path, names)


def _completions_rows(run: RunFiles, path: Path, step: int, mode: str) -> pd.DataFrame:
    names = reward_names(run)
    df = _nonempty(_read(run, path), path)
    _require(df.columns, path, ["prompt", "completion", "advantage", *names])
    return _checked(_from_trl(df, names, step, path), path, names)


def _nonempty(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    if df.empty:
        raise RunFileError(f"{shown(path)} has no rows: no completions were logged in it; pick another step")
    return df


def _require(have, path: Path, columns) -> None:
    missing = [c for c in columns if c not in have]
    if missing:
        raise ValueError(
            f"{shown(path)} has no column {missing[0]!r}, which the Runs view needs (is it a file of "
            "this run? its rewards are taken from the run's first file)"
        )


def _checked(frame: pd.DataFrame, path: Path, names: list[str]) -> pd.DataFrame:
    """The frame with its text, number and list columns checked (a message naming the column, not pandas')."""
    frame = frame.copy()
    for col in ("prompt", "completion"):
        if not all(isinstance(v, str) for v in frame[col]):
            raise ValueError(f"{shown(path)}: column {col!r} must hold text")
    for col in ["advantage", "row", "group", *map(trl_log.reward_column, names)]:
        try:
            frame[col] = pd.to_numeric(frame[col], errors="raise").astype(float)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{shown(path)}: column {col!r} must hold numbers") from None
    for col in ("row", "group"):
        v = frame[col]
        if v.isna().any() or not (v == v.round()).all() or v.abs().max() > 2**53:
            raise ValueError(f"{shown(path)}: column {col!r} must hold whole numbers")
        frame[col] = v.astype("int64")
    if "token_advantages" in frame and not all(_is_numbers(v) for v in frame["token_advantages"]):
        raise ValueError(f"{shown(path)}: column 'token_advantages' must hold a list of numbers per completion")
    return frame


def _is_numbers(value) -> bool:
    try:
        return all(isinstance(float(x), float) for x in list(value))
    except (TypeError, ValueError):
        return False


def _from_trl(df: pd.DataFrame, names: list[str], step: int, path: Path) -> pd.DataFrame:
    """TRL's completions table in the token log's columns (prompt and completion as text, rewards renamed)."""
    try:
        prompts = [_text(p, last_user=True) for p in df["prompt"]]
        messages = [_messages(p) for p in df["prompt"]]
        completions = [_text(c) for c in df["completion"]]
    except (TypeError, ValueError, AttributeError, RecursionError):
        raise ValueError(
            f"{shown(path)}: 'prompt' and 'completion' must be text or lists of chat messages "
            "({'role': ..., 'content': ...})"
        ) from None
    out = pd.DataFrame(
        {
            "step": step,
            "mode": "train",
            "row": range(len(df)),
            "group": _groups(prompts),
            "prompt": prompts,
            "messages": messages,
            "completion": completions,
            "advantage": df["advantage"].values,
        }
    )
    for name in names:
        out[reward_column(name)] = df[name].values
    return out


def _text(value, last_user: bool = False) -> str:
    """A prompt or completion: a string, or chat messages (a prompt's last user message, a completion's last)."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bytes, int, float, dict)):
        raise TypeError("not text")
    msgs = [dict(m) for m in list(value)]
    if last_user:
        msgs = [m for m in msgs if m.get("role") == "user"] or msgs
    return str(msgs[-1].get("content", "")) if msgs else ""


def _messages(value) -> str:
    msgs = (
        [{"role": "user", "content": value}]
        if isinstance(value, str)
        else [{"role": str(m.get("role")), "content": str(m.get("content", ""))} for m in list(value)]
    )
    return json.dumps(msgs)


def _groups(prompts: list[str]) -> list[int]:
    """Group ids from runs of equal consecutive prompts (TRL's sampler repeats each prompt G times in a row)."""
    out, g = [], -1
    for i, p in enumerate(prompts):
        g += int(i == 0 or p != prompts[i - 1])
        out.append(g)
    return out


def reward_curves(run: RunFiles) -> pd.DataFrame:
    """Per (mode, step), each reward's mean over the step's completions: columns ``variant`` (the mode), ``seed``
    (0), ``step`` (TRL's global step minus 1: the figure shows step + 1), ``reward/<name>`` (the frame
    :func:`mrtpo_viz.viz.training.reward_curves_figure` draws). Steps are read in order until
    :data:`~.run_files.MAX_CURVE_ROWS` rows have been; ``attrs["note"]`` then says which steps are left off."""
    names, rows, read, steps = curve_names(run), [], 0, run.steps()
    for mode, step in steps:
        if read >= run_files.MAX_CURVE_ROWS:
            break
        if run.format.means is not None:  # without building the step's rows (read once per file version)
            count, means = run.format.means(run, run.files[(mode, step)])
        else:
            df = step_frame(run, step, mode)
            count, means = len(df), {n: float(df[reward_column(n)].mean()) for n in names}
        read += count
        # the figure counts steps from 0 and shows step + 1 (the live tab's frames); TRL's global steps start at 1
        rows.append({"variant": mode, "seed": 0, "step": step - 1, **{reward_column(n): means[n] for n in names}})
    out = pd.DataFrame(rows)
    if len(rows) < len(steps):
        out.attrs["note"] = (
            f"The reward curves show the first {len(rows)} of {len(steps)} step files ({read:,} rows; they read "
            f"at most {run_files.MAX_CURVE_ROWS:,}); every step still opens when picked."
        )
    return out


def curve_names(run: RunFiles) -> list[str]:
    """What the run's curves show per step: its format's own series (a run that logs no rewards), else its
    rewards; each is column ``reward/<name>`` of :func:`reward_curves`."""
    return list(run.format.curve_names) or reward_names(run)


def groups_table(frame: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """One row per group: its prompt, size, mean of each reward, lowest and highest advantage."""
    agg = {
        "prompt": ("prompt", "first"),
        "completions": ("row", "count"),
        **{f"mean {n}": (reward_column(n), "mean") for n in names},
        "min advantage": ("advantage", "min"),
        "max advantage": ("advantage", "max"),
    }
    return sig_frame(frame.groupby("group", sort=True).agg(**agg).reset_index())


def _spread(frame: pd.DataFrame) -> pd.Series:
    if "token_advantages" not in frame:
        return pd.Series(0.0, index=frame.index)
    return frame["token_advantages"].map(lambda v: float(max(v) - min(v)) if len(v) else 0.0)


def completions_table(
    frame: pd.DataFrame, names: list[str], *, group=None, text: str = "", sort_by: str = "row", descending: bool = False
) -> pd.DataFrame:
    """The completions to list: of one group (None: all), containing ``text`` in the prompt or completion (case
    ignored), sorted by ``row``, ``advantage``, the token advantages' spread or a reward."""
    keep = frame if group is None else frame[frame["group"] == int(group)]
    if text.strip():
        needle = text.strip().lower()
        in_completion = keep["completion"].str.lower().str.contains(needle, regex=False)
        hit = in_completion | keep["prompt"].str.lower().str.contains(needle, regex=False)
        keep = keep[hit]
    table = pd.DataFrame(
        {
            "row": keep["row"],
            "group": keep["group"],
            **{n: keep[reward_column(n)] for n in names},
            "advantage": keep["advantage"],
            "token advantage spread": _spread(keep),
            "completion": keep["completion"].str.slice(0, 120),
        }
    )
    key = sort_by if sort_by in table.columns and sort_by != "completion" else "row"
    return sig_frame(table.sort_values(key, ascending=not descending, kind="stable").reset_index(drop=True))


def completion_record(frame: pd.DataFrame, row: int) -> dict:
    """One completion of a step frame as plain Python values (lists for the per-token columns)."""
    hit = frame[frame["row"] == int(row)]
    if hit.empty:
        raise KeyError(
            f"the step has no completion {row}; rows are {int(frame['row'].min())}..{int(frame['row'].max())}"
        )
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in hit.iloc[0].items()}


# ----------------------------------------------------------------------------------------------- the formats


def _bundled_infos(record: dict, names: list[str]) -> dict[str, str]:
    """A TRL row's information: the bundled example's with this prompt (TRL logs no information)."""
    from .run_replay import guess_infos

    infos = guess_infos(json.loads(record["messages"]), names)
    if not infos:
        raise ValueError("the prompt is not a bundled example, so its rewards' information is unknown: give --info")
    return infos


MRTPO_FORMAT = run_formats.register_format(
    run_formats.RunFormat(
        name="mrtpo",
        title="an MRTPO run (per-token log)",
        find=_find_tokens,
        single=lambda path, base: _single(path, base, "token_advantages"),
        member=_member_tokens,
        reward_names=_token_log_names,
        rows=_token_log_rows,
        advantage="TRL's sequence advantage",
        what="an MRTPO run",
        looks="mrtpo/tokens_*.parquet (MRTPOTrainer)",
        infos=_bundled_infos,
    )
)
TRL_FORMAT = run_formats.register_format(
    run_formats.RunFormat(
        name="trl",
        title="a plain TRL run (no per-token log: replay a completion with a checkpoint)",
        find=_find_completions,
        single=lambda path, base: _single(path, base, "completion"),
        member=_member_completions,
        reward_names=_completions_names,
        rows=_completions_rows,
        advantage="TRL's sequence advantage",
        what="a plain TRL run",
        looks="completions/completions_*.parquet (TRL, with log_completions=True)",
        infos=_bundled_infos,
    )
)
