"""Scoring a rollouts file: reading with line-numbered problems, resume, atomic output, the CLI."""

import json

import pytest
import torch

from mrtpo_viz.relevance.engine import replay
from mrtpo_viz.relevance.results import Relevance
from mrtpo_viz.relevance.scoring import read_rollouts, score_rollouts, write_atomic
from mrtpo_viz.tasks.base import Example
from mrtpo_viz.tasks.base import VERIFIERS, Verdict, Verifier, register

torch.set_num_threads(1)


@pytest.fixture
def length_verifier():
    v = Verifier(
        name="test_scoring.short",
        task="test_scoring",
        title="Short answer",
        description="test",
        info_fn=lambda ex: f"Answer in at most {ex.meta.get('words', 5)} words.",
        check_fn=lambda r, ex: Verdict(float(len(r.split()) <= ex.meta.get("words", 5)), "counted"),
    )
    register(v, replace=True)
    yield v
    VERIFIERS.pop(v.name, None)


def _row(i, **kw):
    row = {
        "id": f"r{i}",
        "task": "test_scoring",
        "prompt": f"Name a city number {i}.",
        "response": f" Paris is city {i}",
        "meta": {"words": 3},
        "verifiers": ["test_scoring.short"],
    }
    row.update(kw)
    return row


def _write(path, lines):
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines))
    return path


def test_read_rollouts_reports_bad_lines(tmp_path):
    path = _write(
        tmp_path / "r.jsonl",
        [
            _row(0),
            "{not json",
            {"task": "x", "prompt": "p"},
            "",
            _row(0),
            {"task": "x", "prompt": "p", "response": "ok"},
        ],
    )
    rows, problems = read_rollouts(path)
    assert [r["id"] for r in rows] == ["r0", "line6"]
    assert [r["line"] for r in rows] == [1, 6]
    assert [n for n, _ in problems] == [2, 3, 5]
    assert "not valid JSON" in problems[0][1] and "missing field(s) response" in problems[1][1]
    assert "repeated id 'r0'" in problems[2][1]


def test_a_json_error_names_the_column_where_the_row_breaks(tmp_path):
    cut = '{"task": "tool_calling", "prompt": "What is the weather in Paris",'  # a row split over two lines
    bad = '{"task": "tool_calling", "prompt": "p" "response": "r"}'
    path = _write(tmp_path / "r.jsonl", [cut, '"response": "x"}', bad])
    _, problems = read_rollouts(path)
    said = dict(problems)
    assert f"at the end of the line, column {len(cut) + 1}" in said[1], said[1]  # not "column 1" of the next line
    assert "Extra data at column 11" in said[2]  # the second half: a string, then more
    assert "Expecting ',' delimiter at column 40" in said[3] and bad[39] == '"'


def test_read_rollouts_limits(tmp_path):
    path = _write(tmp_path / "r.jsonl", [_row(0)])
    with pytest.raises(ValueError, match="the limit is"):
        read_rollouts(path, max_bytes=10)
    with pytest.raises(FileNotFoundError, match="no rollouts file"):
        read_rollouts(tmp_path / "missing.jsonl")


def test_score_jsonl_matches_replay_and_resumes(tiny_policy, length_verifier, tmp_path):
    path = _write(tmp_path / "r.jsonl", [_row(0), "[1, 2]", _row(1), _row(2, verifiers=["no.such"])])
    out = tmp_path / "out.jsonl"
    steps = list(score_rollouts(tiny_policy, path, out=out))
    last = steps[-1]
    assert (last.total, last.done, last.scored, last.resumed) == (3, 3, 2, 0)
    assert [n for n, _ in last.problems] == [2, 4] and "unknown verifier 'no.such'" in last.problems[1][1]
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["r0", "r1"]
    rel = Relevance.from_dict(records[1])
    ex = Example("test_scoring", _row(1)["prompt"], {"words": 3}, id="r1")
    direct = replay(tiny_policy, ex, _row(1)["response"], [length_verifier])
    assert torch.allclose(rel.scores, direct.scores, atol=1e-6) and rel.rewards == {"test_scoring.short": 0.0}

    _write(path, [_row(0), _row(1), _row(3)])  # resume: only the new row is replayed
    last = list(score_rollouts(tiny_policy, path, out=out))[-1]
    assert (last.total, last.scored, last.resumed) == (1, 1, 2)
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["r0", "r1", "r3"]


def test_interrupted_run_leaves_a_complete_file(tiny_policy, length_verifier, tmp_path):
    path = _write(tmp_path / "r.jsonl", [_row(i) for i in range(4)])
    out = tmp_path / "out.jsonl"
    run = score_rollouts(tiny_policy, path, out=out, batch_size=2)
    for progress in run:
        if progress.done == 3:
            break  # the process is "killed" after 3 rollouts: the last flush was after 2
    run.close()
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["r0", "r1"]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_failed_write_keeps_the_old_file(tmp_path):
    out = tmp_path / "out.jsonl"
    write_atomic(out, [{"id": "a"}], ".jsonl")
    with pytest.raises(TypeError):
        write_atomic(out, [{"id": "b", "bad": object()}], ".jsonl")
    assert out.read_text() == '{"id": "a"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_score_csv_long_frame_and_resume(tiny_policy, length_verifier, tmp_path):
    import pandas as pd

    path = _write(tmp_path / "r.jsonl", [_row(0), _row(1)])
    out = tmp_path / "out.csv"
    list(score_rollouts(tiny_policy, path, out=out, control="others"))
    frame = pd.read_csv(out)
    T0 = len(
        replay(
            tiny_policy,
            Example("test_scoring", _row(0)["prompt"], {"words": 3}),
            _row(0)["response"],
            [length_verifier],
        ).token_ids
    )
    assert (frame["id"] == "r0").sum() == T0 and set(frame["control"]) == {"others"}
    last = list(score_rollouts(tiny_policy, path, out=out))[-1]
    assert (last.total, last.resumed) == (0, 2) and len(pd.read_csv(out)) == len(frame)


def test_bad_output_formats(tiny_policy, tmp_path):
    path = _write(tmp_path / "r.jsonl", [_row(0)])
    with pytest.raises(ValueError, match="unknown output format"):
        next(score_rollouts(tiny_policy, path, out=tmp_path / "out.txt"))
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="needs pyarrow"):
            next(score_rollouts(tiny_policy, path, out=tmp_path / "out.parquet"))


def test_cli_score(tiny_policy_dir, length_verifier, tmp_path, capsys):
    from mrtpo_viz.cli import main

    path = _write(tmp_path / "r.jsonl", [_row(0), "oops", _row(1)])
    out = tmp_path / "out.jsonl"
    assert main(["score", str(path), "--checkpoint", str(tiny_policy_dir), "--out", str(out), "--threads", "1"]) == 0
    printed = capsys.readouterr().out
    assert f"{path}:2: skipped: not valid JSON" in printed
    assert "scored 2 rollouts, 0 already in the output, skipped 1" in printed
    assert len(out.read_text().splitlines()) == 2
