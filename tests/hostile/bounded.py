"""A hostile case's budget: it must end within a few seconds and grow the process by a bounded amount.

:func:`bounded` samples this process's resident memory every 5 ms while the body runs (the test process stands in
for the app's server: the handlers and library calls run in it) and fails the test when the body took longer than
``seconds`` or the peak rose more than ``extra_mb`` above the size at entry (the warm size).
"""

import threading
import time
from contextlib import contextmanager

import psutil

SECONDS = 3.0
"""Wall-clock seconds a hostile case may take (the issue's bound)."""
EXTRA_MB = 1536
"""Megabytes above the warm size a hostile case may reach (the issue's 1.5 GB)."""


@contextmanager
def bounded(seconds: float = SECONDS, extra_mb: float = EXTRA_MB):
    proc = psutil.Process()
    warm = proc.memory_info().rss
    peak, stop = [warm], threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            stop.wait(0.005)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    start = time.monotonic()
    try:
        yield
    finally:
        took = time.monotonic() - start
        stop.set()
        watcher.join()
    grew = (peak[0] - warm) / 2**20
    assert took <= seconds, f"the case took {took:.1f} s; at most {seconds:g} s"
    assert grew <= extra_mb, f"the case grew the process by {grew:.0f} MB; at most {extra_mb:g} MB"
