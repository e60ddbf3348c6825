"""One line of a prime-rl token export, checked as it is read (numpy only): the keys, kinds and lengths of
prime-rl's schema 1 (:mod:`.prime_rl_runs` reads the files and says where the format comes from). Every problem is
a :class:`~.run_files.RunFileError` that starts ``file:line`` and names the field (and the item of a list)."""

from __future__ import annotations

import json
import math
from typing import Optional

import numpy as np

from . import run_files
from .run_files import RunFileError

SCHEMA_VERSION = 1
PRIME_RL_VERSION = "PrimeIntellect-ai/prime-rl 559b447 (token export schema 1)"
INT_LISTS = ("token_ids", "position_ids")
FLOAT_LISTS = (
    "advantages",
    "inference_logprobs",
    "trainer_logprobs",
    "entropy",
    "mismatch_kl",
    "log_importance_ratio",
    "importance_ratio",
    "prob_delta",
    "rl_weights",
    "ce_weights",
    "ref_kl_weights",
)
BOOL_LISTS = ("loss_mask", "is_masked", "is_masked_high", "is_masked_low")
REQUIRED = ("schema_version", "step", "token_ids", "loss_mask", "advantages")
"""Keys a line must have; the other lists may be missing (read as null)."""
MAX_TOKENS = run_files.MAX_LIST_ITEMS
"""Tokens of one sequence, prompt included (the other readers' cap on one completion's tokens)."""
MAX_LINE_KEYS = 64
"""Keys of one line (prime-rl writes 24)."""
_DECODE = json.JSONDecoder().decode


def row(line: bytes, name: str, lineno: int) -> dict:
    """One line as a checked row; every message starts ``file:line`` and names the field."""
    where = f"{name}:{lineno}"
    try:
        row = _DECODE(line.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise RunFileError(f"{where}: not UTF-8 text (byte {e.start + 1} of the line)") from None
    except ValueError as e:  # JSONDecodeError, or an integer of more than 4,300 digits
        why = e.msg if isinstance(e, json.JSONDecodeError) else "a number too long to read"
        raise RunFileError(f"{where}: not JSON ({why}); is this a prime-rl token export?") from None
    except RecursionError:
        raise RunFileError(f"{where}: nested too deeply to be a prime-rl token export line") from None
    if type(row) is not dict or any(k not in row for k in REQUIRED):
        missing = next((k for k in REQUIRED if type(row) is not dict or k not in row), "")
        raise RunFileError(
            f"{where}: a prime-rl token export line has {', '.join(REQUIRED)} (no {missing!r}; "
            "trainer.enable_token_export files)"
        )
    if len(row) > MAX_LINE_KEYS:
        raise RunFileError(f"{where}: {len(row):,} keys; a prime-rl export line here has at most {MAX_LINE_KEYS}")
    if row["schema_version"] != SCHEMA_VERSION or type(row["schema_version"]) is not int:
        raise RunFileError(
            f"{where}: schema_version {str(row['schema_version'])[:20]}; this reader knows prime-rl's version "
            f"{SCHEMA_VERSION}"
        )
    out = {
        "step": _whole(row["step"], where, "step", 10**9),
        "rank": _whole(row.get("rank", 0), where, "rank", 10**6),
        "env_name": _env(row.get("env_name"), where),
    }
    ids = row["token_ids"]
    if type(ids) is not list or not ids:
        raise RunFileError(f"{where}: 'token_ids' must be a non-empty list of token ids, got {_kind(ids)}")
    if len(ids) > MAX_TOKENS:
        raise RunFileError(f"{where}: {len(ids):,} tokens; a sequence here has at most {MAX_TOKENS:,}")
    for key in INT_LISTS:
        if key in row and row[key] is not None:
            out[key] = _ints(row[key], len(ids), where, key)
    for key in FLOAT_LISTS:
        out[key] = _floats(row.get(key), len(ids), where, key)
    for key in BOOL_LISTS:
        out[key] = _bools(row.get(key), len(ids), where, key)
    if np.isnan(out["loss_mask"]).any():
        raise RunFileError(f"{where}: 'loss_mask' must hold true or false for every token")
    return out


def _kind(value) -> str:
    names = {str: "text", dict: "an object", list: "a list", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number")


def _whole(value, where: str, key: str, below: int) -> int:
    if type(value) is not int or not 0 <= value < below:
        raise RunFileError(f"{where}: {key!r} must be a whole number from 0 to {below - 1:,}, got {_kind(value)}")
    return value


def _env(value, where: str) -> Optional[str]:
    if value is not None and (type(value) is not str or len(value) > 200):
        raise RunFileError(f"{where}: 'env_name' must be text of at most 200 characters (or null)")
    return value


def _aligned(values, n: int, where: str, key: str) -> list:
    if type(values) is not list:
        raise RunFileError(f"{where}: {key!r} must be a list with one value per token, got {_kind(values)}")
    if len(values) != n:
        raise RunFileError(f"{where}: {key!r} has {len(values):,} values; 'token_ids' has {n:,} (one per token)")
    return values


def _ints(values, n: int, where: str, key: str) -> np.ndarray:
    values = _aligned(values, n, where, key)
    bad = next((i for i, v in enumerate(values) if type(v) is not int or not 0 <= v < 2**31), None)
    if bad is not None:
        raise RunFileError(
            f"{where}: {key!r} item {bad + 1} must be a whole number from 0 to 2**31 - 1, got {_kind(values[bad])}"
        )
    return np.asarray(values, dtype=np.int64)


def _floats(values, n: int, where: str, key: str) -> np.ndarray:
    """A list of numbers or nulls (null, as prime-rl writes a non-finite float, is NaN); null itself: all NaN."""
    if values is None:
        return np.full(n, np.nan)
    values = _aligned(values, n, where, key)
    bad = next((i for i, v in enumerate(values) if not (v is None or type(v) in (int, float))), None)
    if bad is not None:
        raise RunFileError(f"{where}: {key!r} item {bad + 1} must be a number (or null), got {_kind(values[bad])}")
    try:
        arr = np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    except OverflowError:
        arr = np.array([math.nan if v is None else float("inf") if abs(v) > 1e308 else v for v in values])
    if np.isinf(arr).any():
        raise RunFileError(
            f"{where}: {key!r} item {int(np.argmax(np.isinf(arr))) + 1} must be a finite number; it is beyond +-1.8e308"
        )
    return arr


def _bools(values, n: int, where: str, key: str) -> np.ndarray:
    """A list of true/false or nulls as floats 1/0 (NaN for null); null itself: all NaN."""
    if values is None:
        return np.full(n, np.nan)
    values = _aligned(values, n, where, key)
    bad = next((i for i, v in enumerate(values) if not (v is None or type(v) is bool)), None)
    if bad is not None:
        raise RunFileError(f"{where}: {key!r} item {bad + 1} must be true or false (or null), got {_kind(values[bad])}")
    return np.array([math.nan if v is None else float(v) for v in values])
