"""verl's rollout dumps, one run format of :mod:`.run_formats` (pandas only): the Runs tab and ``python -m
mrtpo_viz score`` open them.

verl writes them when ``trainer.rollout_data_dir`` is set (``trainer.validation_data_dir`` for validation, same
format). The format follows verl's own source, ``RayPPOTrainer._dump_generations`` in
``verl/trainer/ppo/ray_trainer.py`` (verl 0.8.0.dev, commit b178a3c of 2026-01-29):

- one file per training step, ``{global_steps}.jsonl``, one JSON object per line, one line per rollout;
- keys ``input`` (the prompt, decoded with ``skip_special_tokens=True``: the chat template's text without its
  special tokens), ``output`` (the response, decoded the same way), ``gts`` (the row's
  ``reward_model.ground_truth``, or null), ``score`` (the sum of the token-level scores), ``step``;
- plus every entry of the reward function's returned dict that has one value per rollout (``reward_extra_info``:
  a reward function that returns ``{"score": ..., "acc": ..., "format": ...}`` adds ``acc`` and ``format``; its
  ``score`` overwrites the base one with the same value).

What the dump does not hold, and what we do instead:

- no group id: rows with equal ``input`` are one group (verl repeats each prompt ``rollout.n`` times in a row);
- no advantage: :func:`grpo_advantages` gives verl's GRPO outcome advantage of ``score`` (``(score - group mean) /
  (group std + 1e-6)``, unbiased std, ``norm_adv_by_std_in_grpo=True``; a group of one has mean 0 and std 1, as in
  verl's ``compute_grpo_outcome_advantage``);
- no chat messages: :func:`chat_messages` recovers them from a ChatML prompt (Qwen's template, the bundled
  policy's), whose stripped text reads ``system\\n...\\nuser\\n...\\nassistant\\n``; any other prompt becomes one
  user message holding the whole text (the replay then wraps it in the checkpoint's chat template);
- rewards: the extra keys whose values are numbers (or null) on every row, else ``score`` alone; the information a
  replay gives each reward is ``gts`` (the only per-row information verl keeps), editable in the app.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import stat
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

import pandas as pd

from . import run_files, run_formats
from .run_files import RunFileError

STEP_FILE = re.compile(r"^(\d+)\.jsonl$")
BASE_KEYS = ("input", "output", "gts", "score", "step")
"""The keys ``_dump_generations`` always writes; every other key is reward extra information."""
MAX_STEP_BYTES = 256 * 2**20
"""Bytes of one step file (8,192 rollouts of 8k-token responses)."""
MAX_STEP_ROWS = 50_000
"""Rollouts (lines) of one step file: ``train_batch_size x rollout.n`` (1,024 x 16 = 16,384 in a large run); blank
lines count too."""
MAX_LINE_BYTES = 4 * 2**20
"""Bytes of one line (one rollout: its prompt, its response, its ground truth and reward values)."""
MAX_LINE_KEYS = 64
"""Keys of one line: verl's five and the reward function's extra information (a handful in real runs)."""
VERL_VERSION = "0.8.0.dev (volcengine/verl b178a3c)"
_ROLE = re.compile(r"(?:^|\n)(system|user|assistant)\n")
_DECODE = json.JSONDecoder().decode
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
"""A ``\\uD800``-``\\uDFFF`` escape in a line's JSON: the only way a lone surrogate gets into its text."""


def step_files(folder: Path, base: Optional[Path] = None) -> dict[int, Path]:
    """``{step: path}`` of the ``{step}.jsonl`` regular files directly in ``folder`` (a fifo, a device or a link
    to one is left out: reading it would never end); with ``base``, only those whose resolved path lies under it and
    whose step has at most 9 digits (the Runs view's rule, :func:`.run_files.safe_file`)."""
    found = {int(m[1]): p for p in sorted(Path(folder).glob("*.jsonl")) if (m := STEP_FILE.match(p.name))}
    if base is not None:
        return {s: p for s, p in found.items() if len(p.stem) <= 9 and run_files.safe_file(p, base) is not None}
    return {step: p for step, p in found.items() if _regular(p)}


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def read_step(path: Path) -> list[dict]:
    """The rows of one dump file, checked line by line as it is read: at most :data:`MAX_STEP_ROWS` lines of at most
    :data:`MAX_LINE_BYTES` and :data:`MAX_LINE_KEYS` keys; ``input`` and ``output`` text, ``score`` and numeric
    extra keys finite numbers (or null). Every problem is a :class:`RunFileError` naming the file, the line and the
    field; ``score`` and the numeric extra keys come back as floats."""
    name = path.name
    rows: list[dict] = []
    with run_files.open_regular(path, name) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_STEP_BYTES:
            raise RunFileError(
                f"{name} is {size / 2**20:.0f} MiB; a verl step file here has at most {MAX_STEP_BYTES / 2**20:.0f} MiB"
            )
        for lineno in itertools.count(1):
            line = fh.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if lineno > MAX_STEP_ROWS:
                raise RunFileError(
                    f"{name} has more than {MAX_STEP_ROWS:,} lines; a verl step file here has at most {MAX_STEP_ROWS:,}"
                )
            if len(line) > MAX_LINE_BYTES:
                raise RunFileError(
                    f"{name}:{lineno}: the line is longer than {MAX_LINE_BYTES // 2**20} MiB; at most that here"
                )
            if line.strip():
                rows.append(_row(line, name, lineno))
    if not rows:
        raise RunFileError(f"{name} holds no rollouts")
    return rows


def _row(line: bytes, name: str, lineno: int) -> dict:
    """One line as a checked row (see :func:`read_step`); messages start ``file:line``."""
    try:
        row = _DECODE(line.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise RunFileError(f"{name}:{lineno}: not UTF-8 text (byte {e.start + 1} of the line)") from None
    except ValueError as e:  # JSONDecodeError, or an integer of more than 4,300 digits
        why = e.msg if isinstance(e, json.JSONDecodeError) else "a number too long to read"
        raise RunFileError(f"{name}:{lineno}: not JSON ({why}); is this a verl rollout dump?") from None
    except RecursionError:
        raise RunFileError(f"{name}:{lineno}: nested too deeply to be a verl dump line") from None
    if type(row) is not dict or "input" not in row or "output" not in row:
        raise RunFileError(
            f"{name}:{lineno}: a verl dump line has 'input' and 'output' (verl's trainer.rollout_data_dir files)"
        )
    if len(row) > MAX_LINE_KEYS:
        raise RunFileError(
            f"{name}:{lineno}: {len(row):,} keys; a verl dump line here has at most {MAX_LINE_KEYS} (verl's five "
            "and the reward function's extra information)"
        )
    for key in ("input", "output"):
        if type(row[key]) is not str:
            raise RunFileError(f"{name}:{lineno}: {key!r} must be text, got {_kind(row[key])}")
    if b"\\u" in line and _SURROGATE.search(line.decode("utf-8")):
        for key, value in [(k, k) for k in row] + [(k, v) for k, v in row.items() if isinstance(v, str)]:
            if not _unicode(value):
                raise RunFileError(
                    f"{name}:{lineno}: {_shown(key)!r} holds a lone surrogate (\\ud800-\\udfff): not Unicode text"
                )
    if "score" not in row:
        row["score"] = math.nan
    for key, value in row.items():
        if type(value) is float and not math.isinf(value):
            continue  # the common case: a finite number (or NaN, missing)
        if key == "score" or (key not in BASE_KEYS and _number(value)):
            row[key] = _float(value, f"{name}:{lineno}", key)
    return row


def _unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _shown(key: str) -> str:
    key = key.encode("utf-8", "backslashreplace").decode("utf-8")
    return key if len(key) <= 40 else key[:37] + "..."


def _kind(value) -> str:
    names = {str: "text", dict: "an object", list: "a list", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number")


def _float(value, where: str, key: str) -> float:
    """A reward value as a float: null (and NaN) is missing; anything else must be a finite number."""
    if value is None:
        return math.nan
    if not _number(value):
        raise RunFileError(f"{where}: {_shown(key)!r} must be a number (or null), got {_kind(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if math.isinf(number):
        raise RunFileError(f"{where}: {_shown(key)!r} must be a finite number; it is beyond +-1.8e308")
    return number


def _number(v) -> bool:
    return v is None or isinstance(v, (int, float))  # a bool (an "acc" of true/false) counts as 0/1


@dataclass(frozen=True)
class StepSummary:
    """What the run's reward curves need of one step file."""

    rows: int
    names: tuple[str, ...]
    """Its rewards (:func:`reward_names`)."""
    means: dict[str, float]
    """Each reward's mean over the rows that have it."""


def step_summary(path: Path) -> StepSummary:
    """One step file's rows, rewards and reward means, read once per version of the file: opening a run asks for
    its rewards and every step's means, and each view of a step for the rewards again."""
    st = path.stat()
    return _summary(path, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=256)
def _summary(path: Path, size: int, mtime_ns: int) -> StepSummary:
    rows = read_step(path)
    names = reward_names(rows)
    means = {n: float(pd.Series([r.get(n, math.nan) for r in rows], dtype=float).mean()) for n in names}
    return StepSummary(len(rows), tuple(names), means)


def reward_names(rows: list[dict]) -> list[str]:
    """The extra keys that are numbers (or null) on every row, in the file's order; ``["score"]`` if none."""
    keys = [k for k in rows[0] if k not in BASE_KEYS]
    names = [k for k in keys if all(k in r and _number(r[k]) for r in rows)]
    return names or ["score"]


def chat_messages(text: str) -> list[dict]:
    """Chat messages recovered from a ChatML prompt decoded without special tokens (see the module docstring)."""
    if text.endswith("assistant\n") and _ROLE.match(text):
        parts = _ROLE.split(text)[1:]  # role, content, role, content, ..., "assistant", ""
        pairs = list(zip(parts[0::2], parts[1::2]))
        if pairs and pairs[-1] == ("assistant", "") and all(r != "assistant" or c for r, c in pairs[:-1]):
            return [{"role": r, "content": c} for r, c in pairs[:-1]]
    return [{"role": "user", "content": text}]


def groups_of(inputs: list[str]) -> list[int]:
    """Group ids: equal prompts share one, numbered in order of first appearance."""
    ids: dict[str, int] = {}
    return [ids.setdefault(p, len(ids)) for p in inputs]


def grpo_advantages(scores: list[float], groups: list[int], eps: float = 1e-6) -> list[float]:
    """verl's GRPO outcome advantage of each row's score within its group: ``(score - mean) / (std + eps)`` with the
    unbiased std, and, as ``compute_grpo_outcome_advantage`` does for a group of one, mean 0 and std 1 there (the
    row keeps its score, over ``1 + eps``)."""
    s = pd.Series(scores, dtype=float)
    by = s.groupby(groups)
    mean, std, n = by.transform("mean"), by.transform("std"), by.transform("size")
    alone = n < 2
    adv = (s - mean.mask(alone, 0.0)) / (std.mask(alone, 1.0) + eps)
    return [float(a) for a in adv]


def step_frame(path: Path, step: int) -> pd.DataFrame:
    """One dump file in the Runs view's columns, rows ordered by group (then file order); ``row`` is the line's
    index in the file, ``gts`` and ``score`` kept."""
    rows = read_step(path)
    names = step_summary(path).names
    inputs = [str(r["input"]) for r in rows]
    groups = groups_of(inputs)
    scores = [r["score"] for r in rows]
    chats = {p: chat_messages(p) for p in dict.fromkeys(inputs)}  # once per group: its rows share the prompt
    shown = {p: json.dumps(ms) for p, ms in chats.items()}
    user = {p: next((m["content"] for m in reversed(ms) if m["role"] == "user"), "") for p, ms in chats.items()}
    out = pd.DataFrame(
        {
            "step": step,
            "mode": "train",
            "row": range(len(rows)),
            "group": groups,
            "prompt": [user[p] for p in inputs],
            "messages": [shown[p] for p in inputs],
            "completion": [str(r["output"]) for r in rows],
            "advantage": grpo_advantages(scores, groups),
            "score": scores,
            "gts": [None if r.get("gts") is None else _text(r["gts"]) for r in rows],
        }
    )
    for n in names:
        out[run_formats.reward_column(n)] = [r.get(n, math.nan) for r in rows]
    return out.sort_values("group", kind="stable").reset_index(drop=True)


def _text(v) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def record_infos(record: dict, names) -> dict[str, str]:
    """Each reward's information for a replay of a dump row: its ground truth (``gts``), the only per-row
    information verl keeps."""
    if record.get("gts") in (None, ""):
        raise ValueError("the row has no ground truth (gts) to give its rewards as information")
    return {n: str(record["gts"]) for n in names}


# ----------------------------------------------------------------------------------------------- the format


def _find(folder: Path, base: Path) -> dict[tuple[str, int], Path]:
    return {("train", s): p for s, p in step_files(folder, base).items()}


def _single(path: Path, base: Path):
    m = STEP_FILE.match(path.name)
    if not m:
        return None
    if len(m[1]) > 9 or run_files.safe_file(path, base) is None:
        raise ValueError(
            f"{run_formats.shown(path)} is not a verl step file ({{step}}.jsonl, a step of at most 9 digits)"
        )
    return {("train", int(m[1])): path}


def _member(member: str):
    name = member.replace("\\", "/").rsplit("/", 1)[-1]
    return name if STEP_FILE.match(name) else None


def _means(run, path: Path) -> tuple[int, dict[str, float]]:
    summary = step_summary(path)
    missing = [n for n in reward_names_of(run) if n not in summary.names]
    if missing:
        raise ValueError(
            f"{run_formats.shown(path)} has no column {missing[0]!r}, which the Runs view needs (is it a file of "
            "this run? its rewards are taken from the run's first file)"
        )
    return summary.rows, summary.means


def reward_names_of(run) -> list[str]:
    """A dump's rewards: its first step file's (:func:`reward_names`)."""
    return list(step_summary(next(iter(run.files.values()))).names)


FORMAT = run_formats.register_format(
    run_formats.RunFormat(
        name="verl",
        title="a verl rollout dump (no per-token log: replay a completion with a checkpoint; each reward's "
        "information starts as the row's ground truth, gts)",
        find=_find,
        single=_single,
        member=_member,
        reward_names=reward_names_of,
        rows=lambda run, path, step, mode: step_frame(path, step),
        advantage="verl's GRPO advantage of the score (computed here as verl's trainer does: the dump holds none)",
        what="a verl dump",
        looks="{step}.jsonl (verl's trainer.rollout_data_dir)",
        means=_means,
        infos=record_infos,
        infos_found="from the row's ground truth (gts)",
        file_name=lambda name: bool(STEP_FILE.match(name)),
    )
)
