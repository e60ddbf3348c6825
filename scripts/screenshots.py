"""Retake the README's screenshots: run the browser tests with ``MRTPO_SCREENSHOTS=assets`` (Debian chromium).

    python scripts/screenshots.py          # writes assets/screenshot_*.png

The test suite itself writes its screenshots to a temporary folder, so a test run never rewrites a tracked file.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    env = {**os.environ, "MRTPO_SCREENSHOTS": str(ROOT / "assets"), "MRTPO_REQUIRE_BROWSER": "1",
           "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", "tests/ui/test_browser.py"], cwd=ROOT, env=env))
