"""The Runs tab in a real browser (playwright driving Debian's chromium): open the 2-step run of
examples/trl_mrtpo.py by its folder under MRTPO_RUNS_DIR, pick a completion, and check that its tokens show with
the relevance the run logged.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""
import os
from pathlib import Path

import pytest

from tests.apphelpers import free_port, patient_url_ok

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 180_000  # a loaded 2-core CI machine

if not CHROMIUM.exists():
    if os.environ.get("MRTPO_REQUIRE_BROWSER") == "1":
        pytest.fail(f"MRTPO_REQUIRE_BROWSER=1 but {CHROMIUM} is missing (apt-get install chromium)", pytrace=False)
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium); set MRTPO_REQUIRE_BROWSER=1 to fail instead",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def app_url(trl_example_run):
    import torch

    from mrtpo_viz.ui import build_app, launch_options

    torch.set_num_threads(1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MRTPO_RUNS_DIR", str(trl_example_run[0]))  # read by every request: kept for the module
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


def test_the_runs_tab_opens_a_trl_run_and_shows_a_completions_tokens(page, trl_example_run, tmp_path):
    import pandas as pd

    from mrtpo_viz.integrations import trl_log

    page.get_by_role("tab", name="Runs").click()
    page.locator("#run-path textarea, #run-path input").first.fill("example")
    page.locator("#run-open").click()
    page.wait_for_function("() => document.querySelector('#run-status').innerText.includes('Opened an MRTPO run')")
    page.locator("#run-curves .main-svg .scatterlayer .trace").first.wait_for()
    # the table of the step's 8 completions (a virtual table: its grid counts the header row too)
    page.wait_for_function("() => document.querySelector('#run-table [role=grid]')?.getAttribute('aria-rowcount')"
                           " === '9'")
    row = 2
    page.locator("#run-row input").fill(str(row))
    page.locator("#run-show").click()
    tokens = page.locator("#run-tokens .mrtpo-tok")
    tokens.first.wait_for()
    log = pd.read_parquet(trl_example_run[1] / trl_log.LOG_DIR / trl_log.token_file(2))  # the preselected step
    record = log[log["row"] == row].iloc[0]
    names = ["tool_call.format", "tool_call.correctness"]
    assert page.locator("#run-tokens .mrtpo-row").count() == len(names)
    assert tokens.count() == len(names) * len(record["tokens"])
    shown = [float(s) for s in tokens.evaluate_all("els => els.map(e => e.dataset.score)")]
    want = [float(v) for n in names for v in record[trl_log.relevance_column(n)]]
    assert shown == pytest.approx(want, rel=5e-3, abs=1e-6)  # the token view carries 3 significant digits
    assert max(shown) > 0.01
    page.locator("#run-bars .barlayer path").first.wait_for()  # the token advantages, stacked per reward
    page.screenshot(path=str(tmp_path / "runs_tab.png"), full_page=True)
    assert (tmp_path / "runs_tab.png").stat().st_size > 30_000
