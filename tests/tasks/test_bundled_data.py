"""The sample data is found inside the installed package, never through the working directory."""

import os
from pathlib import Path

import mrtpo_viz
from mrtpo_viz.names import BUNDLED_POLICY, TASKS
from mrtpo_viz.tasks.bundled_data import (
    BUNDLED_POLICY_DIR,
    SAMPLE_DATA,
    SAMPLE_ROLLOUTS,
    database_file,
    sample_data,
    task_file,
)


def test_the_data_lives_in_the_package():
    package = Path(mrtpo_viz.__file__).resolve().parent
    assert sample_data() == SAMPLE_DATA and SAMPLE_DATA.resolve().parent == package
    assert BUNDLED_POLICY_DIR.name == BUNDLED_POLICY


def test_every_bundled_file_is_there():
    for task in TASKS:
        assert task_file(task).stat().st_size > 10_000
    for db in ("shop", "school", "company"):
        assert database_file(db).stat().st_size > 4_000
    assert SAMPLE_ROLLOUTS.is_file()
    assert {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"} <= {
        p.name for p in BUNDLED_POLICY_DIR.iterdir()
    }


def test_found_from_another_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert os.getcwd() == str(tmp_path) and task_file("tool_calling").is_file()
