"""Threat: verl dump values and run-folder entries that crashed the readers (issue 42, items 7-9). A score of
``10**400``, ``"high"`` or an object, a lone surrogate in text gave raw Python messages ("int too large to convert
to float", "could not convert string to float: 'high'", "'utf-8' codec can't encode ...") with no file or line, and
the CLI called them an internal error (exit 1); ``score DIR`` with ``1.jsonl`` a fifo hung, and linked to
``/dev/zero`` it died with MemoryError at 5.3 GB; a TRL completions parquet with no rows said "Can only use .str
accessor with string values". Each is now a message naming the file (and the line and field), exit 2 in the CLI."""

import os
import threading
from contextlib import contextmanager

import gradio as gr
import pandas as pd
import pytest

from mrtpo_viz.cli import main
from mrtpo_viz.integrations import run_uploads, run_view, verl_runs
from mrtpo_viz.ui import runs_tab

from .bounded import bounded

GOOD = '{"input": "user\\nhi\\nassistant\\n", "output": "hello", "gts": "x", "score": 1.0}\n'

BAD = {
    "huge score": ('"score": 1' + "0" * 400, "1.jsonl:2: 'score' must be a finite number; it is beyond +-1.8e308"),
    "text score": ('"score": "high"', "1.jsonl:2: 'score' must be a number (or null), got text"),
    "object score": ('"score": {"a": 1}', "1.jsonl:2: 'score' must be a number (or null), got an object"),
    "infinite reward": ('"score": 1, "acc": Infinity', "1.jsonl:2: 'acc' must be a finite number"),
    "lone surrogate": ('"score": 1, "gts": "\\ud800"', "1.jsonl:2: 'gts' holds a lone surrogate"),
    "number output": ('"score": 1, "output": 5', "1.jsonl:2: 'output' must be text, got a number"),
    "5,000 digits": ('"score": ' + "9" * 5000, "1.jsonl:2: not JSON (a number too long to read)"),
}


def bad_dump(folder, fields: str):
    folder.mkdir(parents=True, exist_ok=True)
    line = '{"input": "user\\nhi\\nassistant\\n", ' + ('"output": "o", ' if '"output"' not in fields else "") + fields
    (folder / "1.jsonl").write_text(GOOD + line + "}\n")
    return folder


@pytest.mark.parametrize("fields, says", BAD.values(), ids=BAD.keys())
def test_a_bad_value_is_named_with_its_file_line_and_field_in_the_runs_tab(tmp_path, monkeypatch, fields, says):
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(tmp_path))
    bad_dump(tmp_path / "v", fields)
    with bounded(), pytest.raises(gr.Error) as err:
        runs_tab.open_run("v", None)
    assert says in str(err.value)
    for raw in ("too large to convert", "could not convert", "codec can't", "Exceeds the limit", "Traceback"):
        assert raw not in str(err.value)


@pytest.mark.parametrize("fields, says", [BAD["huge score"], BAD["text score"], BAD["lone surrogate"]])
def test_the_cli_reports_a_bad_value_as_an_input_error(tmp_path, capsys, fields, says):
    bad_dump(tmp_path / "v", fields)
    code = main(["score", str(tmp_path / "v"), "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and says in err and "internal error" not in err, err


def test_bytes_that_are_not_utf8_are_named_by_line(tmp_path):
    (tmp_path / "1.jsonl").write_bytes(GOOD.encode() + b'{"input": "a\xff", "output": "b"}\n')
    with pytest.raises(ValueError, match=r"^1\.jsonl:2: not UTF-8 text \(byte 13 of the line\)$"):
        verl_runs.read_step(tmp_path / "1.jsonl")


def test_values_a_real_dump_holds_still_read(tmp_path):
    """null and NaN are a missing reward, a bool is 0/1, a big whole number is a float, text keys are not rewards."""
    line = '{"input": "q", "output": "o", "score": null, "acc": true, "fmt": NaN, "n": 100000000000000000000, "p": "x"}'
    (tmp_path / "1.jsonl").write_text(
        GOOD.replace('"score": 1.0', '"score": 1.0, "acc": false, "fmt": 1, "n": 2, "p": "y"') + line + "\n"
    )
    rows = verl_runs.read_step(tmp_path / "1.jsonl")
    assert verl_runs.reward_names(rows) == ["acc", "fmt", "n"]
    assert rows[1]["acc"] == 1.0 and rows[1]["n"] == 1e20 and rows[1]["score"] != rows[1]["score"]


@contextmanager
def unblocked(fifo):
    """Open ``fifo`` for writing (and close it) whenever a reader waits on it, so a reader that opens it blocking
    gets end-of-file instead of hanging the test run for ever; the case budget then fails such a reader."""
    done = threading.Event()

    def poke():
        while not done.wait(0.2):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader waiting
                pass

    thread = threading.Thread(target=poke, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def special_dump(folder):
    """``1.jsonl`` a fifo, ``2.jsonl`` a link to ``/dev/zero``."""
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "1.jsonl")
    os.symlink("/dev/zero", folder / "2.jsonl")
    return folder


def test_the_cli_reads_no_fifo_and_no_device_in_a_dump_folder(tmp_path, capsys):
    folder = special_dump(tmp_path / "v")
    with unblocked(folder / "1.jsonl"), bounded(seconds=10):  # the policy loads first
        code = main(["score", str(folder), "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "holds no run files" in err and "{step}.jsonl" in err, err
    (folder / "3.jsonl").write_text(GOOD)  # a regular file beside them is the one read
    run = run_view.open_run(folder)
    assert [r["id"] for r in run_view.rollout_rows(run, None)] == ["step3-row0"]


def test_the_runs_tab_reads_no_fifo_and_no_device_in_a_dump_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(tmp_path))
    folder = special_dump(tmp_path / "v")
    with unblocked(folder / "1.jsonl"), bounded(), pytest.raises(gr.Error, match="holds no run files"):
        runs_tab.open_run("v", None)
    (folder / "3.jsonl").write_text(GOOD)
    assert [v for _, v in runs_tab.open_run("v", None)[3]["choices"]] == ["train:3"]


@pytest.mark.parametrize("name", ["1.jsonl", "run.zip"])
def test_an_upload_that_is_a_fifo_or_a_device_is_refused_unread(tmp_path, name):
    os.mkfifo(tmp_path / name)
    with unblocked(tmp_path / name), bounded(), pytest.raises(ValueError, match=f"{name} is not a regular file"):
        run_uploads.extract_upload(tmp_path / name, tmp_path / "d", 2**20)
    os.symlink("/dev/zero", tmp_path / ("z" + name))
    with bounded(), pytest.raises(ValueError, match=f"z{name} is not a regular file"):
        run_uploads.extract_upload(tmp_path / ("z" + name), tmp_path / "d", 2**20)


def test_the_step_reader_itself_refuses_a_fifo(tmp_path):
    """Any caller of read_step (not only those that listed the folder first) is safe."""
    os.mkfifo(tmp_path / "1.jsonl")
    with unblocked(tmp_path / "1.jsonl"), bounded(), pytest.raises(ValueError, match="1.jsonl is not a regular file"):
        verl_runs.read_step(tmp_path / "1.jsonl")


def test_a_trl_completions_file_with_no_rows_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_MAX_UPLOAD_MB", "5")
    empty = pd.DataFrame({"step": [1], "prompt": ["p"], "completion": ["c"], "ok": [1.0], "advantage": [0.0]}).iloc[:0]
    path = tmp_path / "completions_00001.parquet"
    empty.to_parquet(path)
    with bounded(), pytest.raises(gr.Error) as err:
        runs_tab.open_run("", str(path))
    assert str(err.value).strip("'\"") == (
        "completions_00001.parquet has no rows: no completions were logged in it; pick another step"
    )
