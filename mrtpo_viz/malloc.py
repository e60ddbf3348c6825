"""Give large freed blocks back to the operating system (glibc only).

The replay's metric works through ~30 MB float32 temporaries per chunk of positions. glibc's default keeps such
freed blocks in its heap (its mmap threshold grows dynamically up to 32 MB), so the process's peak memory climbed to
9.2 GB above the weights for a 1,024-token replay on a 0.5B-shaped model, although the live tensors stayed near
1.2 GB. Serving blocks above 64 KiB by mmap returns them on free: 1.4 GB (benchmarks/results/memory.md).
This is what ``MALLOC_MMAP_THRESHOLD_=65536`` does at process start; ``mallopt`` does it from Python.
Set ``MRTPO_MMAP_THRESHOLD=0`` to leave the allocator alone.
"""
from __future__ import annotations

import ctypes
import os
import sys

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
DEFAULT_THRESHOLD = 65536
_applied: list[int] = []


def bound_freed_memory(threshold: int | None = None) -> bool:
    """Ask glibc to mmap blocks above ``threshold`` bytes (once per process); False where it does not apply."""
    if threshold is None:
        threshold = int(os.environ.get("MRTPO_MMAP_THRESHOLD", DEFAULT_THRESHOLD))
    if threshold <= 0 or not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    if _applied and _applied[-1] == threshold:
        return True
    try:
        ok = bool(ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, int(threshold)))
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return False
    if ok:
        _applied.append(threshold)
    return ok
