"""A progressive replay in a real browser (playwright driving Debian's chromium): the tokens appear without colour, then
verifier 1's row coloured while verifier 2 is replayed (the heatmap not drawn until the result), then the finished
result, with no element in Gradio's error state at any point. The replay is made slow on the bundled policy: every
replay goes row by row (the threshold set to 0) and each row's forward waits 3 s first. A screenshot of the partial
state is kept in the test's folder.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure."""

import time

import pytest

from mrtpo_viz.relevance import progressive
from tests.ui.browser import browser_page, error_state, served_app, wait_for_text

pytestmark = pytest.mark.browser
ROW_WAIT_S = 3.0


@pytest.fixture(scope="module")
def app_url():
    real = progressive.split_logits_each

    def slow(*args, **kwargs):
        for logits in real(*args, **kwargs):
            yield logits
            time.sleep(ROW_WAIT_S)  # before the next row: the page shows each step for this long

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(progressive, "PROGRESSIVE_FROM_S", 0.0)
        mp.setattr(progressive, "split_logits_each", slow)
        with served_app() as url:
            yield url


@pytest.fixture(scope="module")
def page(app_url, tmp_path_factory):
    with browser_page(app_url, tmp_path_factory.mktemp("chromium-profile")) as page:
        yield page
    assert page.errors == []  # no script error on the page


ROWS = "#relevance-tokens .tv-row"


def _row_states(page) -> list[dict]:
    """Per token row: how many tokens are coloured (have a score) and how many wait for their row."""
    return page.evaluate(
        f"""() => [...document.querySelectorAll('{ROWS}')].map(r => ({{
            scored: r.querySelectorAll('.tv-tok[data-score]').length,
            pending: r.querySelectorAll('.tv-tok.tv-pending').length,
            coloured: [...r.querySelectorAll('.tv-tok')].filter(e => e.style.background !== '').length }}))"""
    )


def test_rows_appear_one_by_one_and_the_result_replaces_them(page, tmp_path):
    page.locator("#replay-btn").click()
    wait_for_text(page, "#relevance-status", r"Replaying verifier 1 of 2 \(tool_call\.format\)")
    page.wait_for_function(f"() => document.querySelectorAll('{ROWS} .tv-tok.tv-pending').length > 0")
    rows = _row_states(page)
    T = rows[0]["pending"]
    assert len(rows) == 2 and T > 5 and rows == [{"scored": 0, "pending": T, "coloured": 0}] * 2  # tokens, no colour
    assert error_state(page) == []

    wait_for_text(page, "#relevance-status", r"Replaying verifier 2 of 2 \(tool_call\.correctness\)")
    page.wait_for_function(f"() => document.querySelector('{ROWS} .tv-tok[data-score]') !== null")
    rows = _row_states(page)
    assert rows == [{"scored": T, "pending": 0, "coloured": T}, {"scored": 0, "pending": T, "coloured": 0}]
    assert page.locator("#relevance-heatmap .js-plotly-plot").count() == 0  # drawn once, with the result
    assert page.locator("#relevance-tokens .tv-title").inner_text().startswith("Replaying verifier 2 of 2")
    page.screenshot(path=str(tmp_path / "progressive_replay_partial.png"), full_page=True)
    assert (tmp_path / "progressive_replay_partial.png").stat().st_size > 10_000
    assert error_state(page) == []

    wait_for_text(page, "#relevance-status", r"^Replayed \d+ tokens")
    page.locator("#relevance-heatmap .js-plotly-plot .main-svg").first.wait_for()
    page.wait_for_function(f"() => document.querySelectorAll('{ROWS} .tv-tok.tv-pending').length === 0")
    assert _row_states(page) == [{"scored": T, "pending": 0, "coloured": T}] * 2
    assert page.locator("#relevance-tokens .tv-title").inner_text() == ""
    assert error_state(page) == []
