"""The app's layout at a desktop's 1400x1000, a laptop's 1280x800 and a phone's 390x844, measured in the page
(playwright driving Debian's chromium), every tab visited with a result in it:

- nothing runs off the screen horizontally, except inside a table that scrolls sideways;
- the verifiers x tokens heatmap takes its column's width (its plot autosizes to it);
- no table cell breaks a number over two lines, and no header breaks inside a word (one letter per line);
- a dropdown's text stops before its arrow;
- the console shows no error or warning from the app (the console walk), and no script error.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import pytest

from tests.ui.browser import app_console, browser_page, open_tab, overflow, served_app, size, wait_for_text

pytestmark = pytest.mark.browser
SIZES = [(1400, 1000), (1280, 800), (390, 844)]

BROKEN_CELLS = """(sel) => {
  const lineCount = (node) => {  // the line boxes of one text node
    const r = document.createRange(), tops = [];
    r.selectNodeContents(node);
    for (const x of r.getClientRects()) if (x.width > 0) tops.push(x.top);
    tops.sort((a, b) => a - b);
    let lines = tops.length ? 1 : 0;
    for (let i = 1; i < tops.length; i++) if (tops[i] - tops[i - 1] > 6) lines += 1;  // a new line box
    return lines;
  };
  const bad = [];
  for (const c of document.querySelectorAll(sel)) {
    if (!c.offsetParent) continue;
    const text = c.innerText.trim();
    if (!text) continue;
    let lines = 0;
    const walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {  // the cell's text only, node by node
      const t = n.textContent.trim();
      if (!t || n.parentElement.closest('button')) continue;
      const own = lineCount(n);
      lines += own;
      // a text node breaks only between its words (a verifier name comes in pieces split at . and _, with a
      // wbr between them, so a piece broken inside is a word broken inside)
      if (own > t.split(/\\s+/).length) bad.push(`${t} (${own} lines)`);
    }
    const numeric = /^[+-]?(\\d[\\d,]*\\.?\\d*|\\.\\d+)(e[+-]?\\d+)?%?$/i.test(text);
    if (numeric && lines > 1) bad.push(`${text} (${lines} lines)`);
  }
  return bad;
}"""
"""Cells of the tables matched by the selector that break a number, or break inside a word."""

ARROW_CLEAR = """() => [...document.querySelectorAll('.secondary-wrap input[role=combobox]')]
  .filter((i) => i.offsetParent)
  .filter((i) => { const icon = i.parentElement.querySelector('.icon-wrap'); if (!icon) return false;
    const text = i.getBoundingClientRect().right - parseFloat(getComputedStyle(i).paddingRight);
    return text > icon.getBoundingClientRect().left + 0.5; }).map((i) => i.getAttribute('aria-label'))"""
"""The visible dropdowns whose text area runs under their arrow."""

TABLES = ", ".join(
    f"{t} {c}"
    for t in ("#weight-diagnostics", "#verdicts", "#ab-summary", "#live-times", "#rollouts-table", ".tv-panel")
    for c in ("td", "th")
)


@pytest.fixture(scope="module")
def app_url():
    with served_app() as url:
        yield url


def _no_overflow(page, where: str) -> None:
    seen = overflow(page)
    assert seen["scrollWidth"] <= seen["width"] and seen["over"] == [], (where, seen)


@pytest.mark.parametrize("width, height", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_every_tab_fits_the_screen_and_its_tables_and_heatmap_read(app_url, tmp_path, width, height):
    with browser_page(app_url, tmp_path / "profile", width, height) as page:
        assert page.evaluate(ARROW_CLEAR) == []
        page.locator("#replay-btn").click()
        page.locator("#relevance-heatmap .heatmaplayer").wait_for()
        page.locator("#advantage-bars .barlayer path").first.wait_for()
        wait_for_text(page, "#weight-diagnostics", r"Gini")
        page.wait_for_timeout(500)  # plotly's relayout to the container's size
        _no_overflow(page, "Token relevance")
        column = size(page, "#relevance-status")["width"]
        heat, svg = size(page, "#relevance-heatmap"), size(page, "#relevance-heatmap .main-svg")
        assert heat["width"] >= 0.95 * column, (heat, column)  # the heatmap takes its column's width
        assert abs(svg["width"] - heat["width"]) <= 2, (svg, heat)  # and its plot fills it (autosize)
        if width >= 1280:  # the cells, not the colour bar or the labels, take most of it
            assert size(page, "#relevance-heatmap .heatmaplayer")["width"] >= 0.6 * heat["width"]
        assert page.evaluate(BROKEN_CELLS, TABLES) == []

        open_tab(page, "Verifier information A/B")
        page.locator("#ab-btn").click()
        page.locator("#ab-diff .heatmaplayer").first.wait_for()
        wait_for_text(page, "#ab-status", r"^Compared")
        page.locator("#ab-tokens-a .tv-tok[data-k='0'][data-t='3']").click()  # the pinned token's table, A and B
        page.locator("#ab-tokens-b .tv-panel table").wait_for()
        _no_overflow(page, "A/B")
        assert page.evaluate(BROKEN_CELLS, TABLES) == []

        open_tab(page, "Rollouts")
        page.locator("#rollouts-btn").click()
        wait_for_text(page, "#rollouts-status", r"^Scored \d+ rollouts")
        page.locator("#rollout-tokens .tv-tok").first.wait_for()
        _no_overflow(page, "Rollouts")
        assert page.evaluate(BROKEN_CELLS, TABLES) == []

        open_tab(page, "Runs")
        _no_overflow(page, "Runs")

        open_tab(page, "Live training")
        page.locator("#live-start").click()
        wait_for_text(page, "#live-status", r"Step 1/")
        page.locator("#live-stop").click()
        wait_for_text(page, "#live-status", r"Stopped at step")
        page.locator("#live-times table").wait_for()
        _no_overflow(page, "Live training")
        assert page.evaluate(BROKEN_CELLS, TABLES) == []  # the seconds-per-phase table

        open_tab(page, "Method")
        page.locator("#study-plot .main-svg").first.wait_for() if page.locator("#study-plot").count() else None
        _no_overflow(page, "Method")
        assert page.evaluate(ARROW_CLEAR) == []
        # the console walk: every tab visited, nothing logged by the app
        assert app_console(page) == [] and page.errors == [] and page.server_errors == []
