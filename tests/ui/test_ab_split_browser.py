"""The A/B tab's "compare over N examples" in a real browser (playwright driving Debian's chromium): progress while
it runs, Stop keeping the cases done (plot, table, no error state), a full run's summary, and the worst case opened
in the single-example view with its verifier and wordings.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import re

import pytest

from tests.ui.browser import browser_page, error_state, open_tab, served_app, wait_for_text

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(checkpoint, tmp_path_factory):
    with served_app(MRTPO_CHECKPOINT=checkpoint) as url:
        with browser_page(url, tmp_path_factory.mktemp("chromium-profile")) as page:
            yield page
        assert page.errors == []


def test_compare_over_n_examples_stops_keeps_and_opens_a_case(page):
    open_tab(page, "Verifier information A/B")
    page.locator("#ab-split-btn").click()
    wait_for_text(page, "#ab-split-status", r"Comparing over the tool_calling test split: [1-9]\d* / 40 cases")
    page.locator("#ab-split-stop").click()
    said = wait_for_text(page, "#ab-split-status", r"Stopped after \d+")
    done = int(re.search(r"Stopped after (\d+)\*?\*? of 40 cases", said.replace("**", "")).group(1))
    assert 1 <= done < 40
    page.locator("#ab-split-plot .barlayer path").first.wait_for()
    assert page.locator("#ab-split-plot .barlayer path").count() == done  # one bar per case done
    page.wait_for_timeout(1000)
    assert error_state(page) == []
    # a whole run of 3 examples, then the worst case for B opens above
    page.locator("#ab-split-n input[type=number]").fill("3")
    page.locator("#ab-split-n input[type=number]").press("Enter")
    page.locator("#ab-split-btn").click()
    said = wait_for_text(page, "#ab-split-status", r"^6 / 6 cases of 3 examples")
    assert re.search(r"mean [+-][\d.e-]+ \[[+-][\d.e-]+, [+-][\d.e-]+\] \(95% paired t\); B beats A in \d+%", said)
    picked = page.locator("#ab-split-pick input").input_value()  # "1. <example> · <verifier> (<B - A>)"
    example, verifier = re.search(r"^1\. (\S+) · (\S+) \(", picked).groups()
    assert page.locator("#ab-split-table").get_by_text(example).count() >= 1  # the worst case is in the table
    page.locator("#ab-split-open").click()
    wait_for_text(page, "#ab-status", rf"Opened case 1 \(`?{example}`?, `?{re.escape(verifier)}`?\)")
    assert page.locator("#ab-verifier input").input_value() == verifier
    page.locator("#ab-btn").click()
    wait_for_text(page, "#ab-status", rf"^Compared two information texts for {re.escape(verifier)}")
    assert error_state(page) == []
