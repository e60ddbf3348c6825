"""Threat: verl dumps and TRL files that are cheap to send and expensive to read (issue 42, item 6): 140,000 rows
in 5 MB (4.9 s), 100,000 groups (4.0 s), a zip of 10 steps with 1.3 million rows (15.1 s), 200 reward keys x 2,500
rows (6.9 s), 10,000 reward keys x 20 rows (> 30 s), a TRL parquet with 507 reward columns (20.5 s), 2,000 step files
in one upload (11.9 s). Each is refused (or, for the reward curves, cut at a stated cap) within the case budget, with
a message naming the file and the cap; and each cap has a twin test: a legitimate file just under it still opens."""

import json
import zipfile

import gradio as gr
import pandas as pd
import pytest

from mrtpo_viz.integrations import run_files, verl_runs
from mrtpo_viz.ui import runs_tab

from .bounded import bounded


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("MRTPO_MAX_UPLOAD_MB", "5")
    return tmp_path


def verl_lines(rows: int, keys: int = 0, distinct: bool = False, step: int = 1) -> str:
    """``rows`` verl dump lines, groups of 8 (or one per row), ``keys`` numeric reward keys besides ``score``."""
    extra = {f"k{k}": 0.5 for k in range(keys)}
    lines = [
        json.dumps(
            {
                "input": f"user\nq{i if distinct else i // 8}\nassistant\n",
                "output": "ok",
                "gts": "x",
                "score": float(i % 2),
                "step": step,
                **extra,
            }
        )
        for i in range(rows)
    ]
    return "\n".join(lines) + "\n"


def dump(folder, rows: int, steps: int = 1, **kw):
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(1, steps + 1):
        (folder / f"{s}.jsonl").write_text(verl_lines(rows, step=s, **kw))
    return folder.name


def refused(fn, *args, match: str):
    with bounded(), pytest.raises(gr.Error, match=match) as err:
        fn(*args)
    assert len(str(err.value)) < 300 and "/" not in str(err.value), str(err.value)


@pytest.mark.parametrize("distinct", [False, True], ids=["140k-rows", "140k-groups"])
def test_a_step_file_over_the_line_cap_is_refused_while_it_is_read(runs, distinct):
    """140,000 rows (or as many groups of one) in about 5 MB: refused at line 50,001, not after loading them all."""
    name = dump(runs / "v", 140_000, distinct=distinct)
    refused(
        runs_tab.open_run,
        name,
        None,
        match=r"1\.jsonl has more than 50,000 lines; a verl step file here has at most 50,000",
    )


def test_a_step_file_of_50000_rows_still_opens(runs):
    assert verl_runs.MAX_STEP_ROWS == 50_000
    name = dump(runs / "v", 50_000, distinct=True)  # 50,000 groups of one: every group is listed
    state, status, _, steps = runs_tab.open_run(name, None)
    assert "1 step file(s), rewards `score`" in status and steps["value"] == "train:1"
    groups, picker = runs_tab.run_step(state, "train:1")
    assert len(groups) == 50_000 and len(picker["choices"]) == 50_001


def test_a_zip_of_ten_steps_of_130000_rows_is_refused_at_its_first_step(runs, tmp_path):
    """1.3 million rows (31 MB) in a 5 MiB zip: the first step file is refused at its line cap."""
    up = tmp_path / "run.zip"
    lines = '{"input":"","output":""}\n' * 130_000
    with zipfile.ZipFile(up, "w", zipfile.ZIP_DEFLATED) as zf:
        for s in range(1, 11):
            zf.writestr(f"dump/{s}.jsonl", lines)
    assert up.stat().st_size < 5 * 2**20
    refused(runs_tab.open_run, "", str(up), match=r"1\.jsonl has more than 50,000 lines")


def test_the_reward_curves_stop_at_their_row_cap_and_say_so(runs):
    """Ten steps of 40,000 rows each pass the line cap; the curves read steps until 100,000 rows (three here), and
    the status says how many steps they show. Every step still opens when picked."""
    name = dump(runs / "v", 40_000, steps=10)
    with bounded():
        state, status, fig, steps = runs_tab.open_run(name, None)
    assert "The reward curves show the first 3 of 10 step files (120,000 rows; they read at most 100,000)" in status
    assert len(steps["choices"]) == 10 and [len(t.x) for t in fig.data][0] == 3
    groups, _ = runs_tab.run_step(state, "train:10")
    assert len(groups) == 5_000


def test_curves_of_exactly_the_row_cap_show_every_step(runs):
    assert run_files.MAX_CURVE_ROWS == 100_000
    name = dump(runs / "v", 25_000, steps=4)
    state, status, fig, steps = runs_tab.open_run(name, None)
    assert "The reward curves show" not in status and [len(t.x) for t in fig.data][0] == 4


@pytest.mark.parametrize("keys, rows", [(200, 2_500), (10_000, 20)])
def test_a_line_over_the_key_cap_is_refused_at_its_first_line(runs, keys, rows):
    name = dump(runs / "v", rows, keys=keys)
    refused(
        runs_tab.open_run, name, None, match=rf"1\.jsonl:1: {keys + 5:,} keys; a verl dump line here has at most 64"
    )


def test_a_dump_over_the_reward_cap_is_refused_and_one_at_it_opens(runs):
    """59 numeric keys fit in a line (64 keys with verl's five) but make 59 rewards: over the run's 32."""
    refused(
        runs_tab.open_run,
        dump(runs / "v", 2_500, keys=59),
        None,
        match=r"1\.jsonl has 59 rewards; a run here has at most 32",
    )
    state, status, fig, _ = runs_tab.open_run(dump(runs / "w", 2_500, keys=32), None)
    assert len(state["names"]) == 32 and "`k31`" in status


def test_a_line_over_the_byte_cap_is_refused_without_reading_the_rest(runs):
    (runs / "v").mkdir()
    line = json.dumps({"input": "user\nq\nassistant\n", "output": "a" * (5 * 2**20)})
    (runs / "v" / "1.jsonl").write_text(line + "\n")
    refused(runs_tab.open_run, "v", None, match=r"1\.jsonl:1: the line is longer than 4 MiB; at most that here")
    line = json.dumps({"input": "user\nq\nassistant\n", "output": "a" * (4 * 2**20 - 100)})
    (runs / "v" / "1.jsonl").write_text(line + "\n")  # just under: opens
    assert runs_tab.open_run("v", None)[3]["value"] == "train:1"


def trl_file(path, rows: int, rewards: int):
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = {"step": [1] * rows, "prompt": ["p"] * rows, "completion": ["c"] * rows}
    frame.update({f"r{i}": [float(j % 2) for j in range(rows)] for i in range(rewards)})
    pd.DataFrame({**frame, "advantage": [0.0] * rows}).to_parquet(path)
    return str(path)


def test_a_trl_file_with_507_reward_columns_is_refused_from_its_footer(runs, tmp_path):
    """Under the 512-column cap, but 507 rewards: refused before any row is read (it took 20.5 s)."""
    up = trl_file(tmp_path / "up" / "completions_00001.parquet", 100, 507)
    refused(runs_tab.open_run, "", up, match=r"completions_00001\.parquet has 507 rewards; a run here has at most 32")


def test_a_trl_file_with_32_rewards_of_50000_rows_opens(runs):
    trl_file(runs / "t" / "completions" / "completions_00001.parquet", 50_000, 32)
    state, status, fig, _ = runs_tab.open_run("t", None)
    assert len(state["names"]) == 32 and len(fig.data) >= 32


def zip_of_steps(path, n: int):
    row = json.dumps({"input": "user\nq\nassistant\n", "output": "o", "score": 1.0}) + "\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for s in range(1, n + 1):
            zf.writestr(f"dump/{s}.jsonl", row)
    return str(path)


def test_an_upload_of_2000_step_files_is_refused_before_it_is_unpacked(runs, tmp_path):
    up = zip_of_steps(tmp_path / "run.zip", 2000)
    refused(runs_tab.open_run, "", up, match=r"run\.zip holds 2,000 run files; at most 500 here: upload fewer steps")
    assert not any(runs.glob("**/1.jsonl"))


def test_an_upload_of_500_step_files_opens_within_the_budget(runs, tmp_path):
    assert run_files.MAX_UPLOAD_FILES == 500
    up = zip_of_steps(tmp_path / "run.zip", 500)
    with bounded():
        state, status, fig, steps = runs_tab.open_run("", up)
    assert "500 step file(s)" in status and len(steps["choices"]) == 500 and len(fig.data[0].x) == 500
