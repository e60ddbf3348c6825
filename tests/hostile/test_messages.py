"""Error messages: every message says what was wrong and what to do. Each case says what the layer below would
say instead."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from mrtpo_viz.cli import main as cli_main
from mrtpo_viz.relevance.engine import replay
from mrtpo_viz.relevance.scoring import score_rollouts
from mrtpo_viz.settings import SettingsError, get_settings
from mrtpo_viz.tasks.bundled_data import database_file
from mrtpo_viz.tasks.sandbox import run_query
from tests.apphelpers import REPO

pytestmark = pytest.mark.usefixtures("sample_data_unchanged")
ROW = {"task": "instruction_following", "prompt": "Say hi.", "response": "hi", "verifiers": ["no.such"]}


def test_a_file_with_no_scorable_rollout_writes_a_table_that_reads_back(tiny_policy, tmp_path):
    """Otherwise: the empty CSV has no header, so reading it back (the app's Rollouts tab) raises pandas' 'No columns
    to parse from file' instead of saying that no rollout could be scored."""
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(ROW) + "\n")
    last = list(score_rollouts(tiny_policy, path, out=tmp_path / "o.csv"))[-1]
    assert last.scored == 0 and "unknown verifier 'no.such'" in last.problems[0][1]
    frame = pd.read_csv(tmp_path / "o.csv")
    assert frame.empty and {"id", "token", "verifier", "score"} <= set(frame.columns)


@pytest.mark.parametrize("where", ["response", "prompt", "information"])
def test_a_lone_surrogate_is_named(tiny_policy, where):
    """Otherwise: the tokenizer's 'TextEncodeInput must be Union[TextInputSequence, Tuple[...]]'."""
    bad = "hi \ud800 there"
    args = {"prompt": "Say hi.", "response": "hello", "information": "No commas."} | {where: bad}
    with pytest.raises(ValueError, match=r"unpaired surrogate \(\\ud800 at character 3\)"):
        replay(
            tiny_policy,
            args["prompt"],
            args["response"],
            ["ifeval.no_comma"],
            infos={"ifeval.no_comma": args["information"]},
        )


def test_a_table_valued_pragma_is_named_as_such():
    """Otherwise: 'only reading is allowed; denied: UPDATE sqlite_master' (what SQLite asks for internally)."""
    res = run_query(database_file("shop"), "SELECT name FROM pragma_table_info('orders')")
    assert "denied: PRAGMA function pragma_table_info (table-valued pragmas are refused" in res.error


def test_a_vanishing_temperature_is_refused_with_the_range(tiny_policy):
    """Otherwise: torch's 'probability tensor contains either inf, nan or element < 0' for temperature 1e-300."""
    with pytest.raises(ValueError, match=r"temperature must be 0 \(greedy\) or lie in \[0.001, 100\], got 1e-300"):
        tiny_policy.generate("Say hi.", max_new_tokens=4, temperature=1e-300, seed=0)


def test_a_corrupt_existing_output_is_named(tiny_policy_dir, tmp_path, capsys):
    """Otherwise: 'error: Expecting value: line 1 column 1 (char 0)', not saying which file or what to do."""
    path, out = tmp_path / "r.jsonl", tmp_path / "out.jsonl"
    path.write_text(json.dumps({**ROW, "verifiers": ["ifeval.no_comma"]}) + "\n")
    out.write_text("this is not JSON\n")
    assert cli_main(["score", str(path), "--out", str(out), "--checkpoint", str(tiny_policy_dir)]) == 2
    err = capsys.readouterr().err
    assert f"the existing output {out} cannot be read" in err and "move it away or delete it" in err


def test_an_infinite_setting_is_refused_by_name():
    """Otherwise: MRTPO_MAX_UPLOAD_MB=inf passes a loose check and start-up crashes later (OverflowError traceback)."""
    with pytest.raises(SettingsError, match="MRTPO_MAX_UPLOAD_MB must be at most 1,024, got inf"):
        get_settings({"MRTPO_MAX_UPLOAD_MB": "inf"})


def _serve(env_change: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", **env_change}
    return subprocess.run(
        [sys.executable, "-m", "mrtpo_viz", "serve", "--port", "1"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    "var, value, says",
    [
        ("MRTPO_CHECKPOINT", "/etc/passwd", "MRTPO_CHECKPOINT='/etc/passwd' is neither a model folder"),
        ("MRTPO_MAX_UPLOAD_MB", "inf", "MRTPO_MAX_UPLOAD_MB must be at most 1,024"),
    ],
)
def test_serve_stops_before_serving_on_a_bad_setting(var, value, says):
    """Otherwise: MRTPO_CHECKPOINT=/etc/passwd still serves (every request then fails); inf crashes (traceback)."""
    proc = _serve({var: value})
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr


def test_typed_paths_do_not_reveal_which_folders_exist(tmp_path):
    """Otherwise: '/root/.ssh'-like existing folders answer 'is not a model folder (no config.json)', absent ones
    'policy not found': a typed path tells whether a folder exists. The app answers alike."""
    from mrtpo_viz.ui.policy_choice import get_policy

    (tmp_path / "exists").mkdir()
    (tmp_path / "a-file").write_text("x")
    messages = set()
    for name in (tmp_path / "exists", tmp_path / "absent", tmp_path / "a-file", tmp_path / "exists" / ".."):
        with pytest.raises(ValueError) as err:
            get_policy(str(name))
        messages.add(str(err.value).replace(str(name), "<path>"))
    assert len(messages) == 1 and "policy not found: '<path>' is not a model folder" in messages.pop()


def test_download_folders_of_stopped_processes_are_removed(tmp_path, monkeypatch):
    """Each process cleans not only its own ``mrtpo-viz-downloads-<pid>`` but those that earlier processes left."""
    import tempfile

    from mrtpo_viz.ui import downloads

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    stale = tmp_path / f"mrtpo-viz-downloads-{dead}"
    (stale / "relevance-x").mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(downloads, "_swept", [])
    new = downloads.download_folder("relevance-")
    assert not stale.exists() and new.is_dir() and new.parent.name == f"mrtpo-viz-downloads-{os.getpid()}"
