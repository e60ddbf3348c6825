"""prime-rl's per-token exports, one run format of :mod:`.run_formats` (numpy and pandas; no torch).

prime-rl's RL trainer writes them with ``trainer.enable_token_export = true``. The format follows prime-rl's own
source, ``TokenExporter`` in ``src/prime_rl/trainer/rl/token_export.py`` (PrimeIntellect-ai/prime-rl, commit
559b447 of 2026-08-21, ``SCHEMA_VERSION = 1``):

- under the trainer's ``output_dir``: ``token_exports/step_<step>/rank_<rank>.jsonl``, one file per training step and
  data-parallel rank; a ``STABLE`` file appears in the step's folder once every rank has flushed;
- one JSON object per line, one line per packed sequence that has a loss token (written with ``allow_nan=False``:
  a non-finite float is ``null``): ``schema_version``, ``step``, ``rank``, ``micro_step``, ``micro_sequence_idx``,
  ``export_sequence_idx``, ``env_name`` (text or null) and aligned per-token lists (:mod:`.prime_rl_lines`) over
  the whole sequence, prompt included;
- ``mismatch_kl``, ``log_importance_ratio``, ``importance_ratio``, ``prob_delta`` compare the trainer's and the
  inference engine's log-probs (``ratio = exp(trainer - inference)``, ``mismatch_kl = ratio - log ratio - 1``);
  ``is_masked*`` are its DPPO trust-region masks (null unless the default loss is used); ``rl_weights``,
  ``ce_weights``, ``ref_kl_weights`` are the loss channels' per-token weights (null: the default, weight 1 on the
  loss mask for rl, no ce or ref_kl channel).

What the export does not hold, and what we do instead:

- no text: the tokens are decoded with the checkpoint picked in the app (``--checkpoint`` for ``score``), which must
  be the run's tokenizer; the prompt is the sequence before its first loss token, decoded without special tokens
  and split into chat messages as a verl prompt is (:func:`.verl_runs.chat_messages`); the response is the exact
  ids from the first loss token on;
- no rewards and no ground truth: the curves show each step's mean advantage, entropy and mismatch KL over loss
  tokens; a replay takes each reward's information as typed (``--info`` for ``score``);
- no group id: sequences with the same prompt ids are one group;
- one advantage stream: a row's ``advantage`` is the mean of ``advantages`` over its loss tokens; the per-channel
  view shows ``rl`` as ``advantages x rl_weights`` on its tokens (what the rl loss scales), and the ``ce`` and
  ``ref_kl`` channels' weights (those losses take no advantage).
"""

from __future__ import annotations

import itertools
import math
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from . import run_files, run_formats
from .prime_rl_lines import BOOL_LISTS, FLOAT_LISTS, row
from .run_files import RunFileError

EXPORT_DIR = "token_exports"
STEP_DIR = re.compile(r"^step_(\d{1,9})$")
RANK_FILE = re.compile(r"^rank_(\d{1,6})\.jsonl$")
MAX_STEP_BYTES = 256 * 2**20
"""Bytes of one step's rank files together."""
MAX_STEP_ROWS = 50_000
"""Sequences (lines, blank ones too) of one step over all its ranks."""
MAX_LINE_BYTES = 16 * 2**20
"""Bytes of one line: one sequence of up to :data:`.prime_rl_lines.MAX_TOKENS` tokens, 18 lists of them (~14 MiB
at that cap)."""
MAX_RANK_FILES = 512
"""Rank files of one step (data-parallel ranks that export)."""


# ----------------------------------------------------------------------------------------------- finding


def _exports(path: Path) -> Path:
    return path if path.name == EXPORT_DIR else path / EXPORT_DIR


def _rank_files(folder: Path, base: Path) -> list[Path]:
    """The ``rank_<r>.jsonl`` regular files of a step folder under ``base``, by rank."""
    found = [p for p in run_files.files_in(folder, base, "rank_*.jsonl") if RANK_FILE.match(p.name)]
    return sorted(found, key=lambda p: int(RANK_FILE.match(p.name)[1]))


def find_steps(path: Path, base: Path) -> dict[tuple[str, int], Path]:
    """``{("train", step): step folder}`` of a prime-rl ``output_dir`` (or its ``token_exports`` folder, or one
    ``step_<s>`` folder), each with at least one rank file under ``base``."""
    path = Path(path)
    if (m := STEP_DIR.match(path.name)) and _rank_files(path, base):
        return {("train", int(m[1])): path}
    exports = _exports(path)
    if run_files.safe_folder(exports, base) is None:
        return {}
    try:
        folders = sorted(p for p in exports.iterdir() if STEP_DIR.match(p.name))
    except OSError:
        return {}
    return {
        ("train", int(STEP_DIR.match(p.name)[1])): p
        for p in folders
        if run_files.safe_folder(p, base) is not None and _rank_files(p, base)
    }


def _single(path: Path, base: Path):
    if not RANK_FILE.match(path.name):
        return None
    if run_files.safe_file(path, base) is None:
        raise RunFileError(f"{run_formats.shown(path)}: no such run file")
    m = STEP_DIR.match(path.parent.name)
    step = int(m[1]) if m else int(read_step(path, base)[0]["step"])
    return {("train", step): path}


def _member(member: str) -> Optional[str]:
    parts = member.replace("\\", "/").split("/")
    if len(parts) >= 2 and RANK_FILE.match(parts[-1]) and STEP_DIR.match(parts[-2]):
        return f"{EXPORT_DIR}/{parts[-2]}/{parts[-1]}"
    return None


# ----------------------------------------------------------------------------------------------- reading


def read_step(path: Path, base: Optional[Path] = None) -> list[dict]:
    """The sequences of one step: a step folder's rank files in rank order (or one rank file), each line checked
    as it is read (:func:`.prime_rl_lines.row`) within the caps (:data:`MAX_STEP_BYTES`, :data:`MAX_STEP_ROWS`,
    :data:`MAX_LINE_BYTES`, :data:`MAX_RANK_FILES`; a line's own: :mod:`.prime_rl_lines`). Each row gets ``file``
    and ``line``; its lists come back as numpy arrays (floats with NaN for null; masks as floats 1/0/NaN).

    Raises:
        RunFileError: a cap, a bad value or a special file, named ``file:line``.
    """
    path = Path(path)
    base = Path(base) if base is not None else (path.parent if path.is_file() else path)
    files = _rank_files(path, base) if path.is_dir() else [path]
    if len(files) > MAX_RANK_FILES:
        raise RunFileError(f"{path.name} has {len(files):,} rank files; a step here has at most {MAX_RANK_FILES}")
    rows: list[dict] = []
    budget = [MAX_STEP_BYTES, MAX_STEP_ROWS]
    for file in files:
        rows += _read_file(file, budget)
    if not rows:
        raise RunFileError(f"{path.name} holds no exported sequences")
    return rows


def _read_file(path: Path, budget: list[int]) -> list[dict]:
    name, rows = path.name, []
    with run_files.open_regular(path, name) as fh:
        size = os.fstat(fh.fileno()).st_size
        budget[0] -= size
        if budget[0] < 0:
            raise RunFileError(
                f"{name}: the step's rank files hold more than {MAX_STEP_BYTES // 2**20} MiB; a prime-rl step here "
                f"has at most that"
            )
        for lineno in itertools.count(1):
            line = fh.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            budget[1] -= 1
            if budget[1] < 0:
                raise RunFileError(
                    f"{name}:{lineno}: the step has more than {MAX_STEP_ROWS:,} lines; a prime-rl step here has at "
                    "most that"
                )
            if len(line) > MAX_LINE_BYTES:
                raise RunFileError(
                    f"{name}:{lineno}: the line is longer than {MAX_LINE_BYTES // 2**20} MiB; at most that here"
                )
            if line.strip():
                rows.append({**row(line, name, lineno), "file": name, "line": lineno})
    return rows


# ----------------------------------------------------------------------------------------------- rows


def _signature(path: Path, base: Path) -> tuple:
    files = _rank_files(path, base) if path.is_dir() else [path]
    out = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        out.append((f.name, st.st_size, st.st_mtime_ns))
    return tuple(out)


@lru_cache(maxsize=2)  # a step's arrays can reach a few hundred MB: keep the last two
def _frame(path: Path, base: Path, step: int, signature: tuple) -> pd.DataFrame:
    return _build_frame(read_step(path, base), step)


def step_frame(path: Path, step: int, base: Optional[Path] = None) -> pd.DataFrame:
    """One step's sequences in the Runs view's columns, read once per version of its files (the curves and each
    view of the step ask again); rows in rank then file order."""
    path = Path(path)
    base = Path(base) if base is not None else (path.parent if path.is_file() else path)
    return _frame(path, base, step, _signature(path, base)).copy()


def _start(mask: np.ndarray) -> int:
    hit = np.flatnonzero(mask > 0)
    return int(hit[0]) if hit.size else len(mask)


def _build_frame(rows: list[dict], step: int) -> pd.DataFrame:
    starts = [_start(r["loss_mask"]) for r in rows]
    prompts = [tuple(r["token_ids"][:s].tolist()) for r, s in zip(rows, starts)]
    ids: dict[tuple, int] = {}
    groups = [ids.setdefault(p, len(ids)) for p in prompts]
    out = pd.DataFrame(
        {
            "step": step,
            "mode": "train",
            "row": range(len(rows)),
            "group": groups,
            "prompt": [f"{len(p)} prompt tokens ({r['env_name'] or 'no env name'})" for p, r in zip(prompts, rows)],
            "messages": "",
            "completion": [_ids_text(r["token_ids"][s:]) for r, s in zip(rows, starts)],
            "advantage": [_loss_mean(r["advantages"], r["loss_mask"]) for r in rows],
            "env_name": [r["env_name"] for r in rows],
            "rank": [r["rank"] for r in rows],
            "file": [r["file"] for r in rows],
            "line": [r["line"] for r in rows],
            "prompt_ids": [list(p) for p in prompts],
            "completion_ids": [r["token_ids"][s:] for r, s in zip(rows, starts)],
        }
    )
    for key in (*FLOAT_LISTS, *BOOL_LISTS):
        out[key] = [r[key][s:] for r, s in zip(rows, starts)]
    return out


def _ids_text(ids: np.ndarray) -> str:
    head = " ".join(str(i) for i in ids[:24].tolist())
    return f"{len(ids)} tokens: ids {head}{' ...' if len(ids) > 24 else ''}"


def _loss_mean(values: np.ndarray, mask: np.ndarray) -> float:
    keep = (mask > 0) & ~np.isnan(values)
    return float(values[keep].mean()) if keep.any() else math.nan


CURVES = ("advantage", "entropy", "mismatch_kl")
"""What the curves show per step: means over the step's loss tokens."""


def _means(run, path: Path) -> tuple[int, dict[str, float]]:
    frame = step_frame(path, _step_of(run, path), run.allowed)
    mask = np.concatenate(frame["loss_mask"].tolist()) > 0
    means = {}
    for name, key in (("advantage", "advantages"), ("entropy", "entropy"), ("mismatch_kl", "mismatch_kl")):
        values = np.concatenate(frame[key].tolist())
        keep = mask & ~np.isnan(values)
        means[name] = float(values[keep].mean()) if keep.any() else math.nan
    return len(frame), means


def _step_of(run, path: Path) -> int:
    return next(s for (_, s), p in run.files.items() if p == path)


def channels(record: dict) -> dict[str, np.ndarray]:
    """Per token of a row's response, each loss channel's value (NaN where the channel does not train the token):
    ``rl`` the advantage times the rl weight (weight 1 on the loss mask when prime-rl wrote none), ``ce`` and
    ``ref_kl`` their weights."""
    mask = np.asarray(record["loss_mask"], dtype=float) > 0
    adv = np.asarray(record["advantages"], dtype=float)
    rl_w = np.asarray(record["rl_weights"], dtype=float)
    rl_w = np.where(np.isnan(rl_w), 1.0, rl_w)
    rl = np.where(mask & (rl_w != 0), adv * rl_w, np.nan)
    out = {"rl": rl}
    for name in ("ce", "ref_kl"):
        w = np.asarray(record[f"{name}_weights"], dtype=float)
        if not np.isnan(w).all():
            out[name] = np.where(w != 0, w, np.nan)
    return out


def rollout(record: dict, policy) -> tuple[list[dict], list[int]]:
    """A row's prompt as chat messages (decoded with ``policy``'s tokenizer, without special tokens) and its
    response ids as exported."""
    from .verl_runs import chat_messages

    text = policy.tokenizer.decode(list(record["prompt_ids"]), skip_special_tokens=True)
    return chat_messages(text), [int(i) for i in record["completion_ids"]]


FORMAT = run_formats.register_format(
    run_formats.RunFormat(
        name="prime-rl",
        title="a prime-rl token export (per-token advantages, entropy, mismatch KL and masks; no text: the tokens "
        "are decoded with the checkpoint, which must be the run's tokenizer; type each reward's information to "
        "replay a sequence)",
        find=find_steps,
        single=_single,
        member=_member,
        reward_names=lambda run: [],
        rows=lambda run, path, step, mode: step_frame(path, step, run.allowed),
        advantage="the mean of prime-rl's per-token advantage over its loss tokens",
        what="a prime-rl export",
        looks="token_exports/step_*/rank_*.jsonl (prime-rl's trainer.enable_token_export)",
        means=_means,
        rollout=rollout,
        curve_names=CURVES,
        curves_title="Mean over loss tokens per step",
        file_name=lambda name: bool(RANK_FILE.match(name)),
    )
)


def logged_streams(record: dict) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """A row's per-token values over its response, as the Runs view shows them beside relevance: (streams: each
    loss channel (:func:`channels`), entropy, mismatch KL, importance ratio; masks: the loss mask and prime-rl's
    trust-region masks, where it wrote them)."""
    named = {
        **{f"{k} channel" + (" advantage" if k == "rl" else " weight"): v for k, v in channels(record).items()},
        "entropy": record["entropy"],
        "mismatch KL": record["mismatch_kl"],
        "importance ratio": record["importance_ratio"],
    }
    streams = {n: np.asarray(v, dtype=float).tolist() for n, v in named.items()}
    masks = {"loss mask": np.asarray(record["loss_mask"], dtype=float).tolist()}
    for key, label in (("is_masked", "masked"), ("is_masked_high", "masked high"), ("is_masked_low", "masked low")):
        values = np.asarray(record[key], dtype=float)
        if not np.isnan(values).all():
            masks[label] = values.tolist()
    return streams, masks
