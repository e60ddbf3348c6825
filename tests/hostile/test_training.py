"""Training under faults: a real ``python -m mrtpo_viz train`` process is killed (SIGKILL) once its first checkpoint
exists, then resumed; the step counter continues, the metrics CSV is whole (parses, no repeated step), and a
corrupted newest checkpoint gives a clear error while the previous one still loads."""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from mrtpo_viz.training.checkpoints import CHECKPOINTS, LATEST, CheckpointError, latest_checkpoint, load_checkpoint
from mrtpo_viz.training.config import TrainConfig

torch.set_num_threads(1)
from tests.apphelpers import REPO as ROOT  # noqa: E402

STEPS, SAVE_EVERY = 6, 2


def _command(checkpoint, out) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mrtpo_viz",
        "train",
        "--methods",
        "gdpo",
        "--steps",
        str(STEPS),
        "--save-every",
        str(SAVE_EVERY),
        "--checkpoint",
        str(checkpoint),
        "--out",
        str(out),
        "--group-size",
        "2",
        "--prompts-per-step",
        "1",
        "--max-new-tokens",
        "4",
        "--threads",
        "1",
    ]


def _env() -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false"}


def _steps(metrics_csv: Path) -> list[int]:
    """Steps of a metrics CSV that must parse whole: every row has every column."""
    with metrics_csv.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(None not in r and all(v is not None for v in r.values()) for r in rows)
    return [int(r["step"]) for r in rows]


@pytest.fixture(scope="module")
def killed_and_resumed(tiny_policy_dir, tmp_path_factory):
    """Run, SIGKILL once LATEST exists, note what is on disk, resume to the end; returns what was seen."""
    out = tmp_path_factory.mktemp("train_kill")
    run_dir = out / "gdpo-seed0"
    proc = subprocess.Popen(
        _command(tiny_policy_dir, out), cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    pointer = run_dir / CHECKPOINTS / LATEST
    deadline = time.monotonic() + 600
    while not pointer.is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    stderr = proc.communicate(timeout=60)[1].decode(errors="replace")
    assert proc.returncode == -signal.SIGKILL, f"the run ended before the kill: {stderr[-2000:]}"
    killed_at = pointer.read_text().strip()
    steps_before = _steps(run_dir / "metrics.csv")
    rows_before = (run_dir / "metrics.csv").read_text().splitlines()
    resumed = subprocess.run(
        _command(tiny_policy_dir, out), cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=900
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    return {"run_dir": run_dir, "killed_at": killed_at, "steps_before": steps_before, "rows_before": rows_before}


def test_a_killed_run_resumes_and_its_step_counter_continues(killed_and_resumed):
    run = killed_and_resumed
    saved = int(run["killed_at"].removeprefix("step-"))
    assert SAVE_EVERY <= saved < STEPS  # killed mid-run, after at least one checkpoint
    assert run["steps_before"] == list(range(len(run["steps_before"])))  # whole up to the kill
    assert _steps(run["run_dir"] / "metrics.csv") == list(range(STEPS))  # every step once, in order
    after = (run["run_dir"] / "metrics.csv").read_text().splitlines()
    assert after[: saved + 1] == run["rows_before"][: saved + 1]  # header and the checkpointed steps were not re-run
    assert (run["run_dir"] / CHECKPOINTS / LATEST).read_text().strip() == f"step-{STEPS:06d}"


def test_the_combined_metrics_file_is_whole(killed_and_resumed):
    combined = killed_and_resumed["run_dir"].parent / "metrics.csv"
    assert _steps(combined) == list(range(STEPS))


def _config(run_dir: Path, checkpoint) -> TrainConfig:
    """The config the CLI run used (the fields a checkpoint is checked against)."""
    return TrainConfig(
        task="tool_calling",
        method="gdpo",
        checkpoint=str(checkpoint),
        group_size=2,
        prompts_per_step=1,
        steps=STEPS,
        max_new_tokens=4,
        seed=0,
        out_dir=str(run_dir),
    )


def test_a_corrupted_newest_checkpoint_is_a_clear_error_and_the_previous_one_loads(
    killed_and_resumed, tiny_policy_dir, tiny_policy
):
    import copy

    run_dir = killed_and_resumed["run_dir"]
    newest = latest_checkpoint(run_dir)
    older = sorted(p for p in (run_dir / CHECKPOINTS).glob("step-*") if p.is_dir() and p != newest)
    assert older, f"only {newest.name} is kept: a corrupted newest checkpoint would leave nothing to resume from"
    weights = newest / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # a torn write / a bad disk block
    cfg = _config(run_dir, tiny_policy_dir)
    model = copy.deepcopy(tiny_policy.model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    with pytest.raises(CheckpointError, match=f"checkpoint {newest} is corrupted or incomplete") as err:
        load_checkpoint(newest, model, optimizer, cfg)
    assert older[-1].name in str(err.value)  # the message points at the previous checkpoint
    resumed = load_checkpoint(older[-1], model, optimizer, cfg)
    assert resumed.steps_done == int(older[-1].name.removeprefix("step-"))
