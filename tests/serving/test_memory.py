"""The glibc mmap threshold that keeps the replay's peak memory bounded (benchmarks/results/memory.md)."""

import sys
import time

import pytest

from mrtpo_viz.serving import memory as malloc


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_threshold_is_set_on_glibc_and_can_be_turned_off(monkeypatch):
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv("MRTPO_MMAP_THRESHOLD", "0")
    assert malloc.bound_freed_memory() is False  # the operator turned it off
    monkeypatch.setenv("MRTPO_MMAP_THRESHOLD", str(malloc.DEFAULT_THRESHOLD))
    assert malloc.bound_freed_memory() is True
    assert malloc._applied[-1] == malloc.DEFAULT_THRESHOLD


def test_an_explicit_environment_setting_wins(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")  # glibc already read it at start-up: leave it
    assert malloc.bound_freed_memory(65536) is False


def test_the_app_and_cli_loader_applies_it_and_the_library_does_not(tiny_policy_dir, monkeypatch):
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.settings import load_allowed_policy

    calls = []
    monkeypatch.setattr("mrtpo_viz.policy.bound_freed_memory", lambda: calls.append(1) or True)
    load_policy(tiny_policy_dir)
    assert calls == []
    load_allowed_policy(tiny_policy_dir)
    assert calls == [1]


TRIM_PROBE = r"""
import ctypes, sys
from mrtpo_viz.serving.memory import trim_freed_memory

def rss_mib():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
size, n = 64 << 10, 3000  # 64 KiB blocks: under glibc's mmap threshold, so they come from the heap
blocks = [libc.malloc(size) for _ in range(n)]
for b in blocks:
    ctypes.memset(b, 1, size)  # touched: resident
for b in blocks[:-1]:
    libc.free(b)  # all but the last, which pins the heap's top: nothing is trimmed on free
before = rss_mib()
ok = trim_freed_memory()
print(ok, before, rss_mib())
"""


def test_trim_gives_back_free_pages_inside_the_heap():
    """~190 MB freed below a live block stay resident until malloc_trim(0) gives their pages back."""
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("glibc only")
    out = subprocess.run([sys.executable, "-c", TRIM_PROBE], capture_output=True, text=True, timeout=60, check=True)
    ok, before, after = out.stdout.split()
    # 2,999 x 64 KiB = 187 MiB freed; glibc keeps headers and partial pages, so ask for most of it, not all
    assert ok == "True" and float(before) - float(after) > 150, out.stdout


def test_the_periodic_trim_runs_once_per_process_until_stopped(monkeypatch):
    from mrtpo_viz.serving import memory

    if not memory.trim_freed_memory():
        pytest.skip("not glibc")
    calls = []
    real = memory.trim_freed_memory
    monkeypatch.setattr(memory, "trim_freed_memory", lambda: calls.append(1) or real())
    try:
        assert memory.start_periodic_trim(0.01) is True
        first = memory._trimmer[0]
        assert memory.start_periodic_trim(0.01) is True and memory._trimmer == [first]  # one thread per process
        deadline = time.monotonic() + 10
        while len(calls) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(calls) >= 4 and first.daemon  # the start's own call, then the loop's
    finally:
        memory.stop_periodic_trim()
    assert not first.is_alive() and memory._trimmer == []
    assert memory.start_periodic_trim(0) is False  # 0 turns it off


def test_limit_arenas_defers_to_the_environment(monkeypatch):
    """The app's arena cap applies on glibc unless the operator set MALLOC_ARENA_MAX (which glibc reads itself)."""
    import sys

    from mrtpo_viz.serving.memory import limit_arenas

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_arenas() is False
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert limit_arenas(0) is False
    assert limit_arenas() is sys.platform.startswith("linux")
