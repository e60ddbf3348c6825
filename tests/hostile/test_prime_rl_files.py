"""Threat: prime-rl token exports that are wrong, huge or not files at all get the verl and TRL readers' answers:
a value of the wrong kind, a number beyond a float, lists of different lengths, bytes that are not UTF-8 or JSON
are each named ``file:line`` with the field (and the item) in the Runs tab and as an input error (exit 2) in the
CLI; a line, a step or a sequence over its cap is refused while it is read; a fifo, a link to ``/dev/zero`` or a
link out of the runs folder is never opened."""

import json
import os

import gradio as gr
import pytest

from mrtpo_viz.cli import main
from mrtpo_viz.integrations import prime_rl_lines, prime_rl_runs, run_uploads
from mrtpo_viz.ui import runs_tab
from tests.integrations.prime_rl_fixture import sequence_record

from .bounded import bounded
from .test_run_file_values import unblocked


def good(line: int = 0) -> dict:
    return sequence_record(1, 0, line, [5, 6], [7, 8], 1.0, [0.0, -1.0, -0.5, -0.2], [0.0, 1.0, 2.0, 3.0], "env")


def export(folder, second, step: int = 1) -> str:
    """``token_exports/step_<step>/rank_0.jsonl`` holding a good line, then ``second`` (a dict or raw text)."""
    path = folder / "token_exports" / f"step_{step}" / "rank_0.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = second if isinstance(second, (str, bytes)) else json.dumps(second)
    raw = raw if isinstance(raw, bytes) else raw.encode("utf-8")
    path.write_bytes(json.dumps(good()).encode() + b"\n" + raw + b"\n")
    return folder.name


def changed(**fields) -> dict:
    return {**good(1), **fields}


BAD = {
    "text token id": (changed(token_ids=[5, "x", 7, 8]), "'token_ids' item 2 must be a whole number from 0 to 2**31"),
    "negative token id": (changed(token_ids=[5, -1, 7, 8]), "'token_ids' item 2 must be a whole number"),
    "object entropy": (
        changed(entropy=[0, {"a": 1}, 0, 0]),
        "'entropy' item 2 must be a number (or null), got an object",
    ),
    "text advantages": (changed(advantages="high"), "'advantages' must be a list with one value per token, got text"),
    "huge advantage": (
        json.dumps(good(1)).replace('"advantages": [0.0', '"advantages": [1' + "0" * 400),
        "'advantages' item 1 must be a finite number; it is beyond +-1.8e308",
    ),
    "infinite ratio": (
        changed(importance_ratio=[1.0, float("inf"), 1.0, 1.0]),
        "'importance_ratio' item 2 must be a finite number",
    ),
    "number loss mask": (
        changed(loss_mask=[0, 0, 1, 1]),
        "'loss_mask' item 1 must be true or false (or null), got a number",
    ),
    "short list": (changed(entropy=[0.0, 1.0, 2.0]), "'entropy' has 3 values; 'token_ids' has 4 (one per token)"),
    "schema 2": (changed(schema_version=2), "schema_version 2; this reader knows prime-rl's version 1"),
    "no advantages": (
        {k: v for k, v in good(1).items() if k != "advantages"},
        "a prime-rl token export line has schema_version, step, token_ids, loss_mask, advantages (no 'advantages'",
    ),
    "text step": (changed(step="one"), "'step' must be a whole number from 0 to 999,999,999, got text"),
    "not JSON": ("{not json", "not JSON (Expecting property name enclosed in double quotes)"),
    "5,000 digits": ('{"schema_version": ' + "9" * 5000 + "}", "not JSON (a number too long to read)"),
    "not UTF-8": (b'{"env_name": "\xff\xfe"}', "not UTF-8 text (byte 15 of the line)"),
}


@pytest.mark.parametrize("second, says", BAD.values(), ids=BAD.keys())
def test_a_bad_line_is_named_with_its_file_line_and_field_in_the_runs_tab(tmp_path, monkeypatch, second, says):
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(tmp_path))
    name = export(tmp_path / "p", second)
    with bounded(), pytest.raises(gr.Error) as err:
        runs_tab.open_run(name, None)
    assert f"rank_0.jsonl:2: {says}" in str(err.value)
    for raw in ("could not convert", "codec can't", "Exceeds the limit", "Traceback", str(tmp_path)):
        assert raw not in str(err.value)


@pytest.mark.parametrize("case", ["text token id", "huge advantage", "short list", "not UTF-8"])
def test_the_cli_reports_a_bad_line_as_an_input_error(tmp_path, capsys, case):
    second, says = BAD[case]
    export(tmp_path / "p", second)
    code = main(["score", str(tmp_path / "p"), "--out", str(tmp_path / "o.jsonl"), "--info", "answer=x"])
    err = capsys.readouterr().err
    assert code == 2 and f"rank_0.jsonl:2: {says}" in err and "internal error" not in err, err


def test_a_line_over_the_byte_cap_is_refused_without_reading_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(tmp_path))
    assert prime_rl_runs.MAX_LINE_BYTES == 16 * 2**20
    export(tmp_path / "p", '{"token_ids": [' + "1," * (9 * 2**20) + "1]}")  # 18 MiB
    with bounded(), pytest.raises(gr.Error, match=r"rank_0\.jsonl:2: the line is longer than 16 MiB; at most that"):
        runs_tab.open_run("p", None)


def test_each_cap_refuses_one_over_it_and_opens_one_at_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(tmp_path))
    n = prime_rl_lines.MAX_TOKENS
    at = {**good(1), "token_ids": [1] * n, "loss_mask": [True] * n, "advantages": [0.5] * n}
    for key in list(at):
        if isinstance(at[key], list) and key not in ("token_ids", "loss_mask", "advantages"):
            del at[key]
    export(tmp_path / "p", at)
    with bounded():
        assert runs_tab.open_run("p", None)[3]["value"] == "train:1"
    over = {**at, "token_ids": [1] * (n + 1), "loss_mask": [True] * (n + 1), "advantages": [0.5] * (n + 1)}
    export(tmp_path / "q", over)
    with (
        bounded(),
        pytest.raises(gr.Error, match=r"rank_0\.jsonl:2: 65,537 tokens; a sequence here has at most 65,536"),
    ):
        runs_tab.open_run("q", None)
    monkeypatch.setattr(prime_rl_runs, "MAX_STEP_ROWS", 2)
    prime_rl_runs._frame.cache_clear()
    assert runs_tab.open_run("p", None)[3]["value"] == "train:1"  # two lines: at the cap
    (tmp_path / "p/token_exports/step_1/rank_1.jsonl").write_text(json.dumps(good()) + "\n")
    with pytest.raises(gr.Error, match=r"rank_1\.jsonl:1: the step has more than 2 lines"):
        runs_tab.open_run("p", None)
    monkeypatch.setattr(prime_rl_runs, "MAX_RANK_FILES", 1)
    with pytest.raises(gr.Error, match=r"step_1 has 2 rank files; a step here has at most 1"):
        runs_tab.open_run("p", None)
    monkeypatch.setattr(prime_rl_runs, "MAX_RANK_FILES", 512)
    monkeypatch.setattr(prime_rl_runs, "MAX_STEP_ROWS", 50_000)
    size = (tmp_path / "p/token_exports/step_1/rank_0.jsonl").stat().st_size
    monkeypatch.setattr(prime_rl_runs, "MAX_STEP_BYTES", size)
    with pytest.raises(gr.Error, match=r"rank_1\.jsonl: the step's rank files hold more than"):
        runs_tab.open_run("p", None)


def special_export(folder):
    """``rank_0.jsonl`` a fifo, ``rank_1.jsonl`` a link to ``/dev/zero``, ``rank_2.jsonl`` a link out of the runs
    folder (to a good file)."""
    step = folder / "token_exports" / "step_1"
    step.mkdir(parents=True)
    os.mkfifo(step / "rank_0.jsonl")
    os.symlink("/dev/zero", step / "rank_1.jsonl")
    outside = folder.parent.parent / "outside.jsonl"
    outside.write_text(json.dumps(good()) + "\n")
    os.symlink(outside, step / "rank_2.jsonl")
    return step


def test_the_runs_tab_and_the_cli_read_no_fifo_no_device_and_no_link_out(tmp_path, monkeypatch, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(runs))
    step = special_export(runs / "p")
    with unblocked(step / "rank_0.jsonl"), bounded(), pytest.raises(gr.Error, match="holds no run files"):
        runs_tab.open_run("p", None)
    with unblocked(step / "rank_0.jsonl"), bounded(seconds=10):  # the policy loads first
        code = main(["score", str(runs / "p"), "--out", str(tmp_path / "o.jsonl"), "--info", "a=b"])
    err = capsys.readouterr().err
    assert code == 2 and "holds no run files" in err and "token_exports/step_*/rank_*.jsonl" in err, err
    (step / "rank_3.jsonl").write_text(json.dumps(good()) + "\n")  # a regular file beside them is the one read
    state = runs_tab.open_run("p", None)[0]
    assert runs_tab.run_completions(state, "train:1", "all", "", "row", False)["row"].tolist() == [0]


def test_the_step_reader_itself_and_an_upload_refuse_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "rank_0.jsonl")
    with (
        unblocked(tmp_path / "rank_0.jsonl"),
        bounded(),
        pytest.raises(ValueError, match="rank_0.jsonl is not a regular file"),
    ):
        prime_rl_runs.read_step(tmp_path / "rank_0.jsonl")
    with (
        unblocked(tmp_path / "rank_0.jsonl"),
        bounded(),
        pytest.raises(ValueError, match="rank_0.jsonl is not a regular file"),
    ):
        run_uploads.extract_upload(tmp_path / "rank_0.jsonl", tmp_path / "d", 2**20)
