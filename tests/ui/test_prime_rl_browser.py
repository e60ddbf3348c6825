"""The Runs tab in a real browser opens a prime-rl run (token exports written in prime-rl's format,
tests/integrations/prime_rl_fixture.py) by its folder under MRTPO_RUNS_DIR, shows a sequence's logged per-channel
advantages, entropy and masks, then replays its exact ids with the bundled policy and typed information and shows
their relevance beside those values.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import pytest

from tests.apphelpers import free_port, patient_url_ok
from tests.ui.harness import CHROMIUM, FLAGS, TIMEOUT_MS, require_browser

sync_api = require_browser()


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    import torch

    from tests.integrations.prime_rl_fixture import write_prime_rl_export

    torch.set_num_threads(1)
    runs = tmp_path_factory.mktemp("runs")
    write_prime_rl_export(runs / "prime-run")
    bad = runs / "prime-bad" / "token_exports" / "step_3"
    bad.mkdir(parents=True)
    good = (runs / "prime-run" / "token_exports" / "step_1" / "rank_0.jsonl").read_text().splitlines()[0]
    (bad / "rank_0.jsonl").write_text(good + "\n" + good.replace('"entropy":[0.0,', '"entropy":["high",', 1) + "\n")
    return runs


@pytest.fixture(scope="module")
def page(runs_dir, tmp_path_factory):
    from mrtpo_viz.ui import build_app, launch_options

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MRTPO_RUNS_DIR", str(runs_dir))  # read by every request: kept for the module
        mp.delenv("MRTPO_CHECKPOINT", raising=False)  # the bundled policy wrote the export and decodes it
        mp.setattr("gradio.networking.url_ok", patient_url_ok)
        demo = build_app()
        _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True, **launch_options())
        with sync_api.sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(tmp_path_factory.mktemp("chromium-profile")),
                executable_path=str(CHROMIUM),
                headless=True,
                args=FLAGS,
                viewport={"width": 1440, "height": 1000},
            )
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url, wait_until="domcontentloaded")
            yield page
            context.close()
        demo.close()


def traces(page, plot: str) -> list[str]:
    """The trace names of a plot as plotly holds them."""
    return page.evaluate(f"() => document.querySelector('{plot} .js-plotly-plot').data.map(t => t.name || t.type)")


def test_the_runs_tab_opens_a_prime_rl_export_and_shows_logged_values_beside_relevance(page, runs_dir, tmp_path):
    from mrtpo_viz.integrations import run_replay, run_view
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    page.get_by_role("tab", name="Runs").click()
    page.locator("#run-path textarea, #run-path input").first.fill("prime-run")
    page.locator("#run-open").click()
    page.wait_for_function("() => document.querySelector('#run-status').innerText.includes('a prime-rl token export')")
    assert "2 step file(s), no rewards logged" in page.locator("#run-status").inner_text()
    page.locator("#run-curves .main-svg .scatterlayer .trace").first.wait_for()
    assert page.locator("#run-curves .main-svg .scatterlayer .trace").count() == 3  # advantage, entropy, mismatch KL
    page.wait_for_function(
        "() => document.querySelector('#run-table [role=grid]')?.getAttribute('aria-rowcount') === '9'"
    )
    row = 5
    page.locator("#run-row input").fill(str(row))
    page.locator("#run-show").click()
    page.wait_for_function("() => document.querySelector('#run-note').innerText.includes('token ids, no text')")
    run = run_view.open_run(runs_dir / "prime-run")
    frame = run_view.step_frame(run, 2)
    record = run_view.completion_record(frame, row)
    T = len(record["completion_ids"])
    page.locator("#run-bars .js-plotly-plot").first.wait_for()
    page.wait_for_function("() => document.querySelector('#run-bars .js-plotly-plot').data.length >= 6")
    shown = traces(page, "#run-bars")
    assert shown[:5] == ["rl channel advantage", "ce channel weight", "entropy", "mismatch KL", "importance ratio"]
    assert shown[-1] == "heatmap"  # the masks' strip
    entropy = page.evaluate("() => document.querySelector('#run-bars .js-plotly-plot').data[2].y")
    assert entropy == pytest.approx(list(record["entropy"]), rel=1e-6)
    masks = page.evaluate("() => document.querySelector('#run-bars .js-plotly-plot').data.at(-1).y")
    assert masks == ["loss mask", "masked", "masked high", "masked low"]

    info = "answer: the color asked for"
    page.get_by_label("information per reward, for a replay (reward: text)").fill(info)
    page.locator("#run-replay").click()
    tokens = page.locator("#run-tokens .mrtpo-tok")
    tokens.first.wait_for()
    policy = load_policy(str(BUNDLED_POLICY_DIR))
    messages, ids = run.format.rollout(record, policy)
    rel = run_replay.replayed_relevance(policy, messages, ids, {"answer": "the color asked for"})
    assert page.locator("#run-tokens .mrtpo-row").count() == 1 and tokens.count() == T
    scores = [float(s) for s in tokens.evaluate_all("els => els.map(e => e.dataset.score)")]
    assert scores == pytest.approx(rel.scores[0].tolist(), rel=5e-3, abs=1e-6)  # 3 significant digits
    page.wait_for_function("() => document.querySelector('#run-bars .js-plotly-plot').data[0].name === 'answer'")
    relevance = page.evaluate("() => document.querySelector('#run-bars .js-plotly-plot').data[0].y")
    assert relevance == pytest.approx(rel.scores[0].tolist(), rel=1e-5, abs=1e-7)
    assert "replayed with the checkpoint" in page.locator("#run-note").inner_text()
    page.screenshot(path=str(tmp_path / "runs_prime_rl.png"), full_page=True)
    assert (tmp_path / "runs_prime_rl.png").stat().st_size > 30_000


def test_a_bad_export_is_a_message_in_place_naming_its_file_and_line(page):
    from tests.ui.browser import error_state

    page.get_by_role("tab", name="Runs").click()
    page.locator("#run-path textarea, #run-path input").first.fill("prime-bad")
    page.locator("#run-open").click()
    page.wait_for_function("() => document.querySelector('#run-status').innerText.includes('rank_0.jsonl:2')")
    said = page.locator("#run-status").inner_text()
    assert "rank_0.jsonl:2: 'entropy' item 1 must be a number (or null), got text" in said, said
    page.wait_for_timeout(700)  # an error state would arrive with the request's end
    assert error_state(page) == []
