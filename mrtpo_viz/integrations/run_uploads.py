"""An uploaded run unpacked for the Runs view: a zip of a TRL ``output_dir`` or of a verl rollout dump (run files
only, by name; a running cap on the decompressed bytes), or one parquet or verl ``{step}.jsonl`` file as it is."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Optional

from . import run_files, trl_log, trl_runs, verl_runs
from .run_files import RunFileError


def extract_upload(upload, dest, max_bytes: int, max_files: int = run_files.MAX_UPLOAD_FILES) -> Path:
    """An uploaded zip of a run (or one parquet or verl jsonl file) unpacked into ``dest``; returns what
    :func:`open_run` opens.

    Only run files are taken from a zip, by their names alone (``completions_*.parquet``, ``tokens_*.parquet``,
    ``eval_tokens_*.parquet``, ``run.json``, verl's ``{step}.jsonl``), into ``dest/completions``, ``dest/mrtpo`` and
    ``dest`` itself (verl): a member's folders, absolute paths and ``..`` never reach the disk. ``max_bytes`` caps
    the uncompressed total (a zip bomb stops before anything is written), ``max_files`` the run files taken.
    """
    upload, dest = Path(upload), Path(dest)
    with run_files.open_regular(upload, trl_runs.shown(upload)) as fh:  # a fifo or a device is refused unread
        size = os.fstat(fh.fileno()).st_size
    if size > max_bytes:
        raise ValueError(
            f"{trl_runs.shown(upload)} is {size / 2**20:.1f} MiB; at most {max_bytes / 2**20:.1f} MiB are "
            "accepted here (MRTPO_MAX_UPLOAD_MB)"
        )
    if upload.suffix.lower() == ".parquet" or verl_runs.STEP_FILE.match(upload.name):
        return upload
    if not zipfile.is_zipfile(upload):
        raise ValueError(
            f"{trl_runs.shown(upload)} is neither a .zip of a run's output_dir (or of a verl rollout dump) nor "
            "a .parquet file nor one verl {step}.jsonl file"
        )
    try:
        with zipfile.ZipFile(upload) as zf:
            _unpack(zf, dest, trl_runs.shown(upload), max_bytes, max_files)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, RuntimeError) as e:
        # a corrupt member (bad CRC, truncated data), an unsupported compression or an encrypted member
        raise ValueError(
            f"{trl_runs.shown(upload)} is not a readable zip ({_zip_reason(e)}); zip the run's output_dir again"
        ) from None
    return dest


def _unpack(zf: zipfile.ZipFile, dest: Path, name: str, max_bytes: int, max_files: int) -> None:
    """Run members only, streamed under one running cap of ``10 * max_bytes`` decompressed bytes (the headers'
    sizes are checked first, and the real bytes counted while unpacking, whatever the headers say)."""
    members = [(i, _target(dest, i.filename)) for i in zf.infolist() if not i.is_dir()]
    members = [(i, t) for i, t in members if t is not None]
    if len(members) > max_files:
        raise ValueError(f"{name} holds {len(members):,} run files; at most {max_files:,} here: upload fewer steps")
    if sum(i.file_size for i, _ in members) > 10 * max_bytes:
        raise ValueError(f"{name} unpacks to more than {10 * max_bytes / 2**20:.0f} MiB; upload fewer steps")
    if not members:
        raise ValueError(f"{name} holds no run files (completions_*.parquet, tokens_*.parquet, verl's {{step}}.jsonl)")
    budget = [10 * max_bytes]
    try:
        for info, target in members:
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src:
                run_files.copy_member(src, target, budget, name)
    except RunFileError:
        raise ValueError(
            f"{name} unpacks to more than {10 * max_bytes / 2**20:.0f} MiB (its headers understate "
            "its sizes); upload fewer steps"
        ) from None


def _zip_reason(err: BaseException) -> str:
    text = str(err)
    return text[:120] if text and "/" not in text else type(err).__name__


def _target(dest: Path, member: str) -> Optional[Path]:
    name = member.replace("\\", "/").rsplit("/", 1)[-1]
    if trl_runs.COMPLETIONS_FILE.match(name):
        return dest / "completions" / name
    if trl_runs.TOKENS_FILE.match(name) or name == trl_log.RUN_FILE:
        return dest / trl_log.LOG_DIR / name
    if verl_runs.STEP_FILE.match(name):
        return dest / name
    return None
