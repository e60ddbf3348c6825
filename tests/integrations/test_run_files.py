"""Opening run files under a root: which paths are admitted, what a bounded read returns (exact values), and the
caps that refuse a file from its footer or its batches (hostile cases: tests/hostile/test_paths.py and
test_uploads.py)."""

import json
import os

import pandas as pd
import pytest

from mrtpo_viz.integrations import run_files
from mrtpo_viz.integrations.run_files import RunFileError, read_json, read_parquet, safe_file


def test_only_regular_files_under_the_root_are_admitted(tmp_path):
    root, out = tmp_path / "root", tmp_path / "out"
    (root / "sub").mkdir(parents=True)
    out.mkdir()
    (root / "sub" / "a.json").write_text("{}")
    (out / "b.json").write_text("{}")
    os.symlink(out / "b.json", root / "link_out.json")
    os.symlink(root / "sub" / "a.json", root / "link_in.json")
    assert safe_file(root / "sub" / "a.json", root) == (root / "sub" / "a.json").resolve()
    assert safe_file(root / "link_in.json", root) == (root / "sub" / "a.json").resolve()
    assert safe_file(root / "link_out.json", root) is None  # the same answer as a missing file
    assert safe_file(root / "missing.json", root) is None
    assert safe_file(root / "sub", root) is None  # a folder is not a file
    assert safe_file(root / ("x" * 5000), root) is None  # a name too long for the file system
    assert run_files.files_in(root, root, "*.json") == [root / "link_in.json"]


def test_read_json_is_bounded(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"rewards": ["a", "b"], "alpha": 0.5}))
    assert read_json(tmp_path / "run.json", tmp_path) == {"rewards": ["a", "b"], "alpha": 0.5}
    assert read_json(tmp_path / "none.json", tmp_path) == {}
    (tmp_path / "run.json").write_text("[1, 2]")  # JSON, but not an object
    assert read_json(tmp_path / "run.json", tmp_path) == {}
    (tmp_path / "run.json").write_bytes(b" " * (run_files.MAX_JSON_BYTES + 1))
    with pytest.raises(RunFileError, match="larger than 1024 KiB"):
        read_json(tmp_path / "run.json", tmp_path)


def test_read_parquet_returns_the_file_in_batches(tmp_path, monkeypatch):
    monkeypatch.setattr(run_files, "BATCH_ROWS", 3)  # several batches for 10 rows
    frame = pd.DataFrame(
        {
            "row": range(10),
            "completion": [f"c{i}" for i in range(10)],
            "token_advantages": [[0.5 * i, -0.25] for i in range(10)],
        }
    )
    frame.to_parquet(tmp_path / "t.parquet")
    got = read_parquet(tmp_path / "t.parquet", tmp_path)
    assert got["row"].tolist() == list(range(10)) and got["completion"].tolist()[9] == "c9"
    assert [list(v) for v in got["token_advantages"]][4] == [2.0, -0.25]
    assert read_parquet(tmp_path / "t.parquet", tmp_path, ["row"]).columns.tolist() == ["row"]
    with pytest.raises(RunFileError, match="t.parquet has no column 'nope'"):
        read_parquet(tmp_path / "t.parquet", tmp_path, ["nope"])
    with pytest.raises(RunFileError, match="t.parquet unpacks to more than 0 MiB"):
        read_parquet(tmp_path / "t.parquet", tmp_path, max_bytes=100)
    with pytest.raises(FileNotFoundError, match="t.parquet: no such run file"):
        read_parquet(tmp_path / "t.parquet", tmp_path / "elsewhere")
