"""Bad inputs on every tab, in a real browser (playwright driving Debian's chromium): each gets a message in place
(the tab's status line, or a warning toast where a handler has none) and no output in Gradio's error state; the
header's model line follows a replay; the first model line is drawn at full strength; on a phone (390 px) the model
line breaks no word and a pinned token's top predictions stay inside their panel.

The app runs without ``MRTPO_RUNS_DIR`` (as the README's Quick start runs it). Skipped when /usr/bin/chromium is
missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import json
import re

import pytest

from tests.ui.browser import browser_page, error_state, open_tab, served_app, wait_for_text
from tests.ui.harness import TIMEOUT_MS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """The bundled policy under a path as long as a CI runner's checkout (the model line names it; on a phone it must
    wrap between folders, whatever the machine's checkout path)."""
    import shutil

    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    deep = tmp_path_factory.mktemp("a-checkout-as-deep-as-a-continuous-integration-runners") / "mrtpo_viz"
    return str(shutil.copytree(BUNDLED_POLICY_DIR, deep / "sample_data" / "policies" / "tiny-mrtpo"))


@pytest.fixture(scope="module")
def app_url(checkpoint):
    with served_app(MRTPO_CHECKPOINT=checkpoint, MRTPO_RUNS_DIR="") as url:
        yield url


@pytest.fixture(scope="module")
def page(app_url, tmp_path_factory):
    with browser_page(app_url, tmp_path_factory.mktemp("chromium-profile")) as page:
        yield page
    assert page.errors == []


def _clean(page, what: str) -> None:
    page.wait_for_timeout(700)  # an error state would arrive with the request's end
    assert error_state(page) == [], what
    assert page.server_errors == [], what


def test_the_first_model_line_is_drawn_at_full_strength(app_url, tmp_path):
    with browser_page(app_url, tmp_path / "profile") as page:
        # read at once, while the page's first load of the checkpoint may still run
        opacity = page.locator("#model-status").evaluate(
            "e => { let o = 1; for (let p = e; p; p = p.parentElement) o *= +getComputedStyle(p).opacity; return o; }"
        )
        assert opacity == 1.0
        wait_for_text(page, "#model-status", r"Loaded")


def test_bad_inputs_of_every_tab_leave_no_output_in_the_error_state(page, tmp_path):
    # Token relevance: an empty response, then a checkpoint that does not exist
    response = page.locator("#response-box textarea")
    good = response.input_value()
    response.fill("")
    page.locator("#replay-btn").click()
    wait_for_text(page, "#relevance-status", r"The response is empty")
    _clean(page, "relevance: empty response")
    response.fill(good)

    # A/B: an empty response
    open_tab(page, "Verifier information A/B")
    page.locator("#ab-tokens-a").wait_for()
    page.locator("#ab-response textarea").fill("")
    page.locator("#ab-btn").click()
    wait_for_text(page, "#ab-status", r"The response is empty")
    _clean(page, "A/B: empty response")

    # Rollouts: a file where every line is bad gets the per-line list, not one toast
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"task": "tool_calling", "prompt": "x"\nplain text\n'
        + json.dumps({"task": "tool_calling", "prompt": "p", "response": "r", "verifiers": ["no.such"]})
        + "\n",
        encoding="utf-8",
    )
    open_tab(page, "Rollouts")
    page.locator("#rollouts-upload input[type='file']").set_input_files(str(bad))
    page.wait_for_timeout(500)
    page.locator("#rollouts-btn").click()
    said = wait_for_text(page, "#rollouts-status", r"No rollout of bad\.jsonl could be scored")
    assert re.search(r"Skipped 3 line\(s\)[\s\S]*line 1:[\s\S]*line 2:[\s\S]*line 3:", said), said
    assert "Upload a file, or press" not in said
    _clean(page, "rollouts: every line bad")

    # Runs: a typed folder where the operator set no runs folder, then nothing at all
    open_tab(page, "Runs")
    page.locator("#run-path textarea, #run-path input").first.fill("my-run")
    page.locator("#run-open").click()
    said = wait_for_text(page, "#run-status", r"MRTPO_RUNS_DIR|runs folder")
    assert "No run open" not in said
    _clean(page, "runs: typed folder without MRTPO_RUNS_DIR")
    page.locator("#run-step").click()  # no badge over the step picker: it takes the click
    page.keyboard.press("Escape")
    page.locator("#run-path textarea, #run-path input").first.fill("")
    page.locator("#run-open").click()
    wait_for_text(page, "#run-status", r"Type a run folder")
    _clean(page, "runs: nothing given")

    # Live training: no method ticked
    open_tab(page, "Live training")
    for box in page.locator("#live-methods input[type=checkbox]").all():
        if box.is_checked():
            box.uncheck()
    page.locator("#live-start").click()
    wait_for_text(page, "#live-status", r"Pick at least one method")
    _clean(page, "live: no method")


def test_the_model_line_follows_a_replay_with_a_picked_checkpoint(page, checkpoint):
    page.reload()
    page.locator("#replay-btn").wait_for()
    wait_for_text(page, "#model-status", r"Loaded")
    box = page.get_by_label(re.compile(r"^Checkpoint"))
    box.fill(checkpoint)  # the same policy, by its folder: picked, not claimed as loaded
    box.press("Enter")
    wait_for_text(page, "#model-status", r"not loaded yet")
    page.locator("#replay-btn").click()
    wait_for_text(page, "#relevance-status", r"^Replayed \d+ tokens")
    said = wait_for_text(page, "#model-status", r"^Loaded")
    assert "not loaded yet" not in said
    box.fill("no-such-model-here")
    box.press("Enter")
    page.locator("#replay-btn").click()
    wait_for_text(page, "#relevance-status", r"no-such-model-here")  # the replay's own message, in place
    wait_for_text(page, "#model-status", r"^Checkpoint not loaded")
    _clean(page, "replay with a missing checkpoint")


WORDS_BROKEN = """sel => { const out = [];
  const walk = document.createTreeWalker(document.querySelector(sel), NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    for (const m of n.textContent.matchAll(/[A-Za-z0-9]+/g)) {
      const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
      const lines = new Set([...r.getClientRects()].map(b => Math.round(b.top)));
      if (lines.size > 1) out.push(m[0]);
    } }
  return out; }"""
"""The words (letters and digits) of an element's text that are drawn over more than one line (a break after a
hyphen or a slash is a line break between words)."""


def test_on_a_phone_the_model_line_breaks_no_word_and_top_values_fit(page, app_url):
    phone = page.context.new_page()  # a session of its own, 390 px wide
    phone.set_default_timeout(TIMEOUT_MS)
    phone.set_viewport_size({"width": 390, "height": 844})
    try:
        phone.goto(app_url, wait_until="domcontentloaded")
        phone.locator("#replay-btn").wait_for()
        wait_for_text(phone, "#model-status", r"Loaded")
        assert phone.evaluate(WORDS_BROKEN, "#model-status") == []
        phone.locator("#replay-btn").click()
        wait_for_text(phone, "#relevance-status", r"^Replayed \d+ tokens")
        phone.locator("#relevance-tokens .tv-tok[data-k='0'][data-t='2']").click()
        wait_for_text(phone, "#relevance-tokens .tv-panel", r"pinned")
        cut = phone.locator("#relevance-tokens .tv-panel").evaluate(
            """p => { const r = p.getBoundingClientRect();
              return [...p.querySelectorAll('.tv-tops *')].filter(e => e.getBoundingClientRect().width > 0)
                .filter(e => e.getBoundingClientRect().right > r.right + 0.5).map(e => e.innerText); }"""
        )
        assert cut == []
        for tab in ("Verifier information A/B", "Rollouts", "Runs", "Live training"):
            open_tab(phone, tab)
            assert phone.evaluate(WORDS_BROKEN, "#model-status") == [], tab
    finally:
        phone.close()
