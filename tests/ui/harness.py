"""The browser harness's constants, in one place: Debian's chromium, its flags, the page timeout, and
:func:`require_browser` (skip a module without chromium, fail in CI). Imported by ``conftest.py``, ``browser.py``
and the browser test modules; importing this module skips nothing."""

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 180_000  # a loaded 2-core CI machine: model load plus a replay or the first training steps take a while


def require_browser():
    """Skip the calling module when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that
    is a failure; returns ``playwright.sync_api``."""
    if not CHROMIUM.exists():
        if os.environ.get("MRTPO_REQUIRE_BROWSER") == "1":
            pytest.fail(f"MRTPO_REQUIRE_BROWSER=1 but {CHROMIUM} is missing (apt-get install chromium)", pytrace=False)
        pytest.skip(
            f"{CHROMIUM} is missing (apt-get install chromium); set MRTPO_REQUIRE_BROWSER=1 to fail instead",
            allow_module_level=True,
        )
    return pytest.importorskip("playwright.sync_api")
