"""The Live training tab in a real browser (playwright driving Debian's chromium): Start streams curves, Stop leaves
"Stopped at step n" that no late update overwrites, no output in Gradio's error state and the curves with their
points, frees the training slot, and a second run starts.

The app runs in this process (``prevent_thread_lock``), so the test can read the training slots directly.
Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""
import os
import re
import time
from pathlib import Path

import pytest

from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR
from tests.apphelpers import free_port, patient_url_ok
from tests.ui.browser import ERROR_STATE

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 180_000  # a loaded 2-core CI machine: model load plus the first steps can take a while

if not CHROMIUM.exists():
    if os.environ.get("MRTPO_REQUIRE_BROWSER") == "1":
        pytest.fail(f"MRTPO_REQUIRE_BROWSER=1 but {CHROMIUM} is missing (apt-get install chromium)",
                    pytrace=False)
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium); set MRTPO_REQUIRE_BROWSER=1 to fail instead",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def app_url(request):
    import torch

    from mrtpo_viz.ui import build_app, launch_options

    torch.set_num_threads(1)
    checkpoint = str(BUNDLED_POLICY_DIR) if (BUNDLED_POLICY_DIR / "config.json").is_file() else str(
        request.getfixturevalue("tiny_policy_dir"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MRTPO_CHECKPOINT", checkpoint)
        mp.setattr("gradio.networking.url_ok", patient_url_ok)
        demo = build_app()
        _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True, **launch_options())
    yield url
    demo.close()


@pytest.fixture(scope="module")
def page(app_url, tmp_path_factory):
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=FLAGS, viewport={"width": 1440, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(app_url, wait_until="domcontentloaded")
        yield page
        context.close()


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
        "ps => ps.map(p => (p.getAttribute('d') || '').split('L').length)")
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
