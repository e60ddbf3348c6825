"""Following a run that is still being written: the reward curves of a run, refreshed by reading only what is new.

A trainer adds to a run in two ways. TRL and ``MRTPOTrainer`` add one parquet file per step, moved into place
whole (:mod:`.trl_log`); prime-rl adds a folder per step. verl writes a step's ``{step}.jsonl`` line by line
(``_dump_generations``), so a dump being written has a last file that grows and may end in half a line.

:func:`refresh` keeps, per step, what the curves need (its rows, each reward's sum and count) beside the mark of
the file it came from (size and modification time; for a verl file also the byte offset of the first line not read
yet, its inode, its first bytes and the bytes before that offset). A step whose mark is unchanged is not read again;
a new or changed parquet file or step folder is read once; a grown verl file is read from its offset to its last
complete line, so a growing dump costs only its new lines (a file that shrank, was replaced, or whose kept bytes
changed was rewritten, and is read again from its start). The caps of a whole read hold for the pieces too: a verl
file's bytes, lines and line length (:mod:`.verl_runs`), and :data:`~.run_files.MAX_CURVE_ROWS` rows over the
run's steps, in step order.

The cache is plain data (a dict of lists and numbers), so a Gradio ``State`` can hold it per session.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd

from . import run_files, run_view, trl_log, verl_runs
from .run_files import RunFileError

HEAD_BYTES = 64
"""Bytes at the start of a verl file kept to tell an appended file from a rewritten one."""
TAIL_BYTES = 256
"""Bytes before where the last read stopped, kept for the same reason (a rewritten dump's first line often starts
with the same prompt: its responses differ)."""
MAX_FOLDER_ENTRIES = 4096
"""Entries of one step folder (prime-rl: one file per rank) looked at for its mark."""


def mark(path: Path) -> list:
    """What tells that a step's file (or folder) changed: its size and modification time (a folder: those of its
    entries, at most :data:`MAX_FOLDER_ENTRIES`)."""
    st = path.stat()
    if not path.is_dir():
        return [st.st_size, st.st_mtime_ns]
    out = [st.st_mtime_ns]
    with os.scandir(path) as entries:
        for n, e in enumerate(sorted(entries, key=lambda e: e.name)):
            if n >= MAX_FOLDER_ENTRIES:
                break
            es = e.stat(follow_symlinks=False)
            out += [e.name, es.st_size, es.st_mtime_ns]
    return out


def refresh(run, names: list[str], cache: dict | None) -> tuple[pd.DataFrame, dict, list[tuple[str, int]]]:
    """The run's reward curves (the frame :func:`run_view.reward_curves` gives) from ``cache`` and what is new.

    Args:
        run: the run as opened now (its files listed again: new steps are in it).
        names: the run's rewards as it was opened: the curves' ``reward/<name>`` columns, unless its format draws
            series of its own (``RunFormat.curve_names``).
        cache: what the last call returned (None: nothing read yet).

    Returns:
        (curves, the new cache, the (mode, step)s read in this call). ``curves.attrs["note"]`` says which steps are
        left off when the run holds more than :data:`~.run_files.MAX_CURVE_ROWS` rows.

    Raises:
        RunFileError: a file over a cap or with a bad line (named ``file:line``).
    """
    names = list(run.format.curve_names) or names  # a format's own series where it logs no rewards
    old = (cache or {}).get("steps", {})
    steps, rows, read, changed = {}, [], 0, []
    files = {k: run.files[k] for k in run.steps()}
    for (mode, step), path in files.items():
        if read >= run_files.MAX_CURVE_ROWS:
            break
        key, now = f"{mode}:{step}", mark(path)
        entry = old.get(key)
        if entry is None or entry["mark"] != now:
            entry = _read_step(run, (mode, step), path, names, entry, now)
            changed.append((mode, step))
        steps[key] = entry
        read += entry["rows"]
        if entry["rows"]:  # a verl file created but not written yet has no point
            rows.append({"variant": mode, "seed": 0, "step": step - 1, **entry["means"]})
    out = pd.DataFrame(rows, columns=["variant", "seed", "step", *map(trl_log.reward_column, names)])
    if len(rows) < len(files) and read >= run_files.MAX_CURVE_ROWS:
        out.attrs["note"] = (
            f"The reward curves show the first {len(rows)} of {len(files)} step files ({read:,} rows; they read at "
            f"most {run_files.MAX_CURVE_ROWS:,}); every step still opens when picked."
        )
    return out, {"steps": steps}, changed


def _read_step(run, key: tuple[str, int], path: Path, names: list[str], entry: dict | None, now: list) -> dict:
    """A step's entry: a verl file from where the last read stopped; any other step file (or folder) whole, with
    the mark taken before reading it (a change while it is read shows at the next call)."""
    if run.kind == "verl":
        return _tail_verl(path, names, entry)
    count, means = run_view.step_means(run, *key, names)
    return {"mark": now, "rows": count, "means": {trl_log.reward_column(n): means[n] for n in names}}


# ----------------------------------------------------------------------------------------------- verl, line by line


def _tail_verl(path: Path, names: list[str], entry: dict | None) -> dict:
    """A verl step file's entry, from ``entry`` and the complete lines written since (see the module)."""
    name = path.name
    with run_files.open_regular(path, name) as fh:
        st = os.fstat(fh.fileno())
        if st.st_size > verl_runs.MAX_STEP_BYTES:
            raise RunFileError(
                f"{name} is {st.st_size / 2**20:.0f} MiB; a verl step file here has at most "
                f"{verl_runs.MAX_STEP_BYTES / 2**20:.0f} MiB"
            )
        if entry is None or not _appended(fh, st, entry):
            entry = {"offset": 0, "head": "", "tail": "", "lines": 0, "rows": 0, "sums": {n: [0.0, 0] for n in names}}
        fh.seek(entry["offset"])
        new = fh.read(st.st_size - entry["offset"])
    end = new.rfind(b"\n") + 1
    lines = new[:end].split(b"\n")[:-1]
    rest = new[end:]
    if rest and _complete(rest):  # a last line without its newline: the writer finished it
        lines.append(rest)
        end = len(new)
    elif len(rest) > verl_runs.MAX_LINE_BYTES:
        raise RunFileError(
            f"{name}:{entry['lines'] + len(lines) + 1}: the line is longer than "
            f"{verl_runs.MAX_LINE_BYTES // 2**20} MiB; at most that here"
        )
    sums = {n: list(v) for n, v in entry["sums"].items()}
    count, lineno = entry["rows"], entry["lines"]
    for line in lines:
        lineno += 1
        if lineno > verl_runs.MAX_STEP_ROWS:
            raise RunFileError(
                f"{name} has more than {verl_runs.MAX_STEP_ROWS:,} lines; a verl step file here has at most "
                f"{verl_runs.MAX_STEP_ROWS:,}"
            )
        if len(line) > verl_runs.MAX_LINE_BYTES:
            raise RunFileError(
                f"{name}:{lineno}: the line is longer than {verl_runs.MAX_LINE_BYTES // 2**20} MiB; at most that here"
            )
        if line.strip():
            _add(verl_runs._row(line, name, lineno), sums, name, lineno)
            count += 1
    means = {trl_log.reward_column(n): (s / k if k else math.nan) for n, (s, k) in sums.items()}
    offset = entry["offset"] + end
    head = (bytes.fromhex(entry["head"]) + new[:end])[:HEAD_BYTES].hex()
    tail = (bytes.fromhex(entry["tail"]) + new[:end])[-TAIL_BYTES:].hex()
    return {
        "mark": [st.st_size, st.st_mtime_ns] if end == len(new) else [-1, -1],  # half a line: look again
        "ino": st.st_ino,
        "offset": offset,
        "head": head,
        "tail": tail,
        "lines": lineno,
        "rows": count,
        "sums": sums,
        "means": means,
    }


def _appended(fh, st, entry: dict) -> bool:
    """Whether the file holds what was read of it, unchanged, at the same place: the same inode, no shorter, the
    same first bytes and the same bytes before where the last read stopped."""
    if st.st_ino != entry["ino"] or st.st_size < entry["offset"]:
        return False
    head, tail = bytes.fromhex(entry["head"]), bytes.fromhex(entry["tail"])
    if fh.read(len(head)) != head:
        return False
    fh.seek(entry["offset"] - len(tail))
    return fh.read(len(tail)) == tail


def _complete(rest: bytes) -> bool:
    try:
        verl_runs._DECODE(rest.decode("utf-8"))
        return True
    except (ValueError, RecursionError):  # half a line (or not JSON: the whole read names it when opened)
        return False


def _add(row: dict, sums: dict, name: str, lineno: int) -> None:
    """Add one checked line's reward values to the running sums (a missing value, null, counts for none)."""
    for n, acc in sums.items():
        value = row.get(n)
        if not isinstance(value, (int, float)):
            raise RunFileError(
                f"{name}:{lineno}: {n!r} must be a number (or null) on every line: the run's rewards are the keys "
                "that are numbers on every line of its first step file"
            )
        if not math.isnan(value):
            acc[0] += float(value)
            acc[1] += 1
