"""The Runs tab's handlers on the example run (MRTPO) and on its TRL files alone (a plain run): what each returns,
and a readable message for every bad input (no traceback reaches the page)."""

import json
import re
import shutil
import zipfile

import gradio as gr
import pytest

from mrtpo_viz.ui import runs_tab

NAMES = ["tool_call.format", "tool_call.correctness"]


@pytest.fixture
def runs_dir(trl_example_run, monkeypatch):
    runs, _ = trl_example_run
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(runs))
    return runs


def test_opening_the_example_run_by_its_folder(runs_dir):
    state, status, fig, steps = runs_tab.open_run("example", None)
    assert state["names"] == NAMES and "an MRTPO run" in status
    assert steps["choices"] == [("step 1", "train:1"), ("step 2", "train:2")] and steps["value"] == "train:2"
    assert len(fig.data) == 2 and list(fig.data[0].x) == [1, 2]  # one curve per reward, over the two steps
    groups, picker = runs_tab.run_step(state, "train:1")
    assert len(groups) == 2 and picker["choices"] == ["all", "0", "1"]
    table = runs_tab.run_completions(state, "train:1", "1", "", "advantage", True)
    assert table["group"].tolist() == [1] * 4 and table["advantage"].is_monotonic_decreasing
    view, bars, note, infos = runs_tab.run_completion(state, "train:1", int(table["row"][0]))
    payload = json.loads(view)  # the token view's payload: one row of scores per reward
    assert payload["verifiers"] == NAMES and len(payload["scores"]) == 2
    assert len(payload["tokens"]) > 5 and all(len(row) == len(payload["tokens"]) for row in payload["scores"])
    assert max(max(row) for row in payload["scores"]) > 0.01
    assert "from the run's per-token log" in note and len(bars.data) >= 3
    # "Replay with the checkpoint" starts from each reward's information, not from an empty box
    lines = infos.splitlines()
    assert [ln.split(":")[0] for ln in lines] == NAMES and all(len(ln.split(": ", 1)[1]) > 20 for ln in lines)


def test_a_plain_run_uploaded_as_a_zip_is_replayed(trl_example_run, tmp_path, monkeypatch):
    monkeypatch.delenv("MRTPO_RUNS_DIR", raising=False)
    up = tmp_path / "plain.zip"
    with zipfile.ZipFile(up, "w") as zf:
        for p in (trl_example_run[1] / "completions").glob("*.parquet"):
            zf.write(p, f"run/completions/{p.name}")
    state, status, _, steps = runs_tab.open_run("", str(up))
    assert "a plain TRL run" in status and steps["value"] == "train:2"
    view, _, note, infos = runs_tab.run_completion(state, "train:2", 0)
    assert view is None and "Information found for this bundled prompt" in note
    assert infos.splitlines()[1].startswith("tool_call.correctness: The correct call is")
    view, bars, note = runs_tab.replay_completion("tiny-mrtpo", state, "train:2", 0, infos, 1.0, 1.0)
    assert len(json.loads(view)["tokens"]) > 10 and "replayed with `tiny-mrtpo`" in note
    # nothing typed: the replay starts from each reward's default information (not "give at least one ...")
    view, _, note = runs_tab.replay_completion("tiny-mrtpo", state, "train:2", 0, "", 1.0, 1.0)
    assert len(json.loads(view)["tokens"]) > 10 and "replayed with `tiny-mrtpo`" in note
    with pytest.raises(gr.Error, match="not understood: 'nonsense'"):
        runs_tab.replay_completion("tiny-mrtpo", state, "train:2", 0, "nonsense: x", 1.0, 1.0)


@pytest.mark.parametrize(
    "typed, upload, says",
    [
        ("", None, "Type a run folder"),
        ("/etc", None, "is not under the runs folder"),
        ("../..", None, "is not under the runs folder"),
        ("nothing-here", None, "There is no run folder 'nothing-here'"),
    ],
)
def test_bad_run_paths_read_as_messages(runs_dir, typed, upload, says):
    with pytest.raises(gr.Error, match=re.escape(says)):
        runs_tab.open_run(typed, upload)


def test_bad_uploads_and_missing_state_read_as_messages(runs_dir, tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(gr.Error, match="neither a .zip"):
        runs_tab.open_run("", str(tmp_path / "notes.txt"))
    (runs_dir / "empty").mkdir(exist_ok=True)
    with pytest.raises(gr.Error, match="holds no run files"):
        runs_tab.open_run("empty", None)
    # no run open: the listing chained to a failed open changes nothing (the open's status line says why)
    assert runs_tab.run_step(None, "train:1") == (gr.update(), gr.update())
    assert runs_tab.run_completions(None, "train:1", "all", "", "row", False) == gr.update()
    state = runs_tab.open_run("example", None)[0]
    with pytest.raises(gr.Error, match="Pick a step"):
        runs_tab.run_completions(state, None, "all", "", "row", False)
    with pytest.raises(gr.Error, match="no completion 99"):
        runs_tab.run_completion(state, "train:1", 99)
    with pytest.raises(gr.Error, match="no per-token log|a plain TRL run|not understood"):
        runs_tab.replay_completion("tiny-mrtpo", state, "train:1", 0, "x", 1.0, 1.0)
    monkeypatch.delenv("MRTPO_RUNS_DIR")
    with pytest.raises(gr.Error, match="Typed run folders are off here"):
        runs_tab.open_run("example", None)
    shutil.rmtree(runs_dir / "empty")


def test_a_click_in_the_table_picks_that_completions_row():
    import pandas as pd

    table = pd.DataFrame({"row": [6, 2, 4], "group": [1, 0, 1], "completion": ["x", "y", "z"]})
    clicked = gr.SelectData(None, {"index": [1, 2], "value": "y", "row_value": [2, 0, "y"]})
    assert runs_tab.pick_row(table, clicked) == 2
    assert runs_tab.pick_row(table, gr.SelectData(None, {"index": [2, 0], "value": 4})) == 4  # no row values
    assert runs_tab.pick_row(None, gr.SelectData(None, {"index": [9, 0], "value": 0})) == gr.update()
