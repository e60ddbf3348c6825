"""A TRL run's files, read for the app's Runs view (pandas only; no torch, no trl).

A run is a TRL ``output_dir``: TRL's ``completions/completions_{step:05d}.parquet`` (written when
``log_completions=True``: ``step, prompt, completion, <one column per reward>, <log_extra columns>, advantage``) and,
for an MRTPO run, :mod:`.trl_log`'s ``mrtpo/`` files (``run.json``, ``tokens_*.parquet``, ``eval_tokens_*.parquet``).
Plain TRL runs (GRPO, GDPO: no ``mrtpo/``) open too, from TRL's files alone; a single parquet file of either kind
opens as a run of one step.

Known limits of TRL's own files, which the reader cannot undo: an evaluation at step ``s`` overwrites the training
completions of step ``s``; with ``steps_per_generation > 1`` consecutive files repeat the same completions; prompts
are grouped by runs of equal consecutive prompts (TRL logs no group index).

A verl rollout dump (``trainer.rollout_data_dir``: ``{step}.jsonl`` files) opens too (:mod:`.verl_runs`).

Frames have one row per completion, columns ``step, mode, row, group, prompt, completion, advantage``,
``reward/<name>`` per reward and, from a token log, its per-token columns (:mod:`.trl_log`).
"""
from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

from . import trl_log, verl_runs
from ..viz.numbers import sig_frame

_COMPLETIONS = re.compile(r"^completions_(\d+)\.parquet$")
_TOKENS = re.compile(r"^(eval_)?tokens_(\d+)\.parquet$")
SORT_KEYS = ("row", "advantage", "token advantage spread")
"""What completions can be sorted by, besides each ``reward/<name>`` column."""


@dataclass(frozen=True)
class RunFiles:
    """The files of one run, by step."""

    root: Path
    completions: dict[int, Path] = field(default_factory=dict)
    """TRL's completions parquet per step."""
    tokens: dict[tuple[str, int], Path] = field(default_factory=dict)
    """Our per-token parquet per (mode, step), mode ``"train"`` or ``"eval"``."""
    info: dict = field(default_factory=dict)
    """``mrtpo/run.json`` (empty for a plain TRL run)."""
    verl: dict[int, Path] = field(default_factory=dict)
    """verl's rollout dump file per step (``{step}.jsonl``)."""

    @property
    def kind(self) -> str:
        """``"mrtpo"`` when a per-token log exists, ``"verl"`` for a verl dump, else ``"trl"``."""
        return "mrtpo" if self.tokens else "verl" if self.verl else "trl"

    def steps(self) -> list[tuple[str, int]]:
        """Every (mode, step) with a file: the token log's, and TRL's or verl's (as ``"train"``) where no token log
        exists."""
        plain = set(self.completions) | set(self.verl)
        keys = set(self.tokens) | ({("train", s) for s in plain} if not self.tokens else set())
        return sorted(keys, key=lambda k: (k[1], k[0] == "eval"))


# ----------------------------------------------------------------------------------------------- opening

def open_run(path) -> RunFiles:
    """A run from an ``output_dir`` (or its ``completions/`` or ``mrtpo/`` folder) or from one parquet file."""
    path = Path(path)
    if path.is_file():
        return _single_file(path)
    root = path.parent if path.name in ("completions", trl_log.LOG_DIR) else path
    comp = {int(m[1]): p for p in sorted((root / "completions").glob("*.parquet")) if (m := _COMPLETIONS.match(p.name))}
    tokens = {("eval" if m[1] else "train", int(m[2])): p for p in sorted((root / trl_log.LOG_DIR).glob("*.parquet"))
              if (m := _TOKENS.match(p.name))}
    info_file = root / trl_log.LOG_DIR / trl_log.RUN_FILE
    info = json.loads(info_file.read_text(encoding="utf-8")) if info_file.is_file() else {}
    verl = verl_runs.step_files(root) if not comp and not tokens else {}
    if not comp and not tokens and not verl:
        raise FileNotFoundError(f"{root.name or root} holds no run files: neither completions/completions_*.parquet "
                                "(TRL, with log_completions=True) nor mrtpo/tokens_*.parquet (MRTPOTrainer) nor "
                                "{step}.jsonl (verl's trainer.rollout_data_dir)")
    return RunFiles(root, comp, tokens, info if isinstance(info, dict) else {}, verl)


def _single_file(path: Path) -> RunFiles:
    if (m := verl_runs.STEP_FILE.match(path.name)):
        return RunFiles(path.parent, verl={int(m[1]): path})
    columns = _columns(path)
    step = _file_step(path)
    if "token_advantages" in columns:
        mode = "eval" if path.name.startswith("eval_") else "train"
        return RunFiles(path.parent, tokens={(mode, step): path})
    if {"completion", "advantage"} <= set(columns):
        return RunFiles(path.parent, completions={step: path})
    raise ValueError(f"{path.name} is neither TRL's completions parquet (prompt, completion, advantage, ...) nor "
                     "MRTPOTrainer's per-token log (token_advantages, ...)")


def _columns(path: Path) -> list[str]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("reading a run's parquet files needs pyarrow: pip install 'mrtpo-viz[trl]'") from None
    try:
        return list(pq.read_schema(path).names)
    except Exception as e:  # noqa: BLE001 -- any unreadable upload: one readable message
        raise ValueError(f"{path.name} is not a readable parquet file ({type(e).__name__})") from None


def _file_step(path: Path) -> int:
    m = re.search(r"(\d+)\.parquet$", path.name)
    if m:
        return int(m[1])
    steps = pd.read_parquet(path, columns=["step"])["step"] if "step" in _columns(path) else []
    return int(steps.iloc[0]) if len(steps) else 0


def extract_upload(upload, dest, max_bytes: int, max_files: int = 2000) -> Path:
    """An uploaded zip of a run (or one parquet or verl jsonl file) unpacked into ``dest``; returns what
    :func:`open_run` opens.

    Only run files are taken from a zip, by their names alone (``completions_*.parquet``, ``tokens_*.parquet``,
    ``eval_tokens_*.parquet``, ``run.json``, verl's ``{step}.jsonl``), into ``dest/completions``, ``dest/mrtpo`` and
    ``dest`` itself (verl): a member's folders, absolute paths and ``..`` never reach the disk. ``max_bytes`` caps
    the uncompressed total (a zip bomb stops before anything is written).
    """
    upload, dest = Path(upload), Path(dest)
    if upload.stat().st_size > max_bytes:
        raise ValueError(f"{upload.name} is {upload.stat().st_size / 2**20:.1f} MiB; at most "
                         f"{max_bytes / 2**20:.1f} MiB are accepted here (MRTPO_MAX_UPLOAD_MB)")
    if upload.suffix.lower() == ".parquet" or verl_runs.STEP_FILE.match(upload.name):
        return upload
    if not zipfile.is_zipfile(upload):
        raise ValueError(f"{upload.name} is neither a .zip of a run's output_dir (or of a verl rollout dump) nor a "
                         ".parquet file nor one verl {step}.jsonl file")
    with zipfile.ZipFile(upload) as zf:
        members = [(i, _target(dest, i.filename)) for i in zf.infolist() if not i.is_dir()]
        members = [(i, t) for i, t in members if t is not None]
        if len(members) > max_files or sum(i.file_size for i, _ in members) > 10 * max_bytes:
            raise ValueError(f"{upload.name} unpacks to more than {len(members)} files or "
                             f"{10 * max_bytes / 2**20:.0f} MiB; upload fewer steps")
        if not members:
            raise ValueError(f"{upload.name} holds no run files (completions_*.parquet, tokens_*.parquet, verl's "
                             "{step}.jsonl)")
        for info, target in members:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
    return dest


def _target(dest: Path, member: str) -> Optional[Path]:
    name = member.replace("\\", "/").rsplit("/", 1)[-1]
    if _COMPLETIONS.match(name):
        return dest / "completions" / name
    if _TOKENS.match(name) or name == trl_log.RUN_FILE:
        return dest / trl_log.LOG_DIR / name
    if verl_runs.STEP_FILE.match(name):
        return dest / name
    return None


# ----------------------------------------------------------------------------------------------- reading

def reward_names(run: RunFiles) -> list[str]:
    """The rewards of the run: ``run.json``'s, else the token log's ``reward/*`` columns, else TRL's numeric
    columns between ``completion`` and ``advantage``."""
    if run.info.get("rewards"):
        return list(run.info["rewards"])
    if run.verl and not run.tokens:
        return verl_runs.reward_names(verl_runs.read_step(next(iter(run.verl.values()))))
    if run.tokens:
        cols = _columns(next(iter(run.tokens.values())))
        return [c.removeprefix("reward/") for c in cols if c.startswith("reward/")]
    df = pd.read_parquet(next(iter(run.completions.values())))
    return [c for c in df.columns if c not in ("step", "advantage") and pd.api.types.is_numeric_dtype(df[c])]


def step_frame(run: RunFiles, step: int, mode: str = "train") -> pd.DataFrame:
    """The completions of a (mode, step): one row per completion, in the order the run logged them."""
    if (mode, step) in run.tokens:
        return pd.read_parquet(run.tokens[(mode, step)])
    if mode == "train" and step in run.verl:
        return verl_runs.step_frame(run.verl[step], step)
    if step not in run.completions:
        raise KeyError(f"the run has no {mode} step {step}; it has {', '.join(f'{m} {s}' for m, s in run.steps())}")
    return _from_trl(pd.read_parquet(run.completions[step]), reward_names(run), step)


def _from_trl(df: pd.DataFrame, names: list[str], step: int) -> pd.DataFrame:
    """TRL's completions table in the token log's columns (prompt and completion as text, rewards renamed)."""
    prompts = [_text(p, last_user=True) for p in df["prompt"]]
    out = pd.DataFrame({"step": step, "mode": "train", "row": range(len(df)), "group": _groups(prompts),
                        "prompt": prompts, "messages": [_messages(p) for p in df["prompt"]],
                        "completion": [_text(c) for c in df["completion"]],
                        "advantage": df["advantage"].astype(float)})
    for name in names:
        out[trl_log.reward_column(name)] = df[name].astype(float).values
    return out


def _text(value, last_user: bool = False) -> str:
    """A prompt or completion: a string, or chat messages (a prompt's last user message, a completion's last)."""
    if isinstance(value, str):
        return value
    msgs = [dict(m) for m in list(value)]
    if last_user:
        msgs = [m for m in msgs if m.get("role") == "user"] or msgs
    return str(msgs[-1].get("content", "")) if msgs else ""


def _messages(value) -> str:
    msgs = [{"role": "user", "content": value}] if isinstance(value, str) else [
        {"role": str(m.get("role")), "content": str(m.get("content", ""))} for m in list(value)]
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
    :func:`mrtpo_viz.viz.training.reward_curves_figure` draws)."""
    names, rows = reward_names(run), []
    for mode, step in run.steps():
        df = step_frame(run, step, mode)
        # the figure counts steps from 0 and shows step + 1 (the live tab's frames); TRL's global steps start at 1
        rows.append({"variant": mode, "seed": 0, "step": step - 1,
                     **{trl_log.reward_column(n): float(df[trl_log.reward_column(n)].mean()) for n in names}})
    return pd.DataFrame(rows)


def groups_table(frame: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """One row per group: its prompt, size, mean of each reward, lowest and highest advantage."""
    agg = {"prompt": ("prompt", "first"), "completions": ("row", "count"),
           **{f"mean {n}": (trl_log.reward_column(n), "mean") for n in names},
           "min advantage": ("advantage", "min"), "max advantage": ("advantage", "max")}
    return sig_frame(frame.groupby("group", sort=True).agg(**agg).reset_index())


def _spread(frame: pd.DataFrame) -> pd.Series:
    if "token_advantages" not in frame:
        return pd.Series(0.0, index=frame.index)
    return frame["token_advantages"].map(lambda v: float(max(v) - min(v)) if len(v) else 0.0)


def completions_table(frame: pd.DataFrame, names: list[str], *, group=None, text: str = "",
                      sort_by: str = "row", descending: bool = False) -> pd.DataFrame:
    """The completions to list: of one group (None: all), containing ``text`` in the prompt or completion (case
    ignored), sorted by ``row``, ``advantage``, the token advantages' spread or a reward."""
    keep = frame if group is None else frame[frame["group"] == int(group)]
    if text.strip():
        needle = text.strip().lower()
        hit = keep["completion"].str.lower().str.contains(needle, regex=False) | keep["prompt"].str.lower().str.contains(
            needle, regex=False)
        keep = keep[hit]
    table = pd.DataFrame({"row": keep["row"], "group": keep["group"],
                          **{n: keep[trl_log.reward_column(n)] for n in names}, "advantage": keep["advantage"],
                          "token advantage spread": _spread(keep),
                          "completion": keep["completion"].str.slice(0, 120)})
    key = sort_by if sort_by in table.columns and sort_by != "completion" else "row"
    return sig_frame(table.sort_values(key, ascending=not descending, kind="stable").reset_index(drop=True))


def completion_record(frame: pd.DataFrame, row: int) -> dict:
    """One completion of a step frame as plain Python values (lists for the per-token columns)."""
    hit = frame[frame["row"] == int(row)]
    if hit.empty:
        raise KeyError(f"the step has no completion {row}; rows are {int(frame['row'].min())}.."
                       f"{int(frame['row'].max())}")
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in hit.iloc[0].items()}
