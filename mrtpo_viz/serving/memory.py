"""Give large freed blocks back to the operating system, and keep the smaller ones for reuse (glibc only; opt-in).

The app and the CLI call :func:`bound_freed_memory` when they load a policy; the library never does (it is a
process-wide allocator setting). A Python user who wants the same memory bound calls it once:
``from mrtpo_viz.policy import bound_freed_memory; bound_freed_memory()``.

The replay's metric works through ~30 MB float32 temporaries per chunk of positions. glibc's default keeps such
freed blocks in its heap (its mmap threshold grows dynamically up to 32 MB), so the process's peak memory climbed to
9.2 GB above the weights for a 1,024-token replay on a 0.5B-shaped model, although the live tensors stayed near
1.2 GB (benchmarks/results/memory.md). Serving blocks above a fixed threshold by mmap returns them on free.

The threshold is a trade: every mmapped block is fresh pages, zeroed by the kernel on first touch. A threshold of
64 KiB (the first fix) made the bundled policy's training steps ~25% slower, because the tiny model's 0.1-5 MB
temporaries (logits of a batch, the metric's (G, K, T, V) terms) were mapped and unmapped on every op; the default
glibc behaviour is as slow for another reason, trimming the heap top after each burst of frees. So blocks above
8 MiB are mmapped (the metric's chunks, a big model's activations and logits) and the heap keeps up to 64 MiB of
free memory at its top for the smaller ones.
Set ``MRTPO_MMAP_THRESHOLD`` (bytes; ``0`` leaves the allocator alone) to change it; an explicit glibc setting in
the environment (``MALLOC_MMAP_THRESHOLD_``) wins.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8  # glibc's mallopt parameter numbers
DEFAULT_THRESHOLD = 8 << 20
TRIM_THRESHOLD = 64 << 20
"""Free memory the heap keeps at its top instead of trimming (at least twice the mmap threshold)."""
_applied: list[int] = []


def bound_freed_memory(threshold: int | None = None) -> bool:
    """Ask glibc to mmap blocks above ``threshold`` bytes and to keep ``max(64 MiB, 2 x threshold)`` of free heap
    (once per process); False where it does not apply."""
    if threshold is None:
        threshold = int(os.environ.get("MRTPO_MMAP_THRESHOLD", DEFAULT_THRESHOLD))
    if threshold <= 0 or not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    if _applied and _applied[-1] == threshold:
        return True
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = bool(libc.mallopt(M_MMAP_THRESHOLD, int(threshold)))
        ok = ok and bool(libc.mallopt(M_TRIM_THRESHOLD, max(TRIM_THRESHOLD, 2 * int(threshold))))
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return False
    if ok:
        _applied.append(threshold)
    return ok


TRIM_EVERY_S = 10.0
"""How often the app gives the free pages of every malloc arena back (:func:`start_periodic_trim`)."""
_trimmer: list = []
_stop = threading.Event()


def trim_freed_memory() -> bool:
    """Give the free pages of every malloc arena back to the operating system now (glibc's ``malloc_trim(0)``, which
    also releases whole free pages inside a heap, not only at its top); False where it does not apply.

    The mmap threshold above returns large blocks on free, but a burst of mid-sized allocations (a parsed 200,000-row
    table, many requests' temporaries across the server's threads) leaves free pages inside each thread's heap that
    glibc keeps while anything above them is alive: the server stayed ~96% above its warm size after a hostile load
    had stopped (benchmarks/results/load_hostile.md)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return False


SERVER_ARENAS = 2
"""malloc arenas of the app's process (:func:`limit_arenas`)."""


def limit_arenas(arenas: int = SERVER_ARENAS) -> bool:
    """At most ``arenas`` malloc arenas for the threads created from now on (glibc's ``M_ARENA_MAX``; the app calls it
    before it serves). glibc gives threads up to 8 arenas per core; a server whose ~40 worker threads each touched
    their own arena kept the free pages of each, fragmented, after a load. ``MALLOC_ARENA_MAX`` in the environment
    wins. False where it does not apply."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ or arenas < 1:
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, int(arenas)))
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return False


def start_periodic_trim(every_s: float = TRIM_EVERY_S) -> bool:
    """A daemon thread that calls :func:`trim_freed_memory` every ``every_s`` seconds (once per process; the app
    starts it, the library never does). ``malloc_trim`` runs without the GIL; it walks each arena under that arena's
    lock, a few milliseconds for a heap of a few hundred MB. False where trimming does not apply."""
    if _trimmer and _trimmer[0].is_alive():
        return True
    if every_s <= 0 or not trim_freed_memory():
        return False
    _stop.clear()

    def loop() -> None:
        while not _stop.wait(every_s):
            trim_freed_memory()

    _trimmer[:] = [threading.Thread(target=loop, name="mrtpo-malloc-trim", daemon=True)]
    _trimmer[0].start()
    return True


def stop_periodic_trim(timeout_s: float = 5.0) -> None:
    """Stop the thread of :func:`start_periodic_trim` (tests; a server keeps it for its lifetime)."""
    _stop.set()
    for thread in _trimmer:
        thread.join(timeout_s)
    _trimmer.clear()
