"""TRL and MRTPO runs, two run formats of :mod:`.run_formats` (pandas only; no torch, no trl); the Runs view
reads every format through :mod:`.run_view`.

A run is a TRL ``output_dir``: TRL's ``completions/completions_{step:05d}.parquet`` (written when
``log_completions=True``: ``step, prompt, completion, <one column per reward>, <log_extra columns>, advantage``) and,
for an MRTPO run, :mod:`.trl_log`'s ``mrtpo/`` files (``run.json``, ``tokens_*.parquet``, ``eval_tokens_*.parquet``).
Plain TRL runs (GRPO, GDPO: no ``mrtpo/``) open too, from TRL's files alone; a single parquet file of either kind
opens as a run of one step.

Known limits of TRL's own files, which the reader cannot undo: an evaluation at step ``s`` overwrites the training
completions of step ``s``; with ``steps_per_generation > 1`` consecutive files repeat the same completions; prompts
are grouped by runs of equal consecutive prompts (TRL logs no group index).

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

COMPLETIONS_FILE = re.compile(r"^completions_(\d{1,9})\.parquet$")
TOKENS_FILE = re.compile(r"^(eval_)?tokens_(\d{1,9})\.parquet$")
"""Step numbers have at most 9 digits (a member named with a step beyond int64 is not a run file)."""


RunFiles = run_formats.RunFiles
reward_column = run_formats.reward_column


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


def _listed(run: RunFiles):
    """The rewards ``mrtpo/run.json`` lists (None when it lists none)."""
    listed = run.info.get("rewards")
    if listed and (not isinstance(listed, list) or not all(isinstance(n, str) and 0 < len(n) <= 200 for n in listed)):
        raise ValueError("the run's mrtpo/run.json lists its rewards wrongly: 'rewards' must be a list of names")
    return list(listed) if listed else None


def _token_log_names(run: RunFiles) -> list[str]:
    """``run.json``'s rewards, else the token log's ``reward/*`` columns (from the first file's footer)."""
    listed = _listed(run)
    if listed:
        return listed
    cols = run_files.parquet_columns(next(iter(run.files.values())), run.allowed)
    return [c.removeprefix("reward/") for c in cols if c.startswith("reward/")]


def _completions_names(run: RunFiles) -> list[str]:
    """``run.json``'s rewards, else TRL's numeric columns besides ``step`` and ``advantage``, from the first file's
    footer."""
    listed = _listed(run)
    if listed:
        return listed
    schema = run_files.parquet_schema(next(iter(run.files.values())), run.allowed)
    return [f.name for f in schema if f.name not in ("step", "advantage") and _numeric(f.type)]


def _numeric(t) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


TOKEN_LOG_COLUMNS = ("row", "group", "prompt", "completion", "advantage", "token_advantages")
"""The token log's columns the Runs view reads (besides ``reward/<name>``)."""


def _token_log_rows(run: RunFiles, path: Path, step: int, mode: str) -> pd.DataFrame:
    names = _token_log_names(run)
    frame = _nonempty(_read(run, path), path)
    _require(frame.columns, path, [*TOKEN_LOG_COLUMNS, *map(reward_column, names)])
    return _checked(frame, path, names)


def _completions_rows(run: RunFiles, path: Path, step: int, mode: str) -> pd.DataFrame:
    names = _completions_names(run)
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
