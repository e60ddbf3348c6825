"""Scoring across processes: the split, the merge (one process's order), resume from the parts of a killed run, and
a real 2-process launch (``accelerate launch --multi_gpu``, gloo on CPU) whose output equals one process's."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mrtpo_viz.relevance.scaleout import Shard, merge_records, part_path, part_paths, score_sharded, split_rows
from mrtpo_viz.relevance.scoring import ScoreProgress, read_rollouts, score_rollouts, score_rows
from mrtpo_viz.tasks.base import VERIFIERS, Verdict, Verifier, register
from tests.apphelpers import REPO, free_port

torch.set_num_threads(1)


class OneProcess:
    """What ``score_sharded`` needs of accelerate's PartialState, for a run that is not launched."""

    process_index, num_processes = 0, 1

    def wait_for_everyone(self):
        pass


@pytest.fixture
def length_verifier():
    v = Verifier(
        name="test_scaleout.short",
        task="test_scaleout",
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
        "task": "test_scaleout",
        "prompt": f"Name a city number {i}.",
        "response": f" Paris is city {i}",
        "meta": {"words": 3},
        "verifiers": ["test_scaleout.short"],
    }
    return {**row, **kw}


def _write(path, lines):
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines))
    return path


def _content(path: Path):
    """The file's bytes; a JSONL's records without "timings" (wall-clock seconds, which differ run to run)."""
    if path.suffix != ".jsonl":
        return path.read_bytes()
    return [{k: v for k, v in json.loads(ln).items() if k != "timings"} for ln in path.read_text().splitlines()]


def test_split_takes_every_nth_row_and_covers_all():
    todo = list(range(7))
    shares = [split_rows(todo, Shard(r, 3)) for r in range(3)]
    assert shares == [[0, 3, 6], [1, 4], [2, 5]]
    assert split_rows(todo, Shard(0, 1)) == todo


def test_part_paths_sit_next_to_the_output(tmp_path):
    out = tmp_path / "scores.csv"
    assert part_path(out, Shard(1, 2)) == tmp_path / "scores.csv.part-1-of-2.jsonl"
    for name in [
        "scores.csv.part-1-of-2.jsonl",
        "scores.csv.part-0-of-2.jsonl",
        "scores.csv.part-2-of-10.jsonl",
        "scores.csv.part-x-of-2.jsonl",
        "other.csv.part-0-of-2.jsonl",
        ".scores.csv.part-0-of-2.jsonl.tmp",
    ]:
        (tmp_path / name).write_text("")
    assert [p.name for p in part_paths(out)] == [
        "scores.csv.part-0-of-2.jsonl",
        "scores.csv.part-1-of-2.jsonl",
        "scores.csv.part-2-of-10.jsonl",
    ]


def test_merge_orders_as_one_process_would():
    rows = [{"id": f"r{i}"} for i in range(5)]
    existing = [{"id": "r3", "v": 0}, {"id": "old", "v": 0}]
    # a table output: several records per id, which must stay together and in order
    part0 = [{"id": "r0", "v": 1}, {"id": "r0", "v": 2}, {"id": "r4", "v": 1}]
    part1 = [{"id": "r1", "v": 1}, {"id": "gone", "v": 1}, {"id": "r3", "v": 9}]
    merged = merge_records(rows, existing, [part0, part1])
    assert [(r["id"], r["v"]) for r in merged] == [
        ("r3", 0),
        ("old", 0),
        ("r0", 1),
        ("r0", 2),
        ("r1", 1),
        ("r4", 1),
        ("gone", 1),
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_resume_from_the_parts_of_a_killed_run(tiny_policy, length_verifier, tmp_path, suffix):
    path = _write(tmp_path / "r.jsonl", [_row(i) for i in range(5)] + ["{bad", _row(9, verifiers=["no.such"])])
    reference = tmp_path / f"one{suffix}"
    list(score_rollouts(tiny_policy, path, out=reference))

    out = tmp_path / f"out{suffix}"
    rows, _ = read_rollouts(path)
    # a 2-process run killed after rank 1 had written r1 (its share: r1, r3, r9) and rank 0 nothing
    part = part_path(out, Shard(1, 2))
    list(score_rows(tiny_policy, [rows[1]], [], ScoreProgress(), out=part, suffix=suffix, file_suffix=".jsonl"))
    assert part_paths(out) == [part]

    steps = list(score_sharded(tiny_policy, path, out=out, state=OneProcess()))
    last = steps[-1]
    assert (last.total, last.scored, last.resumed) == (5, 4, 1)  # r1 was not replayed again
    assert [n for n, _ in last.problems] == [6, 7] and "unknown verifier 'no.such'" in last.problems[1][1]
    assert _content(out) == _content(reference)
    assert part_paths(out) == [] and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]

    last = list(score_sharded(tiny_policy, path, out=out, state=OneProcess()))[-1]
    assert (last.total, last.scored, last.resumed) == (1, 0, 5)  # only the failing row is tried again
    assert _content(out) == _content(reference)


def test_a_damaged_part_is_refused_and_kept(tiny_policy, length_verifier, tmp_path):
    path = _write(tmp_path / "r.jsonl", [_row(0)])
    out = tmp_path / "out.jsonl"
    part = part_path(out, Shard(0, 2))
    part.write_text("{not json\n")
    with pytest.raises(ValueError, match="cannot be read"):
        list(score_sharded(tiny_policy, path, out=out, state=OneProcess()))
    assert part.read_text() == "{not json\n" and not out.exists()


def _sample_rows(path: Path) -> Path:
    """8 rows of the bundled sample rollouts (3 per family, 2 of SQL), a bad line and a row that cannot replay."""
    lines = (REPO / "sample_data" / "rollouts" / "sample_rollouts.jsonl").read_text().splitlines()
    by_task = {}
    for ln in lines:
        by_task.setdefault(json.loads(ln)["task"], []).append(ln)
    picked = by_task["tool_calling"][:3] + by_task["text_to_sql"][:2] + by_task["instruction_following"][:3]
    broken = dict(json.loads(picked[0]), id="broken", verifiers=["no.such"])
    return _write(path, picked[:4] + ["{not json"] + picked[4:6] + [broken] + picked[6:])


def _score(tmp_path, out, processes):
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_PORT")}
    env.update(PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", HF_HOME=str(tmp_path / "hf"))
    score = ["-m", "mrtpo_viz", "score", str(tmp_path / "r.jsonl"), "--out", str(out), "--checkpoint", "tiny-mrtpo"]
    launch = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(free_port()),
    ]
    cmd = launch + score if processes == 2 else [sys.executable] + score
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout.splitlines()


@pytest.mark.slow
def test_two_processes_write_what_one_writes(tmp_path):
    _sample_rows(tmp_path / "r.jsonl")
    one = _score(tmp_path, tmp_path / "one.csv", 1)
    two = _score(tmp_path, tmp_path / "two.csv", 2)
    # Byte for byte: the same CPU, the same kernels, one thread per process and each row replayed on its own, so
    # no float may differ (the CSV has no wall-clock timings; the JSONL's "timings" would).
    assert (tmp_path / "two.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".csv", ".jsonl", ".tmp")) == [
        "one.csv",
        "r.jsonl",
        "two.csv",
    ]  # no part and no temporary file is left
    # each problem once, with its line number, and the right counts
    problems = sorted(ln for ln in two if ": skipped: " in ln)
    assert problems == sorted(ln for ln in one if ": skipped: " in ln) and len(problems) == 2
    assert [ln.split(":")[1] for ln in problems] == ["5", "8"]
    assert one[-1].startswith("scored 8 rollouts, 0 already in the output, skipped 2;")
    assert two[-1].startswith("scored 8 rollouts in 2 processes, 0 already in the output, skipped 2;")
    # a rerun resumes: nothing is replayed again but the row that cannot be
    before = (tmp_path / "two.csv").read_bytes()
    again = _score(tmp_path, tmp_path / "two.csv", 2)
    assert again[-1].startswith("scored 0 rollouts in 2 processes, 8 already in the output, skipped 2;")
    assert (tmp_path / "two.csv").read_bytes() == before
