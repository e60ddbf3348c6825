"""What the page shows after an edit, a bad value or Stop, in a real browser (playwright driving Debian's chromium):

- Token relevance and A/B: every input that changes a result marks the status "inputs changed since this replay",
  and a result names its checkpoint, verifiers, metric and control; a picked checkpoint is not claimed as loaded;
- an argument field with invalid JSON gets a message next to it (line and column), no HTTP 500, nothing else changes;
- A/B: a pin in one view pins the same position in the other;
- Rollouts: Stop ends the run with "Stopped at rollout n" and leaves no element in Gradio's error state.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import json
import re

import pytest

from tests.ui.browser import app_console, browser_page, choose, error_state, open_tab, served_app, wait_for_text

pytestmark = pytest.mark.browser
STALE = r"inputs changed since this replay: Replay again"


@pytest.fixture(scope="module")
def app_url():
    with served_app() as url:
        yield url


@pytest.fixture(scope="module")
def page(app_url, tmp_path_factory):
    with browser_page(app_url, tmp_path_factory.mktemp("chromium-profile")) as page:
        yield page
    assert page.errors == []  # no script error on the page, in any test


def _replay(page) -> str:
    page.locator("#replay-btn").click()
    return wait_for_text(page, "#relevance-status", r"^Replayed \d+ tokens")


def _box(page, label: str):
    """The text box whose label starts with ``label`` (a verifier's information or one of its argument fields)."""
    return page.get_by_label(label).first


def test_every_input_of_a_replay_marks_its_result_stale(page):
    said = _replay(page)
    # the result says what produced it: checkpoint, verifiers, metric, control
    assert re.search(r"with tiny-mrtpo against tool_call\.format, tool_call\.correctness \(js, control none\)", said)
    page.locator("#relevance-tokens .tv-tok").first.wait_for()

    def edit_marks_stale(edit, what):
        shown = page.locator("#relevance-tokens .tv-rows").inner_text()
        edit()
        text = wait_for_text(page, "#relevance-status", STALE)
        assert "Replayed" in text, (what, text)  # still says which replay the results below are
        assert page.locator("#relevance-tokens .tv-rows").inner_text() == shown  # the results stay, marked
        _replay(page)

    response = page.locator("#response-box textarea")
    edit_marks_stale(lambda: response.fill(response.input_value() + " "), "response")
    edit_marks_stale(
        lambda: page.locator("#verifier-choice").get_by_label("tool_call.format", exact=True).uncheck(),
        "verifier ticks",
    )
    said = page.locator("#relevance-status").inner_text()
    assert "against tool_call.correctness (" in said  # the new replay names its one verifier
    page.locator("#verifier-choice").get_by_label("tool_call.format", exact=True).check()
    wait_for_text(page, "#relevance-status", STALE)
    _replay(page)
    info = _box(page, "tool_call.correctness: Tool-call correctness")
    edit_marks_stale(lambda: info.fill(info.input_value() + " Check it."), "information")
    gold = _box(page, "tool_call.correctness: Gold call")
    edit_marks_stale(lambda: (gold.fill(gold.input_value().replace("2026", "2027")), gold.press("Enter")), "argument")
    edit_marks_stale(lambda: choose(page, "metric", "kl"), "metric")
    assert "(kl, control none)" in page.locator("#relevance-status").inner_text()
    edit_marks_stale(lambda: choose(page, "control", "placebo"), "control")
    assert "(kl, control placebo)" in page.locator("#relevance-status").inner_text()
    edit_marks_stale(lambda: page.get_by_label("system", exact=True).first.check(), "position")
    page.get_by_text("Information block template").click()
    template = page.get_by_label("template ({title} and {info}").first
    edit_marks_stale(lambda: template.fill(template.input_value() + "\n"), "template")


def test_picking_another_checkpoint_is_not_claimed_as_loaded(page, app_url):
    other = page.context.new_page()  # a page (a session) of its own: the pick is not undone
    other.set_default_timeout(page_timeout())
    try:
        other.goto(app_url, wait_until="domcontentloaded")
        other.locator("#replay-btn").wait_for()
        _picked_checkpoint(other)
    finally:
        other.close()


def page_timeout() -> int:
    from tests.ui.browser import TIMEOUT_MS

    return TIMEOUT_MS


def _picked_checkpoint(page):
    _replay(page)
    box = page.get_by_label(re.compile(r"^Checkpoint"))
    box.fill("no-such-model-here")
    box.press("Enter")
    wait_for_text(page, "#model-status", r"Picked no-such-model-here: not loaded yet")
    wait_for_text(page, "#relevance-status", STALE)
    page.locator("#replay-btn").click()  # the replay with the new pick fails: its message in place, results stay
    wait_for_text(page, "#relevance-status", r"no-such-model-here")
    assert error_state(page) == []
    assert "Loaded" not in page.locator("#model-status").inner_text()


def test_invalid_json_in_an_argument_field_is_reported_next_to_it(page):
    page.reload()
    page.locator("#replay-btn").wait_for()
    _replay(page)
    before = page.locator("#relevance-status").inner_text()
    info = _box(page, "tool_call.correctness: Tool-call correctness")
    info_before = info.input_value()
    gold = _box(page, "tool_call.correctness: Gold call")
    good = gold.input_value()
    bad = good.replace('": ', '" ', 1)  # a missing colon, a few dozen characters in
    page.server_errors.clear()
    gold.fill(bad)
    gold.press("Enter")
    with pytest.raises(json.JSONDecodeError) as err:
        json.loads(bad)
    col = err.value.colno  # the column Python's parser names
    msg = wait_for_text(page, "#field-msg-1", r"not valid JSON")
    assert "tool_call.correctness: Gold call or possible answers is not valid JSON" in msg, msg
    assert f"line 1, column {col}" in msg and "API" not in msg
    page.wait_for_timeout(500)
    assert page.server_errors == []  # no HTTP 500
    assert error_state(page) == []  # no "Error" badge, no error toast
    assert info.input_value() == info_before  # nothing else changes
    assert before in page.locator("#relevance-status").inner_text()  # the same result (marked stale: a field changed)
    gold.fill(good)
    gold.press("Enter")
    page.wait_for_function(
        "() => !document.querySelector('#field-msg-1') || "
        "document.querySelector('#field-msg-1').offsetParent === null || "
        "!document.querySelector('#field-msg-1').innerText.trim()"
    )


def test_ab_marks_a_stale_comparison_and_a_pin_in_a_pins_b(page):
    open_tab(page, "Verifier information A/B")
    page.locator("#ab-btn").click()
    said = wait_for_text(page, "#ab-status", r"^Compared two information texts")
    assert re.search(r"for tool_call\.format over \d+ tokens with tiny-mrtpo \(js, control none\)", said)
    page.locator("#ab-tokens-a .tv-tok").first.wait_for()
    page.locator("#ab-tokens-a .tv-tok[data-k='0'][data-t='3']").click()
    wait_for_text(page, "#ab-tokens-a .tv-panel", r"^token 3\b[\s\S]*pinned")
    wait_for_text(page, "#ab-tokens-b .tv-panel", r"^token 3\b[\s\S]*pinned")  # the same position in B
    assert page.locator("#ab-tokens-b .tv-tok.tv-pin").get_attribute("data-t") == "3"
    page.locator("#ab-tokens-b .tv-tok[data-k='0'][data-t='5']").click()  # and the other way round
    wait_for_text(page, "#ab-tokens-a .tv-panel", r"^token 5\b[\s\S]*pinned")
    page.keyboard.press("Escape")
    wait_for_text(page, "#ab-tokens-a .tv-panel", r"^Hover or click")
    page.locator("#info-a textarea").fill("Check the answer twice.")
    wait_for_text(page, "#ab-status", r"inputs changed since this replay: Compare again[\s\S]*Compared")
    page.locator("#ab-btn").click()
    wait_for_text(page, "#ab-status", r"^Compared")
    page.locator("#ab-verifier input").click()
    page.get_by_role("option", name="tool_call.correctness", exact=True).first.click()
    wait_for_text(page, "#ab-status", r"inputs changed since this replay: Compare again")


def test_stop_in_rollouts_ends_the_run_without_an_error_state(page, tmp_path):
    from mrtpo_viz.tasks.bundled_data import SAMPLE_ROLLOUTS

    rows = [json.loads(line) for line in SAMPLE_ROLLOUTS.read_text(encoding="utf-8").splitlines() if line.strip()]
    # the most one upload may hold (MRTPO_MAX_ROLLOUTS, 200): on a loaded machine the Stop click can take seconds to
    # reach the server, and the run must still be going then
    many = [{**rows[i % len(rows)], "id": f"r{i}"} for i in range(200)]
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in many), encoding="utf-8")
    open_tab(page, "Rollouts")
    page.locator("#rollouts-upload input[type='file']").set_input_files(str(path))
    page.wait_for_timeout(500)
    page.locator("#rollouts-btn").click()
    wait_for_text(page, "#rollouts-status", r"Scoring many\.jsonl: [2-9]\d* / 200")
    page.locator("#rollouts-stop").click()
    said = wait_for_text(page, "#rollouts-status", r"Stopped at rollout \d+")
    n = int(re.search(r"Stopped at rollout (\d+)", said).group(1))
    assert 2 <= n < 200
    page.wait_for_timeout(1500)  # a late update would land here
    assert f"Stopped at rollout {n}" in page.locator("#rollouts-status").inner_text()
    assert error_state(page) == []
    assert app_console(page) == []
