"""Atomic writes: a file (or folder) is written under a temporary name in its destination folder and moved into
place in one step, so a reader or a killed process sees the old version or the new one, never half of one.

:func:`atomic_path` is the pattern for any writer (``with atomic_path(out) as tmp: frame.to_parquet(tmp)``);
:func:`write_text` is the common case; :func:`move_into_place` is the one call of ``os.replace`` in the package
(atomic on POSIX when both paths are on one file system, which a temporary name beside the destination ensures).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def move_into_place(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Rename ``src`` to ``dst`` in one step, replacing a file ``dst`` (or an empty folder)."""
    os.replace(src, dst)


def temporary_name(path: str | os.PathLike) -> Path:
    """A hidden name beside ``path``, unique to this process and call: ``.<name>.<pid>.<random>.tmp``."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (its folder is created) for the caller to write a file or a folder
    to; when the block ends, move it onto ``path``. On an exception, or when the block leaves nothing at the
    temporary path (it removed what it wrote: nothing changed), nothing is moved and the temporary is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    try:
        yield tmp
        if tmp.exists():
            move_into_place(tmp, path)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
