"""MRTPOTrainer's per-token advantages per reward in the trackers (``TokenTables``): a one-step TRL run that
reports to trackio (local, a temporary TRACKIO_DIR) or to wandb (offline, a temporary WANDB_DIR: nothing leaves the
machine) gets the callback from MRTPOTrainer itself and writes a table per step; what each tracker stored is read
back (trackio through its own storage and its CLI, wandb from the run file it writes for ``wandb sync``) and holds
the numbers of the run's token parquet. Skipped without trl, and each tracker's test without its tracker."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("trl", reason="the TRL integration needs trl (pip install mrtpo-viz[trl])")

from mrtpo_viz.integrations import trl_log, trl_tracking  # noqa: E402
from tests.apphelpers import REPO  # noqa: E402

# In a child process: trackio reads TRACKIO_DIR once, at import, and keeps its current run in module state.
DRIVER = textwrap.dedent(
    """
    import json, sys, warnings
    warnings.simplefilter("ignore")
    from mrtpo_viz.integrations.trl import MRTPOConfig, MRTPOTrainer, trl_dataset
    from mrtpo_viz.tasks import load_examples
    from mrtpo_viz.integrations.trl_tracking import TABLE_KEY
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    from mrtpo_viz.tasks import Verifier

    def length(completions, **kwargs):  # rewards that differ within a group, whatever the tiny policy samples
        return [(len(c[-1]["content"]) % 8) / 8 for c in completions]

    def vowels(completions, **kwargs):
        return [min(sum(ch in "aeiou" for ch in c[-1]["content"]), 4) / 4 for c in completions]

    rewards = [Verifier.from_trl(fn, name=fn.__name__, info=lambda ex, n=fn.__name__: f"{n} of the answer: "
               + ex.messages()[-1]["content"]) for fn in (length, vowels)]
    out, report_to = sys.argv[1], sys.argv[2]
    data = trl_dataset(load_examples("tool_calling")[:2])
    args = MRTPOConfig(
        output_dir=out, seed=3, use_cpu=True, bf16=False, report_to=[report_to], project="mrtpo-test",
        run_name="one-step", logging_steps=1, save_strategy="no", disable_tqdm=True, max_steps=1,
        per_device_train_batch_size=8, num_generations=4, max_completion_length=12,
        multi_objective_aggregation="normalize_then_sum",
    )
    trainer = MRTPOTrainer(
        model=str(BUNDLED_POLICY_DIR), reward_funcs=rewards, args=args,
        train_dataset=data,
    )
    trainer.train()  # transformers' TrackioCallback (WandbCallback) starts the run
    if report_to != "trackio":
        sys.exit(0)
    from trackio.sqlite_storage import SQLiteStorage
    logs = [r for r in SQLiteStorage.get_logs("mrtpo-test", "one-step") if TABLE_KEY in r]
    print("LOGS " + json.dumps([{"step": r["step"], "table": r[TABLE_KEY]} for r in logs]))
    """
)


def _train_one_step(tmp_path, report_to: str, **env) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO), **env
    )
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(tmp_path / "run"), report_to],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def _check_rows(rows: list[dict], run_dir) -> None:
    """The logged table's rows (dicts) against the run's token parquet of step 1."""
    import pandas as pd

    frame = pd.read_parquet(run_dir / trl_log.LOG_DIR / trl_log.token_file(1))
    names = trl_tracking.reward_names(frame.columns)
    assert names == ["length", "vowels"]
    expected = trl_tracking.token_table(frame.to_dict("records"), names)
    assert len(rows) == len(expected) == sum(len(t) for t in frame["tokens"])
    assert sorted({r["row"] for r in rows}) == list(range(8))  # MRTPOTrainer added the callback itself
    for got, want in zip(rows, expected.to_dict("records")):
        assert got.keys() == want.keys()
        for k, v in want.items():
            assert got[k] == pytest.approx(v, abs=1e-12) if isinstance(v, float) else got[k] == v, k
    # read back against the parquet itself (not through token_table): each cell is the run's number at its token
    parts = [trl_log.part_column(n) for n in names]
    by_row = {int(r["row"]): r for r in frame.to_dict("records")}
    for r in rows:
        rec, t = by_row[r["row"]], r["position"]
        assert r["token"] == rec["tokens"][t] and r["advantage"] == pytest.approx(rec["token_advantages"][t], abs=1e-12)
        for n, p in zip(names, parts):
            assert r[p] == pytest.approx(rec[p][t], abs=1e-12)
            assert r[trl_log.relevance_column(n)] == pytest.approx(rec[trl_log.relevance_column(n)][t], abs=1e-12)
    assert max(abs(r[p]) for r in rows for p in parts) > 1e-3  # the shares are not all 0
    # the per-reward shares and one batch baseline make each token's advantage
    assert len({round(r["advantage"] - sum(r[p] for p in parts), 5) for r in rows}) == 1


def test_a_trl_run_logs_per_token_tables_that_trackio_reads_back(tmp_path):
    pytest.importorskip("trackio", reason="trackio is not installed (requirements-dev.txt)")
    home = str(tmp_path / "trackio")
    proc = _train_one_step(tmp_path, "trackio", TRACKIO_DIR=home)
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("LOGS ")]
    (logged,) = json.loads(line[5:])
    assert logged["step"] == 1 and logged["table"]["_type"] == "trackio.table"
    _check_rows(logged["table"]["_value"], tmp_path / "run")
    # trackio's own command line (what a user or an agent asks it) reads the same table at step 1
    env = dict(os.environ, TRACKIO_DIR=home)
    cli = [sys.executable, "-m", "trackio.cli", "get", "metric", "--project", "mrtpo-test", "--run", "one-step"]
    got = subprocess.run(
        [*cli, "--metric", trl_tracking.TABLE_KEY, "--step", "1", "--json"], env=env, capture_output=True, text=True
    )
    assert got.returncode == 0, got.stderr[-2000:]
    (value,) = json.loads(got.stdout)["values"]
    assert value["step"] == 1 and value["value"] == logged["table"]


def _wandb_records(path):
    """The records of a ``.wandb`` run file (wandb's own protobuf ``Record``s), in order. The file is a
    LevelDB-style log: a 7-byte header (``:W&B``, magic, version), then 32 KiB blocks of chunks, each with a
    4-byte checksum, a 2-byte length and a type (1 whole, 2 first, 3 middle, 4 last); a block's tail shorter than
    a chunk header is padding."""
    import struct

    from wandb.proto import wandb_internal_pb2

    data, pos, pending = path.read_bytes(), 7, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        if left < 7:
            pos += left
            continue
        _, size, kind = struct.unpack("<IHB", data[pos : pos + 7])
        pending += data[pos + 7 : pos + 7 + size]
        pos += 7 + size
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def test_a_trl_run_logs_per_token_tables_to_wandb_offline(tmp_path):
    pytest.importorskip("wandb", reason="wandb is not installed (requirements-dev.txt)")
    wandb_dir = tmp_path / "wandb-home"
    wandb_dir.mkdir()
    _train_one_step(
        tmp_path,
        "wandb",
        WANDB_MODE="offline",
        WANDB_DIR=str(wandb_dir),
        WANDB_PROJECT="mrtpo-test",
        WANDB_SILENT="true",
        # its cache, staging, config and data folders too: nothing is written outside the test's folder
        **{f"WANDB_{k}_DIR": str(wandb_dir / k.lower()) for k in ("CACHE", "ARTIFACT", "CONFIG", "DATA")},
    )
    (run_dir,) = (wandb_dir / "wandb").glob("offline-run-*")
    (run_file,) = run_dir.glob("run-*.wandb")
    # the history rows wandb will upload: the one holding the table names its file and the step
    history = [
        {("/".join(i.nested_key) or i.key): json.loads(i.value_json) for i in r.history.item}
        for r in _wandb_records(run_file)
        if r.WhichOneof("record_type") == "history"
    ]
    key = trl_tracking.TABLE_KEY
    (logged,) = [h for h in history if f"{key}/_type" in h]
    assert logged[f"{key}/_type"] == "table-file" and logged["train/global_step"] == 1
    table = json.loads((run_dir / "files" / logged[f"{key}/path"]).read_text())
    assert logged[f"{key}/nrows"] == len(table["data"]) and logged[f"{key}/ncols"] == len(table["columns"])
    _check_rows([dict(zip(table["columns"], row)) for row in table["data"]], tmp_path / "run")


def test_nothing_is_logged_without_a_trackio_run(tmp_path):
    (tmp_path / trl_log.LOG_DIR).mkdir()
    trl_log.write_table([{"step": 1}], tmp_path / trl_log.LOG_DIR / trl_log.token_file(1))
    assert trl_tracking.TokenTables().log_new_tables(tmp_path) == []
    with pytest.raises(ValueError, match="max_completions"):
        trl_tracking.TokenTables(max_completions=0)


def test_a_table_holds_at_most_max_completions():
    rec = {"step": 2, "group": 0, "tokens": ["a", "b"], "token_advantages": [0.5, -0.5], "reward/x": 1.0}
    rec.update({"relevance/x": [0.25, 0.75], "part/x": [0.125, 0.375]})
    records = [{**rec, "row": i} for i in range(5)]
    table = trl_tracking.token_table(records, ["x"], max_completions=3)
    assert table["row"].tolist() == [0, 0, 1, 1, 2, 2]
    assert table.iloc[1].to_dict() == {
        "step": 2,
        "row": 0,
        "group": 0,
        "position": 1,
        "token": "b",
        "advantage": -0.5,
        "reward/x": 1.0,
        "relevance/x": 0.75,
        "part/x": 0.375,
    }
