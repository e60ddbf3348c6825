"""Where the bundled sample data lives: inside the installed package, found through :mod:`importlib.resources`.

The data (task examples, SQLite databases, sample rollouts, the tiny policy) ships in the wheel as package data under
``mrtpo_viz/sample_data/``; nothing here depends on the working directory or on a source checkout. (The repository
keeps a ``sample_data`` link at its top level for browsing.)
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from ..names import BUNDLED_POLICY


def sample_data() -> Path:
    """Root of the bundled sample data (``tasks/``, ``databases/``, ``rollouts/``, ``policies/``)."""
    return Path(str(files("mrtpo_viz") / "sample_data"))


SAMPLE_DATA = sample_data()
"""The same root, as a constant for the common case."""


def task_file(task: str) -> Path:
    """The bundled examples of a task family: ``sample_data/tasks/<task>.jsonl``."""
    return SAMPLE_DATA / "tasks" / f"{task}.jsonl"


def database_file(name: str) -> Path:
    """A bundled SQLite database by name: ``sample_data/databases/<name>.sqlite``."""
    return SAMPLE_DATA / "databases" / f"{name}.sqlite"


BUNDLED_POLICIES = SAMPLE_DATA / "policies"
"""Folder of the bundled policies."""
BUNDLED_POLICY_DIR = BUNDLED_POLICIES / BUNDLED_POLICY
"""The bundled tiny policy's folder (``load_policy("tiny-mrtpo")`` resolves to it)."""
SAMPLE_ROLLOUTS = SAMPLE_DATA / "rollouts" / "sample_rollouts.jsonl"
"""A small rollouts file for the Rollouts tab and ``score``."""
