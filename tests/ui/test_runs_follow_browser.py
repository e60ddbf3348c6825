"""The Runs tab in a real browser follows a verl rollout dump that grows while the tab is open: with Follow on,
lines appended to a step file and a new step file show in the reward curve, the step picker and the note, and a
bad line appended later is a message on the note, never Gradio's error state.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import pytest

from tests.ui.harness import require_browser
from tests.ui.test_runs_follow import append, line

sync_api = require_browser()
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    (runs / "growing").mkdir()
    (runs / "growing" / "1.jsonl").write_text(line(0, 1.0) + line(1, 0.0), encoding="utf-8")
    return runs


@pytest.fixture(scope="module")
def app_env(runs) -> dict:
    return {"MRTPO_RUNS_DIR": str(runs)}


CURVE = "#run-curves .main-svg .scatterlayer .trace"
"""The reward curves' traces (one per reward: acc, fmt)."""


ACC = "() => { const p = document.querySelector('#run-curves .js-plotly-plot'); return p ? [...p.data[0].y] : []; }"


def acc_points(page) -> list[float]:
    """The y values of the first panel's curve (acc), from plotly's own data on the page."""
    return page.evaluate(ACC)


def test_follow_shows_lines_and_steps_that_appear_while_the_tab_is_open(page, runs, tmp_path):
    from tests.ui.browser import error_state, wait_for_text

    page.get_by_role("tab", name="Runs").click()
    page.locator("#run-path textarea, #run-path input").first.fill("growing")
    page.locator("#run-open").click()
    wait_for_text(page, "#run-status", "a verl rollout dump")
    page.locator(CURVE).first.wait_for()
    assert acc_points(page) == [0.5]

    page.locator("#run-follow input").check()
    wait_for_text(page, "#run-follow-note", r"Following: 1 step file\(s\), the last step 1")
    # the trainer writes: two more lines of step 1, and step 2
    append(runs / "growing" / "1.jsonl", line(2, 1.0) + line(3, 1.0))
    (runs / "growing" / "2.jsonl").write_text(line(4, 1.0) + line(5, 0.0) + line(6, 0.0), encoding="utf-8")
    wait_for_text(page, "#run-follow-note", r"the last step 2")
    page.wait_for_function(f"() => ({ACC})().length == 2")
    assert acc_points(page) == pytest.approx([0.75, 1 / 3])
    # step 2 is in the step picker, and opens
    page.locator("#run-step input").click()
    page.get_by_role("option", name="step 2", exact=True).click()
    page.wait_for_function(
        "() => document.querySelector('#run-table [role=grid]')?.getAttribute('aria-rowcount') === '4'"
    )

    # a bad line: a message on the note; the curves keep what they showed
    append(runs / "growing" / "2.jsonl", line(7, "high"))
    text = wait_for_text(page, "#run-follow-note", "2.jsonl:4")
    assert "'score' must be a number (or null), got text" in text
    assert error_state(page) == [] and acc_points(page) == pytest.approx([0.75, 1 / 3])

    # Follow off: nothing more is read
    page.locator("#run-follow input").uncheck()
    page.wait_for_timeout(500)
    (runs / "growing" / "3.jsonl").write_text(line(8, 1.0), encoding="utf-8")
    page.wait_for_timeout(5000)
    assert "2.jsonl:4" in page.locator("#run-follow-note").inner_text()
    page.screenshot(path=str(tmp_path / "runs_follow.png"), full_page=True)
