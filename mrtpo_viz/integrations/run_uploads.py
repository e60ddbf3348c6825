"""An uploaded run unpacked for the Runs view: a zip of a run of any format of :mod:`.run_formats` (a TRL
``output_dir``, a verl rollout dump, a prime-rl ``token_exports`` folder: run files only, placed by the format that
claims them; a running cap on the decompressed bytes), or one run file (a parquet file, a verl ``{step}.jsonl``, a
prime-rl ``rank_*.jsonl``) as it is."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Optional

from . import run_files, run_formats, run_view
from .run_files import RunFileError


def extract_upload(upload, dest, max_bytes: int, max_files: int = run_files.MAX_UPLOAD_FILES) -> Path:
    """An uploaded zip of a run (or one parquet or verl jsonl file) unpacked into ``dest``; returns what
    :func:`open_run` opens.

    Only run files are taken from a zip, by their names alone: each registered format places its own
    (:func:`.run_view.upload_target`: ``completions/``, ``mrtpo/``, verl's ``{step}.jsonl`` at the top,
    ``token_exports/step_<S>/rank_<R>.jsonl``); a member's other folders, absolute paths and ``..`` never reach the
    disk. ``max_bytes`` caps the uncompressed total (a zip bomb stops before anything is written), ``max_files``
    the run files taken.
    """
    upload, dest = Path(upload), Path(dest)
    with run_files.open_regular(upload, run_formats.shown(upload)) as fh:  # a fifo or a device is refused unread
        size = os.fstat(fh.fileno()).st_size
    if size > max_bytes:
        raise ValueError(
            f"{run_formats.shown(upload)} is {size / 2**20:.1f} MiB; at most {max_bytes / 2**20:.1f} MiB are "
            "accepted here (MRTPO_MAX_UPLOAD_MB)"
        )
    if run_view.is_step_file_name(upload.name):
        return upload
    if not zipfile.is_zipfile(upload):
        raise ValueError(
            f"{run_formats.shown(upload)} is neither a .zip of a run's output_dir (or of a verl rollout dump or a "
            "prime-rl token_exports folder) nor a .parquet file nor one verl {step}.jsonl or prime-rl rank_*.jsonl file"
        )
    try:
        with zipfile.ZipFile(upload) as zf:
            _unpack(zf, dest, run_formats.shown(upload), max_bytes, max_files)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, RuntimeError) as e:
        # a corrupt member (bad CRC, truncated data), an unsupported compression or an encrypted member
        raise ValueError(
            f"{run_formats.shown(upload)} is not a readable zip ({_zip_reason(e)}); zip the run's output_dir again"
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
        raise ValueError(
            f"{name} holds no run files (completions_*.parquet, tokens_*.parquet, verl's {{step}}.jsonl, prime-rl's "
            "step_*/rank_*.jsonl)"
        )
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
    rel = run_view.upload_target(member)
    return None if rel is None else dest / rel
