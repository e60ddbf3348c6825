"""A run of any registered format (:mod:`.run_formats`), read for the Runs view and ``python -m mrtpo_viz score``:
finding and opening it, placing an upload's members, its rewards, a step's rows, its curves and tables, and its rows
to score. Nothing here knows a format: each is a module that registers itself (:mod:`.trl_runs` for TRL and MRTPO,
:mod:`.verl_runs`, :mod:`.prime_rl_runs`), imported here so that the registry holds them.

Frames have one row per completion, columns :data:`.run_formats.VIEW_COLUMNS`, ``reward/<name>`` per reward and
what else the format holds (a token log's per-token columns, a verl row's ``gts``, prime-rl's per-token lists).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from . import prime_rl_runs, run_files, trl_log, trl_runs, verl_runs  # noqa: F401  (they register their formats)
from .run_files import RunFileError
from .run_formats import RUN_FORMATS, RunFiles, RunFormat, reward_column, shown
from ..viz.numbers import sig_frame

SORT_KEYS = ("row", "advantage", "token advantage spread")
"""What completions can be sorted by, besides each ``reward/<name>`` column."""

BUILTIN = ("mrtpo", "trl", "verl", "prime-rl")
"""The built-in formats, in the order a folder is tried (an MRTPO run holds TRL's files too)."""


def formats() -> dict[str, RunFormat]:
    """The registered formats, the built-in ones first in :data:`BUILTIN` order."""
    return {**{n: RUN_FORMATS[n] for n in BUILTIN}, **RUN_FORMATS}


def detect(path, base=None) -> Optional[tuple[RunFormat, dict[tuple[str, int], Path]]]:
    """The format of a run folder or file and its step files, or None (no format recognises it)."""
    path = Path(path)
    base = Path(base) if base is not None else (path.parent if path.is_file() else path)
    for fmt in formats().values():
        found = fmt.single(path, base) if path.is_file() else fmt.find(path, base)
        if found:
            return fmt, found
    return None


def open_run(path, base=None, max_bytes: int = run_files.MAX_FILE_BYTES) -> RunFiles:
    """A run from a folder of any registered format (or its inner folder: ``completions/``, ``mrtpo/``,
    ``token_exports/``) or from one file of it.

    Only regular files whose resolved path lies under ``base`` (default: the run folder itself) are read: a link
    that leaves it reads as a missing file (:mod:`.run_files`); ``max_bytes`` caps one parquet file's decompressed
    bytes.

    Raises:
        FileNotFoundError: a folder with no run files of any format. ValueError: a file of no format.
    """
    path = Path(path)
    base = Path(base) if base is not None else (path.parent if path.is_file() else path)
    found = detect(path, base)
    if found is None and path.is_file():
        raise ValueError(f"{shown(path)} is not a run file of any format read here ({_looks(', ')})")
    if found is None:
        raise FileNotFoundError(f"{path.name or 'the folder'} holds no run files: neither {_looks(' nor ')}")
    fmt, files = found
    root = path.parent if path.is_file() or path.name in ("completions", "mrtpo", "token_exports") else path
    info = run_files.read_json(root / "mrtpo" / "run.json", base) if fmt.name in ("mrtpo", "trl") else {}
    return RunFiles(root, fmt.name, files, info, base, max_bytes)


def _looks(sep: str) -> str:
    return sep.join(f.looks for f in formats().values())


def upload_target(member: str) -> Optional[str]:
    """Where a zip member goes in an unpacked upload (relative), or None: not a run file of any format."""
    for fmt in formats().values():
        target = fmt.member(member)
        if target is not None:
            return target
    return None


def is_step_file_name(name: str) -> bool:
    """Whether an uploaded file of this name is read as one run file (a parquet file, or a format's step file)."""
    return name.lower().endswith(".parquet") or any(f.file_name(name) for f in formats().values())


def reward_names(run: RunFiles) -> list[str]:
    """The rewards of the run (its format's :attr:`~.run_formats.RunFormat.reward_names`; an MRTPO run's
    ``run.json`` lists them first), at most :data:`~.run_files.MAX_REWARDS`."""
    names = run.format.reward_names(run)
    if len(names) > run_files.MAX_REWARDS:
        first = trl_log.RUN_FILE if run.info.get("rewards") else shown(next(iter(run.files.values())))
        raise RunFileError(f"{first} has {len(names):,} rewards; a run here has at most {run_files.MAX_REWARDS}")
    return names


def step_frame(run: RunFiles, step: int, mode: str = "train") -> pd.DataFrame:
    """The completions of a (mode, step): one row per completion, in its format's order (:data:`.run_formats.
    VIEW_COLUMNS`, ``reward/<name>`` per reward, and what else the format holds).

    Raises:
        KeyError: no such step. ValueError: the file lacks a column the view needs, or holds values of the wrong
            kind (named).
    """
    if (mode, step) not in run.files:
        raise KeyError(f"the run has no {mode} step {step}; it has {', '.join(f'{m} {s}' for m, s in run.steps())}")
    reward_names(run)  # over the cap: refused before any row is read
    return run.format.rows(run, run.files[(mode, step)], step, mode)


def reward_curves(run: RunFiles) -> pd.DataFrame:
    """Per (mode, step), each reward's mean over the step's completions: columns ``variant`` (the mode), ``seed``
    (0), ``step`` (TRL's global step minus 1: the figure shows step + 1), ``reward/<name>`` (the frame
    :func:`mrtpo_viz.viz.training.reward_curves_figure` draws). Steps are read in order until
    :data:`~.run_files.MAX_CURVE_ROWS` rows have been; ``attrs["note"]`` then says which steps are left off."""
    names, rows, read, steps = curve_names(run), [], 0, run.steps()
    for mode, step in steps:
        if read >= run_files.MAX_CURVE_ROWS:
            break
        count, means = step_means(run, mode, step, names)
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


def step_means(run: RunFiles, mode: str, step: int, names: list[str]) -> tuple[int, dict[str, float]]:
    """One step's rows and the mean of each of its curves (``names``: :func:`curve_names`)."""
    if run.format.means is not None:  # without building the step's rows (read once per file version)
        return run.format.means(run, run.files[(mode, step)])
    df = step_frame(run, step, mode)
    return len(df), {n: float(df[reward_column(n)].mean()) for n in names}


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


def rollout_rows(run: RunFiles, policy, typed: Optional[dict[str, str]] = None):
    """Every row of a run, step by step, as a row to score (:func:`mrtpo_viz.relevance.scoring.score_run_rows`):
    ``id`` (``step<S>-row<R>``, ``eval-`` first for an evaluation step), ``line`` (in its file), ``task`` (the
    format's name), ``prompt`` (chat messages), ``response`` (text, or the exact ids where the run logged ids),
    ``infos`` (``typed`` for every row, else what the row holds: :attr:`RunFormat.infos`) and ``rewards``; a row
    whose information or prompt cannot be had is ``{"line", "problem"}``.

    Raises:
        RunFileError: a step file over a cap or of the wrong shape (named ``file:line``).
    """
    import json
    import math

    fmt, names = run.format, reward_names(run)
    for mode, step in run.steps():
        frame = step_frame(run, step, mode)
        for rec in frame.to_dict("records"):
            rid = f"{'eval-' if mode == 'eval' else ''}step{step}-row{rec['row']}"
            line = int(rec.get("line", rec["row"] + 1))
            where = f"{rec.get('file', run.files[(mode, step)].name)}:{line}"
            try:
                if typed:
                    infos = dict(typed)
                elif fmt.infos is not None:
                    infos = fmt.infos(rec, names)
                else:
                    raise ValueError(f"{fmt.what} holds no information for its rewards: give it (--info NAME=TEXT)")
                if fmt.rollout is not None:
                    messages, response = fmt.rollout(rec, policy)
                else:
                    messages, response = json.loads(rec["messages"]), rec["completion"]
            except (ValueError, KeyError, TypeError) as e:
                yield {"line": line, "problem": f"id {rid!r} ({where}): {e}"}
                continue
            rewards = {n: float(rec[reward_column(n)]) for n in names if reward_column(n) in rec}
            yield {
                "id": rid,
                "line": line,
                "task": fmt.name,
                "prompt": messages,
                "response": response,
                "infos": infos,
                "rewards": {n: v for n, v in rewards.items() if not math.isnan(v)},
            }
