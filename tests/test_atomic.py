"""mrtpo_viz.atomic: a write is all or nothing, and ``os.replace`` is called in that one module only."""

import os

import pytest

from mrtpo_viz import atomic
from tests.apphelpers import REPO


def test_write_text_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "sub" / "out.txt"
    assert atomic.write_text(path, "one") == path and path.read_text() == "one"  # the folder is created
    atomic.write_text(path, "two")
    assert path.read_text() == "two"
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.txt"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    path = tmp_path / "out.txt"
    atomic.write_text(path, "old")
    with pytest.raises(RuntimeError, match="half way"), atomic.atomic_path(path) as tmp:
        tmp.write_text("new, half writ")
        raise RuntimeError("half way")
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_block_that_removes_its_temporary_moves_nothing(tmp_path):
    path = tmp_path / "out.txt"
    atomic.write_text(path, "same")
    mtime = path.stat().st_mtime_ns
    with atomic.atomic_path(path) as tmp:
        tmp.write_text("same")
        tmp.unlink()
    assert path.stat().st_mtime_ns == mtime and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_folder_is_moved_into_place_whole(tmp_path):
    target = tmp_path / "step-000001"
    with atomic.atomic_path(target) as tmp:
        tmp.mkdir()
        (tmp / "a.bin").write_bytes(b"\x00\x01")
        assert not target.exists()  # nothing visible until the block ends
    assert (target / "a.bin").read_bytes() == b"\x00\x01"
    assert atomic.temporary_name(target).parent == tmp_path and atomic.temporary_name(target).name.startswith(
        f".step-000001.{os.getpid()}."
    )


def test_os_replace_is_called_in_the_atomic_module_only():
    callers = sorted(
        str(p.relative_to(REPO))
        for d in ("mrtpo_viz", "benchmarks", "studies", "scripts", "tests")
        for p in (REPO / d).rglob("*.py")
        if "os.replace(" in p.read_text(encoding="utf-8") and p.name != "test_atomic.py"
    )
    assert callers == ["mrtpo_viz/atomic.py"]
