"""The credit methods in the Token relevance tab, in a real browser: the compare view draws one row per credit method
(the registry's app methods) for the pinned reward with each method's share on the verifier's decision spans equal to
the library's, and the credit-method choice redraws the advantage bars. With MRTPO_SCREENSHOT_DIR set it saves the
compare view (docs/assets/screenshot_credit_compare.png)."""

import os
import re

import pytest

from tests.ui.harness import require_browser

sync_api = require_browser()
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(page, page_errors):
    page.locator("#replay-btn").wait_for()
    yield page
    assert page_errors == []


def _text(page, selector: str, pattern: str) -> str:
    page.wait_for_function(
        "([sel, pat]) => { const e = document.querySelector(sel); return e && new RegExp(pat).test(e.innerText); }",
        arg=[selector, pattern],
    )
    return page.locator(selector).inner_text()


def test_compare_view_and_credit_choice(page, checkpoint):
    from mrtpo_viz.relevance import replay
    from mrtpo_viz.ui.example_picker import get_example
    from mrtpo_viz.ui.policy_choice import get_policy
    from mrtpo_viz.tasks import get_verifier
    from mrtpo_viz.viz.credit_compare import app_credits, compare_credits

    ex = get_example("tool_calling", 1)
    page.get_by_label("Example (test split)").first.click()
    page.get_by_role("option", name=re.compile(r"^1:")).first.click()
    page.wait_for_function("ref => document.querySelector('#response-box textarea').value === ref", arg=ex.reference)
    info = get_verifier("tool_call.correctness").info(ex)  # the boxes refill after the response
    page.wait_for_function("info => [...document.querySelectorAll('textarea')].some(t => t.value === info)", arg=info)
    page.locator("#replay-btn").click()
    page.locator("#advantage-bars .barlayer path").first.wait_for()
    page.locator("#credit-compare").get_by_text("Compare credit methods on this response").click()
    page.locator("#credit-compare-plot .heatmaplayer").wait_for()
    rel = replay(get_policy(checkpoint), ex, ex.reference, list(ex.verifiers))
    comp = compare_credits(rel, rel.verifiers[0])
    labels = page.locator("#credit-compare-plot .ytick text").evaluate_all("els => els.map(e => e.textContent)")
    rows = sorted(re.sub(r" \(.*", "", x) for x in labels)  # plotly draws the ticks bottom-up
    assert rows == sorted(app_credits()) and comp.methods == app_credits() and len(rows) == 7  # one row per method
    table = _text(page, "#credit-compare-text", r"share on spans")
    assert comp.uniform_share is not None and f"{comp.uniform_share:.1%}" in table
    for name, share in zip(comp.methods, comp.span_share):
        assert re.search(rf"{re.escape(name)}\s+{re.escape(f'{share:.1%}')}", table), (name, share, table)
    assert comp.span_share[comp.methods.index("mrtpo:oracle-mask")] == pytest.approx(1.0)  # all on the spans
    if os.environ.get("MRTPO_SCREENSHOT_DIR"):
        page.locator("#credit-compare").screenshot(
            path=os.path.join(os.environ["MRTPO_SCREENSHOT_DIR"], "screenshot_credit_compare.png")
        )
    page.locator("#credit-method input").first.click()
    page.get_by_role("option", name="entropy_top", exact=True).first.click()
    text = _text(page, "body", r"Credit method entropy_top: token advantages")  # the Markdown drops the backticks
    assert "not GDPO's, by design" in text
