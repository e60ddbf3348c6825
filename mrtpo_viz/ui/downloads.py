"""Files the app hands out for download: one folder per download under one root per app process, old ones
removed (here, and in Gradio's cache through ``gr.Blocks(delete_cache)``)."""

from __future__ import annotations

import os
from pathlib import Path

DOWNLOAD_TTL_S = 3600
"""Download files older than this are deleted (here, and in Gradio's cache through ``gr.Blocks(delete_cache)``)."""


def download_folder(prefix: str, root: Path | None = None, ttl_s: float = DOWNLOAD_TTL_S) -> Path:
    """A new folder for one download, under one root per app process; folders older than ``ttl_s`` go first.

    Gradio copies each returned file into its own cache (cleaned by ``delete_cache``), so the originals here are
    only needed until the response is sent: without this they would pile up in the temporary folder.
    """
    import shutil
    import tempfile
    import time

    if root is None:
        remove_stale_download_roots(Path(tempfile.gettempdir()))
    root = Path(root or Path(tempfile.gettempdir()) / f"{DOWNLOAD_ROOT_PREFIX}{os.getpid()}")
    root.mkdir(parents=True, exist_ok=True)
    cutoff = time.time() - ttl_s
    for old in root.iterdir():
        try:
            if old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
        except FileNotFoundError:  # another request removed it first
            pass
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))


DOWNLOAD_ROOT_PREFIX = "mrtpo-viz-downloads-"
_swept: list[int] = []


def remove_stale_download_roots(tmp: Path) -> list[Path]:
    """Remove the download roots of app processes that no longer run (once per process); returns them.

    Each process writes under ``mrtpo-viz-downloads-<pid>`` and cleans only its own, so the roots of earlier
    (stopped, killed) processes stayed in the temporary folder for ever."""
    import shutil

    import psutil

    if os.getpid() in _swept:
        return []
    _swept.append(os.getpid())
    gone = []
    for old in tmp.glob(f"{DOWNLOAD_ROOT_PREFIX}*"):
        pid = old.name[len(DOWNLOAD_ROOT_PREFIX) :]
        if old.is_dir() and pid.isdigit() and int(pid) != os.getpid() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
            gone.append(old)
    return gone
