"""The app in a real browser (playwright driving Debian's chromium): pick an example, replay, and check that the
coloured tokens, the heatmap and the advantage bars hold real content. Screenshots go to a temporary folder, or to
``$MRTPO_SCREENSHOTS`` when set (``python scripts/screenshots.py`` sets it to ``assets/`` for the README), so a
test run never rewrites a tracked file.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""
import os
import re
from pathlib import Path

import pytest

from mrtpo_viz.tasks.data import BUNDLED_POLICY_DIR
from tests.apphelpers import free_port as _free_port, patient_url_ok as _patient_url_ok

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

BUNDLED = BUNDLED_POLICY_DIR
TIMEOUT_MS = 180_000  # a loaded 2-core CI machine: model load plus replay can take a while

if not CHROMIUM.exists():
    if os.environ.get("MRTPO_REQUIRE_BROWSER") == "1":
        pytest.fail(f"MRTPO_REQUIRE_BROWSER=1 but {CHROMIUM} is missing (apt-get install chromium)",
                    pytrace=False)
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium); set MRTPO_REQUIRE_BROWSER=1 to fail instead",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def app_url(request):
    import torch

    from mrtpo_viz.ui import build_app, common, launch_options

    torch.set_num_threads(1)
    checkpoint = str(BUNDLED) if (BUNDLED / "config.json").is_file() else str(request.getfixturevalue(
        "tiny_policy_dir"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MRTPO_CHECKPOINT", checkpoint)  # what the page preselects
        mp.setattr("gradio.networking.url_ok", _patient_url_ok)
        demo = build_app()
        _, url, _ = demo.launch(prevent_thread_lock=True, server_port=_free_port(), quiet=True, **launch_options())
    yield url
    demo.close()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    """Where screenshots go: ``$MRTPO_SCREENSHOTS`` (the README's, by scripts/screenshots.py) or a temporary folder."""
    folder = Path(os.environ.get("MRTPO_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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


def pick_example(page, index: int) -> None:
    """Open the example dropdown of the relevance tab and choose the option that starts with ``index:``."""
    dropdown = page.get_by_label("Example (test split)").first
    dropdown.click()
    page.get_by_role("option", name=re.compile(rf"^{index}:")).first.click()


def test_replay_in_the_browser_shows_tokens_heatmap_and_bars(page, screenshots):
    from mrtpo_viz.ui.common import get_example

    ex = get_example("tool_calling", 1)
    page.locator("#replay-btn").wait_for()
    pick_example(page, 1)
    page.wait_for_function("ref => document.querySelector('#response-box textarea').value === ref", arg=ex.reference)
    # the information boxes refill after the response: replay only once they hold this example's information
    from mrtpo_viz.tasks import get_verifier

    info = get_verifier("tool_call.correctness").info(ex)
    page.wait_for_function("info => [...document.querySelectorAll('textarea')].some(t => t.value === info)", arg=info)
    page.locator("#replay-btn").click()

    tokens = page.locator("#relevance-tokens .mrtpo-tok")
    tokens.first.wait_for()
    # the charts show a placeholder from the start: wait for the heatmap's cells, not just a plot
    page.locator("#relevance-heatmap .hm image").first.wait_for()
    page.locator("#advantage-bars .barlayer path").first.wait_for()

    rows = page.locator("#relevance-tokens .mrtpo-row").count()
    assert rows == len(ex.verifiers)
    n = tokens.count()
    assert n > 5 * rows and n % rows == 0  # every verifier row holds every token
    scores = [float(s) for s in tokens.evaluate_all("els => els.map(e => e.dataset.score)")]
    assert max(scores) > 0 and len(set(scores)) > 3  # real, varying relevance
    from mrtpo_viz.relevance.engine import replay
    from mrtpo_viz.settings import default_checkpoint
    from mrtpo_viz.ui.common import get_policy

    want = replay(get_policy(default_checkpoint()), ex, ex.reference, list(ex.verifiers)).scores.flatten().tolist()
    assert scores == pytest.approx(want, abs=1e-3)  # the page shows this example's replay with its own information
    tip = tokens.nth(int(max(range(n), key=scores.__getitem__))).get_attribute("title")
    assert "log p(token) without information" in tip and all(v in tip for v in ex.verifiers)
    # the heatmap is drawn (plotly paints its cells into an image) with a colour bar; the bars have one path per
    # token and reward
    assert page.locator("#relevance-heatmap .hm image").count() >= 1
    assert page.locator("#relevance-heatmap .colorbar").count() >= 1
    assert page.locator("#advantage-bars .barlayer path").count() >= n  # K stacks over T tokens: K*T = n paths
    page.locator("#advantage-bars").scroll_into_view_if_needed()
    shot = screenshots / "screenshot_relevance.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000


def test_unchecking_a_verifier_keeps_the_other_verifiers_edited_information(page):
    from mrtpo_viz.ui.common import get_example
    from mrtpo_viz.tasks import get_verifier

    fmt = "tool_call.format"
    info = get_verifier("tool_call.correctness").info(get_example("tool_calling", 2))
    pick_example(page, 2)
    # wait for this example's own information: the previous example's box also starts "The correct call is"
    page.wait_for_function("info => [...document.querySelectorAll('textarea')].some(t => t.value === info)", arg=info)
    box = page.locator("textarea").nth(page.locator("textarea").evaluate_all(
        "els => els.findIndex(t => t.value.startsWith('The correct call is'))"))
    page.wait_for_timeout(300)  # let the example's last updates (prompt, response, verifiers) settle
    box.fill("The correct call is my edited text")
    box.blur()
    page.get_by_label(fmt, exact=True).uncheck()
    page.wait_for_function("() => ![...document.querySelectorAll('textarea')].some(t => "
                           "t.value.startsWith('Reply with exactly one <tool_call>') && t.offsetParent)")
    values = page.locator("textarea").evaluate_all("els => els.filter(t => t.offsetParent).map(e => e.value)")
    assert "The correct call is my edited text" in values  # kept, though its box moved up
    page.get_by_label(fmt, exact=True).check()
    page.wait_for_function("() => [...document.querySelectorAll('textarea')].some(t => "
                           "t.value.startsWith('Reply with exactly one <tool_call>') && t.offsetParent)")
    values = page.locator("textarea").evaluate_all("els => els.filter(t => t.offsetParent).map(e => e.value)")
    assert "The correct call is my edited text" in values  # re-adding format: its template, the edit stays
