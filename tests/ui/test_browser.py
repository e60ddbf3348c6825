"""The app in a real browser (playwright driving Debian's chromium), tab by tab: replay, click a token and read the
pinned panel (Token relevance, A/B, Rollouts); a free prompt with ``ifeval.lowercase`` scores a lowercase
response 1; switching the task clears the old results; Enter in a slider's number box redraws; Generate locks
Replay until the new response is in the box. No screenshots here: ``python scripts/screenshots.py`` takes them.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import json
import re

import pytest

from tests.ui.harness import require_browser

sync_api = require_browser()
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(page, page_errors):
    """The harness's page, once the app is drawn; no script error on the page, in any test."""
    page.locator("#replay-btn").wait_for()
    yield page
    assert page_errors == []


def choose(page, label: str, option, tab=None) -> None:
    """Open the dropdown ``label`` (of the visible tab) and pick ``option`` (a string or a pattern)."""
    scope = page.locator(f"#{tab}") if tab else page
    scope.get_by_label(label).first.click()
    page.get_by_role("option", name=option, exact=isinstance(option, str)).first.click()


def wait_for_text(page, selector: str, pattern: str) -> str:
    """Wait until the element's text matches the regex; returns the text."""
    page.wait_for_function(
        "([sel, pat]) => { const e = document.querySelector(sel); return e && new RegExp(pat).test(e.innerText); }",
        arg=[selector, pattern],
    )
    return page.locator(selector).inner_text()


def pinned_panel(page, view: str, k: int, t: int) -> str:
    """Click token ``t`` of row ``k`` in the token view ``view`` and return the panel's text once it is pinned."""
    page.locator(f"#{view} .tv-tok[data-k='{k}'][data-t='{t}']").click()
    return wait_for_text(page, f"#{view} .tv-panel", rf"^token {t}\b[\s\S]*pinned")


def test_relevance_tab_click_a_token_pins_its_panel_and_keys_move_it(page, checkpoint):
    from mrtpo_viz.relevance import replay
    from mrtpo_viz.ui.example_picker import get_example
    from mrtpo_viz.ui.policy_choice import get_policy
    from mrtpo_viz.tasks import get_verifier

    ex = get_example("tool_calling", 1)
    choose(page, "Example (test split)", re.compile(r"^1:"))
    page.wait_for_function("ref => document.querySelector('#response-box textarea').value === ref", arg=ex.reference)
    info = get_verifier("tool_call.correctness").info(ex)  # the boxes refill after the response
    page.wait_for_function("info => [...document.querySelectorAll('textarea')].some(t => t.value === info)", arg=info)
    page.locator("#replay-btn").click()
    page.locator("#relevance-heatmap .heatmaplayer").wait_for()
    page.locator("#advantage-bars .barlayer path").first.wait_for()
    rel = replay(get_policy(checkpoint), ex, ex.reference, list(ex.verifiers))
    tokens = page.locator("#relevance-tokens .tv-tok")
    assert tokens.count() == rel.K * rel.T  # every verifier's row holds every token
    t = int(rel.scores[1].argmax())
    panel = pinned_panel(page, "relevance-tokens", 1, t)
    for name in ex.verifiers:
        assert name in panel
    want = f"{float(rel.scores[1, t]):.3g}"
    assert re.search(rf"tool_call\.correctness\s+{re.escape(want)}\s", panel), panel  # its relevance, 3 digits
    assert "without information: log p" in panel and "log p with" in panel and "top predictions" in panel
    wait_for_text(page, "#relevance-tokens .tv-panel", r"advantage: GDPO [+\u2212-][\d.]+ \(uniform\) · MRTPO")
    page.keyboard.press("ArrowLeft")  # the keyboard moves the pin
    wait_for_text(page, "#relevance-tokens .tv-panel", rf"^token {t - 1}\b[\s\S]*pinned")
    page.keyboard.press("Escape")
    wait_for_text(page, "#relevance-tokens .tv-panel", r"^Hover or click a token")
    ticks = page.locator("#relevance-heatmap .xtick text").evaluate_all("els => els.map(e => e.textContent)")
    assert len(ticks) > 5 and all(re.match(r"^\d+ ", x) for x in ticks)  # "t token" labels under the heatmap
    weights = wait_for_text(page, "#weight-diagnostics", r"Gini\s+0\.\d+\s+0\.\d")  # one column per verifier
    assert "format" in weights and "correctness" in weights and "on spans" in weights


def test_enter_in_a_slider_number_box_redraws(page):
    box = page.locator("#alpha input[type='number']")
    box.fill("0")
    box.press("Enter")
    # alpha = 0 is GDPO: every verifier's weights are uniform (Gini 0, effective-token ratio 1)
    wait_for_text(page, "#weight-diagnostics", r"Gini\s+0\s+0\s[\s\S]*effective tokens\s+1\s+1\s")


def test_switching_the_task_clears_the_old_results(page):
    assert page.locator("#relevance-tokens .tv-tok").count() > 0  # the results of the test above
    choose(page, "Task family", "text_to_sql")
    wait_for_text(page, "#relevance-status", r"earlier results were cleared")
    page.wait_for_function("() => !document.querySelector('#relevance-tokens .tv-tok')")
    assert "tool_call" not in page.locator("#verdicts").inner_text()
    assert page.locator("#relevance-heatmap .heatmaplayer").count() == 0  # the placeholder again


def test_a_free_prompt_with_ifeval_lowercase_scores_a_lowercase_response_1(page):
    choose(page, "Task family", "instruction_following")
    wait_for_text(page, "#relevance-status", r"cleared")
    choose(page, "Example (test split)", re.compile(r"^free prompt"))
    page.wait_for_function("() => document.querySelector('#prompt-box textarea').value === ''")
    page.locator("#prompt-box textarea").fill("Describe the sea in one sentence, all in lowercase.")
    page.locator("#response-box textarea").fill("the sea is calm and blue today.")
    page.locator("#verifier-choice").get_by_label("ifeval.lowercase", exact=True).check()
    page.wait_for_function(
        "() => [...document.querySelectorAll('textarea')].some(t => "
        "t.value.startsWith('Your entire response should be in English, and in all lowercase'))"
    )
    page.locator("#replay-btn").click()
    verdicts = wait_for_text(page, "#verdicts", r"ifeval\.lowercase")
    assert re.search(r"ifeval\.lowercase\s+1\s", verdicts), verdicts
    wait_for_text(page, "#relevance-tokens .tv-rows", r"ifeval\.lowercase · reward 1")
    page.locator("#response-box textarea").fill("The sea is calm.")  # a capital: reward 0
    page.locator("#replay-btn").click()
    wait_for_text(page, "#verdicts", r"ifeval\.lowercase\s+0\s")


def test_generate_locks_replay_until_the_new_response_is_in(page):
    before = page.locator("#response-box textarea").input_value()
    # record whether Replay is ever disabled (a poll could miss a short generation on a fast machine)
    page.evaluate("""() => { window.__replayLocked = false; new MutationObserver(() => {
        const b = document.querySelector('#replay-btn'); if (b && b.disabled) window.__replayLocked = true;
    }).observe(document.body, {attributes: true, subtree: true, childList: true}); }""")
    page.locator("#generate-btn").click()
    page.wait_for_function("() => window.__replayLocked")
    page.wait_for_function("() => !document.querySelector('#replay-btn').disabled")
    wait_for_text(page, "#relevance-status", r"Generated \d+ tokens")
    assert page.locator("#response-box textarea").input_value() != before


def test_ab_tab_click_a_token_pins_its_panel(page):
    page.get_by_role("tab", name="Verifier information A/B").click()
    page.locator("#ab-btn").click()
    page.locator("#ab-diff .heatmaplayer").first.wait_for()
    assert page.locator("#ab-tokens-a .tv-h").inner_text() == "A"
    assert page.locator("#ab-tokens-b .tv-h").inner_text() == "B"
    panel = pinned_panel(page, "ab-tokens-a", 0, 3)
    assert "tool_call.format" in panel and "log p with" in panel
    panel_b = wait_for_text(page, "#ab-tokens-b .tv-panel", r"^token 3\b[\s\S]*pinned")  # B follows A's pin
    assert panel_b.splitlines()[1] == panel.splitlines()[1]  # the same token, replayed with the other information


def test_rollouts_tab_click_a_token_pins_its_panel(page, tmp_path):
    from mrtpo_viz.tasks.bundled_data import SAMPLE_ROLLOUTS

    rows = [json.loads(line) for line in SAMPLE_ROLLOUTS.read_text(encoding="utf-8").splitlines()[:2]]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    page.get_by_role("tab", name="Rollouts").click()
    page.locator("#rollouts-upload input[type='file']").set_input_files(str(path))
    page.wait_for_timeout(500)  # the upload lands before the click
    page.locator("#rollouts-btn").click()
    wait_for_text(page, "#rollouts-status", r"Scored 2 rollouts of two\.jsonl")
    page.locator("#rollout-tokens .tv-tok").first.wait_for()
    panel = pinned_panel(page, "rollout-tokens", 0, 2)
    assert rows[0]["id"] in page.locator("#rollout-tokens .tv-title").inner_text()
    assert "relevance" in panel and "log p with" in panel
