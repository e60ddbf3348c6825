"""The Runs tab in a real browser opens a verl rollout dump (written as verl writes one,
tests/integrations/verl_fixture.py) by its folder under MRTPO_RUNS_DIR, replays a completion with the bundled
policy and the prefilled information (the row's ground truth), and shows its token scores.

Skipped when /usr/bin/chromium is missing, unless MRTPO_REQUIRE_BROWSER=1 (CI), where that is a failure.
"""

import pytest

from tests.apphelpers import free_port, patient_url_ok
from tests.ui.harness import CHROMIUM, FLAGS, TIMEOUT_MS, require_browser

sync_api = require_browser()


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    import torch

    from tests.integrations.verl_fixture import write_verl_dump

    torch.set_num_threads(1)
    runs = tmp_path_factory.mktemp("runs")
    write_verl_dump(runs / "verl-rollouts")
    return runs


@pytest.fixture(scope="module")
def page(runs_dir, tmp_path_factory):
    from mrtpo_viz.ui import build_app, launch_options

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MRTPO_RUNS_DIR", str(runs_dir))  # read by every request: kept for the module
        mp.delenv("MRTPO_CHECKPOINT", raising=False)  # the bundled policy wrote the dump and replays it
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


def test_the_runs_tab_opens_a_verl_dump_and_replays_a_completions_tokens(page, runs_dir, tmp_path):
    from mrtpo_viz.integrations import run_replay, run_view
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    page.get_by_role("tab", name="Runs").click()
    page.locator("#run-path textarea, #run-path input").first.fill("verl-rollouts")
    page.locator("#run-open").click()
    page.wait_for_function("() => document.querySelector('#run-status').innerText.includes('a verl rollout dump')")
    assert "acc, format, overlap" in page.locator("#run-status").inner_text()
    page.locator("#run-curves .main-svg .scatterlayer .trace").first.wait_for()
    assert page.locator("#run-curves .main-svg .scatterlayer .trace").count() == 3  # acc, format, overlap
    # step 2 (the last) is preselected: its 8 completions (the grid counts the header row too)
    page.wait_for_function(
        "() => document.querySelector('#run-table [role=grid]')?.getAttribute('aria-rowcount') === '9'"
    )
    row = 5
    page.locator("#run-row input").fill(str(row))
    page.locator("#run-show").click()
    page.wait_for_function("() => document.querySelector('#run-note').innerText.includes('ground truth')")
    run = run_view.open_run(runs_dir / "verl-rollouts")
    frame = run_view.step_frame(run, 2)
    record = run_view.completion_record(frame, row)
    names = ["acc", "format", "overlap"]
    assert record["gts"] == "red"
    page.locator("#run-replay").click()
    tokens = page.locator("#run-tokens .mrtpo-tok")
    tokens.first.wait_for()
    view = run_replay.replayed_view(
        load_policy(str(BUNDLED_POLICY_DIR)), frame, record, names, {n: "red" for n in names}
    )
    assert page.locator("#run-tokens .mrtpo-row").count() == len(names)
    assert tokens.count() == len(names) * len(view.relevance.tokens)
    shown = [float(s) for s in tokens.evaluate_all("els => els.map(e => e.dataset.score)")]
    want = view.relevance.scores.flatten().tolist()
    assert shown == pytest.approx(want, rel=5e-3, abs=1e-6)  # the token view carries 3 significant digits
    assert max(shown) > 0.01
    # the token advantages, stacked per reward (a zero-height bar is "hidden" to playwright: wait for any bar)
    page.locator("#run-bars .barlayer path").first.wait_for(state="attached")
    assert page.locator("#run-bars .barlayer path").count() >= len(view.relevance.tokens)
    page.screenshot(path=str(tmp_path / "runs_verl.png"), full_page=True)
    assert (tmp_path / "runs_verl.png").stat().st_size > 30_000
