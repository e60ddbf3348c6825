"""The wheel works anywhere: built, installed outside the checkout, and run from another folder it replays an example,
runs the README's Python snippet and serves the app on the bundled policy (``scripts/wheel_check.py``; its
``--venv`` form does the same in a fresh virtual environment)."""

import subprocess
import sys

import pytest

from tests.apphelpers import REPO


@pytest.mark.slow
def test_the_wheel_replays_runs_the_readme_snippet_and_serves_outside_the_checkout():
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "wheel_check.py")], capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "ok  mrtpo-viz bench says it needs a checkout" in out.stdout
    assert "ok  mrtpo-viz serve: **Loaded** <code>tiny-mrtpo</code>: 1.3M params" in out.stdout
    assert "the wheel works outside the checkout" in out.stdout
