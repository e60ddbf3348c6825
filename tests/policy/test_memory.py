"""The glibc mmap threshold that keeps the replay's peak memory bounded (benchmarks/results/memory.md)."""

import sys

import pytest

from mrtpo_viz.policy import memory as malloc


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
