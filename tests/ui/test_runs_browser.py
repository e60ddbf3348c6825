"""The Runs tab in a real browser (playwright driving Debian's chromium): open the 2-step run of
examples/trl_mrtpo.py by its folder under MRTPO_RUNS_DIR, pick a completion, and check that its tokens show with
the relevance the run logged.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import pytest

from tests.ui.harness import require_browser

sync_api = require_browser()
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app_env(trl_example_run) -> dict:
    return {"MRTPO_RUNS_DIR": str(trl_example_run[0])}


def test_the_runs_tab_opens_a_trl_run_and_shows_a_completions_tokens(page, trl_example_run, tmp_path):
    import pandas as pd

    from mrtpo_viz.integrations import trl_log

    page.get_by_role("tab", name="Runs").click()
    page.locator("#run-path textarea, #run-path input").first.fill("example")
    page.locator("#run-open").click()
    page.wait_for_function("() => document.querySelector('#run-status').innerText.includes('Opened an MRTPO run')")
    page.locator("#run-curves .main-svg .scatterlayer .trace").first.wait_for()
    # the table of the step's 8 completions (a virtual table: its grid counts the header row too)
    page.wait_for_function(
        "() => document.querySelector('#run-table [role=grid]')?.getAttribute('aria-rowcount') === '9'"
    )
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
