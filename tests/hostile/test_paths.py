"""Threat: a run folder under MRTPO_RUNS_DIR whose links lead out of it (a linked ``completions/`` folder, a linked
token log, ``run.json -> /etc/passwd``), and names made to leak or crash. The Runs tab reads only regular files
whose resolved path lies under the runs folder; a link out reads as a missing file."""

import os

import gradio as gr
import pandas as pd
import pytest

from mrtpo_viz.integrations import run_view
from mrtpo_viz.ui import runs_tab

from .bounded import bounded


def completions(folder, step=1, prompt="a secret prompt"):
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {"step": step, "prompt": [prompt] * 2, "completion": ["x", "y"], "ok": [1.0, 0.0], "advantage": [0.5, -0.5]}
    ).to_parquet(folder / f"completions_{step:05d}.parquet")


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """(runs folder, a folder outside it with a valid run)."""
    inside, outside = tmp_path / "runs", tmp_path / "outside"
    completions(outside / "completions")
    inside.mkdir()
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(inside))
    return inside, outside


def test_a_linked_completions_folder_reads_as_missing(runs):
    """The threat: the linked folder's files read from wherever it points."""
    inside, outside = runs
    (inside / "r").mkdir()
    os.symlink(outside / "completions", inside / "r" / "completions")
    with bounded(), pytest.raises(gr.Error, match="holds no run files"):
        runs_tab.open_run("r", None)
    (inside / "empty").mkdir()
    with pytest.raises(gr.Error, match="holds no run files"):  # the same answer as a folder with nothing
        runs_tab.open_run("empty", None)


def test_a_linked_token_log_and_completions_file_are_left_out(runs):
    inside, outside = runs
    completions(inside / "r" / "completions", step=1)
    (inside / "r" / "mrtpo").mkdir()
    os.symlink(outside / "completions" / "completions_00001.parquet", inside / "r" / "mrtpo" / "tokens_00002.parquet")
    os.symlink(
        outside / "completions" / "completions_00001.parquet",
        inside / "r" / "completions" / "completions_00003.parquet",
    )
    with bounded():
        state, status, _, steps = runs_tab.open_run("r", None)
    assert "plain TRL run" in status and [v for _, v in steps["choices"]] == ["train:1"]


def test_run_json_linked_to_etc_passwd_is_not_read(runs):
    """The threat: ``run.json -> /etc/passwd`` read, and its parse error shown."""
    inside, _ = runs
    completions(inside / "r" / "completions")
    (inside / "r" / "mrtpo").mkdir()
    os.symlink("/etc/passwd", inside / "r" / "mrtpo" / "run.json")
    with bounded():
        run = run_view.open_run(inside / "r", inside)
        state, status, _, _ = runs_tab.open_run("r", None)
    assert run.info == {} and "rewards `ok`" in status


def test_a_link_that_stays_inside_the_runs_folder_still_opens(runs):
    inside, _ = runs
    completions(inside / "shared")
    (inside / "r").mkdir()
    os.symlink(inside / "shared", inside / "r" / "completions")
    state, status, _, steps = runs_tab.open_run("r", None)
    assert steps["value"] == "train:1"


def test_a_fifo_named_like_a_run_file_is_not_opened(runs):
    """A named pipe would block the reading thread for ever."""
    inside, _ = runs
    (inside / "r" / "completions").mkdir(parents=True)
    os.mkfifo(inside / "r" / "completions" / "completions_00001.parquet")
    with bounded(), pytest.raises(gr.Error, match="holds no run files"):
        runs_tab.open_run("r", None)


def test_a_5000_character_name_names_no_server_folder(runs):
    inside, _ = runs
    with bounded(), pytest.raises(gr.Error) as err:
        runs_tab.open_run("a" * 5000, None)
    text = str(err.value)
    assert str(inside) not in text and len(text) < 300 and "no run folder" in text


def test_a_linked_verl_step_file_reads_as_missing(runs):
    """verl's ``{step}.jsonl`` dumps go through the same check as TRL's files."""
    inside, outside = runs
    row = '{"input": "user\\nhi\\nassistant\\n", "output": "hello", "gts": null, "score": 1.0, "step": 1}\n'
    (outside / "1.jsonl").write_text(row * 2)
    (inside / "v").mkdir()
    os.symlink(outside / "1.jsonl", inside / "v" / "1.jsonl")
    with bounded(), pytest.raises(gr.Error, match="holds no run files"):
        runs_tab.open_run("v", None)
    (inside / "v" / "2.jsonl").write_text(row * 2)  # a real one beside it opens
    state, status, _, steps = runs_tab.open_run("v", None)
    assert [v for _, v in steps["choices"]] == ["train:2"]
