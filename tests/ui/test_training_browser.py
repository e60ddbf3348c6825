"""The Live training tab in a real browser (playwright driving Debian's chromium): Start streams curves, Stop leaves
"Stopped at step n" that no late update overwrites, no output in Gradio's error state and the curves with their
points, frees the training slot, and a second run starts.

The app runs in this process (``prevent_thread_lock``), so the test can read the training slots directly.
Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import re
import time

import pytest

from tests.ui.browser import ERROR_STATE
from tests.ui.harness import require_browser

sync_api = require_browser()
pytestmark = pytest.mark.browser


def _status(page) -> str:
    return page.locator("#live-status").inner_text()


def _wait_for_slot(free_before: int, timeout_s: float = 120) -> None:
    """The cancelled generator is closed once its running step ends: wait for its slot to come back."""
    from mrtpo_viz.ui import training_tab

    deadline = time.monotonic() + timeout_s
    while training_tab.SLOTS.free() < free_before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert training_tab.SLOTS.free() == free_before


def test_start_then_stop_leaves_stopped_at_step_n(page):
    from mrtpo_viz.ui import training_tab

    free = training_tab.SLOTS.free()
    page.get_by_role("tab", name="Live training").click()
    page.locator("#live-start").click()
    page.wait_for_function("() => /Step [2-9]\\d*\\//.test(document.querySelector('#live-status').innerText)")
    page.locator("#live-curves .js-plotly-plot .scatterlayer .trace").first.wait_for()
    assert page.locator("#live-sample .mrtpo-train-tok").count() > 3  # the latest sample, token by token
    page.locator("#live-stop").click()
    page.wait_for_function("() => document.querySelector('#live-status').innerText.includes('Stopped at step')")
    n = int(re.search(r"Stopped at step (\d+)", _status(page)).group(1))
    assert 1 <= n < training_tab.LIVE.steps
    # every curve keeps its points (n or n + 1 steps per method)
    points = page.locator("#live-curves .scatterlayer .trace path.js-line").evaluate_all(
        "ps => ps.map(p => (p.getAttribute('d') || '').split('L').length)"
    )
    assert points and min(points) >= n, points
    page.wait_for_function("() => document.querySelector('#live-summary').innerText.includes('Summary after')")
    summary = page.locator("#live-summary").inner_text()
    assert all(f"{m}: final mean reward" in summary for m in training_tab.LIVE.methods)
    _wait_for_slot(free)
    page.wait_for_timeout(1500)  # a late update (or a cancel's error state) would land here
    assert f"Stopped at step {n}" in _status(page)
    assert page.evaluate(ERROR_STATE) == []  # no output in Gradio's error state (a cancel put "Error" on all)
    # the slot came back: a second run starts (not "busy") and stops the same way
    page.locator("#live-start").click()
    page.wait_for_function("() => /Step \\d+\\//.test(document.querySelector('#live-status').innerText)")
    page.locator("#live-stop").click()
    page.wait_for_function("() => document.querySelector('#live-status').innerText.includes('Stopped at step')")
    _wait_for_slot(free)
