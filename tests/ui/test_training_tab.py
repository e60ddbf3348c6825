"""The Live training tab: its defaults (one source, ``LIVE``), the generator that streams steps, Stop's
"stopped at step n", the summary at the end, the smoothing control, the slot cap and bad input.

The generator runs on the tests' random-init tiny policy (fast); the defaults' effect on the bundled policy is
measured by ``benchmarks/live_defaults.py`` (its results file is checked against ``LIVE`` below).
"""

import dataclasses
import json
import threading

import gradio as gr
import pytest

from mrtpo_viz.names import METHODS
from mrtpo_viz.ui import training_tab as tab
from mrtpo_viz.ui.training_tab import LIVE, LiveProgress, LiveSettings
from tests.apphelpers import REPO


def _run(tiny_policy_dir, methods=("gdpo", "mrtpo"), steps=5, progress=None, **kw):
    """The tab's handler with small settings (G = 2, 8 new tokens) on the tiny policy."""
    args = dict(seed=0, shared_samples=True, smoothing=1, temperature=1.0)
    args.update(kw)
    return tab.run_live_training(
        str(tiny_policy_dir),
        "tool_calling",
        list(methods),
        steps,
        1e-3,
        2,
        8,
        "none",
        args["seed"],
        args["shared_samples"],
        args["smoothing"],
        args["temperature"],
        progress,
    )


def _built_tab():
    with gr.Blocks() as demo:
        checkpoint = gr.Textbox("unused")
        tab.build_training_tab(checkpoint)
    return demo


# --- the defaults: one source ----------------------------------------------------------------------------------------


def test_the_tab_starts_runs_with_exactly_the_live_defaults(monkeypatch):
    """Start pressed on an untouched tab trains LIVE.train_config(m) for every default method (nothing else)."""
    import mrtpo_viz.training

    configs = []

    def no_steps(cfg, policy=None):  # a training generator that records its config and yields no step
        configs.append(cfg)
        yield from ()

    monkeypatch.setattr(mrtpo_viz.training, "train", no_steps)
    monkeypatch.setattr(tab, "get_policy", lambda checkpoint: None)
    start = next(f for f in _built_tab().fns.values() if f.api_name == "train")
    values = [b.value for b in start.inputs]
    out = list(start.fn(*values))
    assert configs == [LIVE.train_config(m) for m in LIVE.methods]
    assert "**Done**" in out[-1][3]
    cfg = configs[0]
    assert (
        cfg.task,
        cfg.steps,
        cfg.group_size,
        cfg.prompts_per_step,
        cfg.max_new_tokens,
        cfg.lr,
        cfg.temperature,
        cfg.seed,
    ) == (
        LIVE.task,
        LIVE.steps,
        LIVE.group_size,
        LIVE.prompts_per_step,
        LIVE.max_new_tokens,
        LIVE.lr,
        LIVE.temperature,
        LIVE.seed,
    )


def test_shared_samples_give_every_method_the_seed_and_otherwise_its_own():
    shared = LiveSettings(shared_samples=True)
    assert {shared.seed_for(m, 3) for m in METHODS} == {3}
    own = LiveSettings(shared_samples=False)
    seeds = [own.seed_for(m, s) for s in range(3) for m in METHODS]
    assert len(set(seeds)) == len(seeds) == 3 * len(METHODS)  # no two runs of a 3-seed check share samples
    assert own.train_config("gdpo", seed=1).seed == own.seed_for("gdpo", 1)
    assert shared.train_config("mrtpo", control="others").control == "others"


def test_the_benchmark_results_are_for_the_current_defaults():
    """README quotes benchmarks/results/live_defaults.md: rerun benchmarks/live_defaults.py when LIVE changes."""
    results = json.loads((REPO / "benchmarks" / "results" / "live_defaults.json").read_text())
    ((label, measured),) = results["settings"].items()
    assert label == "defaults"
    display_only = ("smoothing", "max_steps")  # change the plot and the slider's range, not the training
    current = json.loads(json.dumps(dataclasses.asdict(LIVE)))
    assert {k: v for k, v in measured.items() if k not in display_only} == {
        k: v for k, v in current.items() if k not in display_only
    }
    per_seed = results["results"][label]["seeds"]
    assert sorted(per_seed) == ["0", "1", "2"]
    for seed in per_seed.values():
        assert set(seed["methods"]) == set(LIVE.methods)


# --- a run: streaming, stop, summary ---------------------------------------------------------------------------------


def test_live_training_generator_streams_and_stops_when_cancelled(tiny_policy_dir, request):
    threads_before = set(threading.enumerate())
    free = tab.SLOTS.free()
    gen = _run(tiny_policy_dir)
    request.addfinalizer(gen.close)  # a failed assertion must not leave the slot held for the next tests
    first = next(gen)  # before any step: the placeholder, no sample
    assert "Preparing" in first[3] and first[1] == "" and not first[0].data
    assert tab.SLOTS.free() == free - 1  # the run holds a slot
    next(gen)  # gdpo step 1
    fig, sample_html, times_md, status, summary = next(gen)  # mrtpo step 1
    assert "Step 1/5" in status and "gdpo" in status and "mrtpo" in status and summary == ""
    assert {t.name for t in fig.data if t.showlegend} == {"gdpo", "mrtpo"}
    assert "<span" in sample_html and "Latest mrtpo sample (step 1)" in sample_html  # the MRTPO sample
    assert "| mrtpo |" in times_md and "replay" in times_md
    gen.close()  # a closed generator (a client that went away) releases its slot
    assert tab.SLOTS.free() == free  # slot released at once
    left = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    assert left == []  # no training thread left behind (threads of earlier tests may end meanwhile)


def test_stop_says_stopped_at_step_n_and_keeps_the_summary(tiny_policy_dir):
    progress = LiveProgress()
    gen = _run(tiny_policy_dir, steps=5, progress=progress)
    try:
        for _ in range(1 + 2 * 2):  # preparing, then 2 steps of 2 methods
            next(gen)
        assert progress.done == 2 and progress.running and len(progress.rows) == 4
        assert not progress.stopped
        tab.stop_live_training(progress)  # the Stop button's handler: no cancel, a flag
        assert progress.stopped
        tab.stop_live_training(progress)  # a second click changes nothing
        assert progress.stopped and progress.running
        # the generator's next turn reports the stop with the curves so far, then ends
        fig, _, _, status, summary = next(gen)
        assert status.startswith("**Stopped at step 2** of 5") and "**Summary after 2 steps**" in summary
        assert "- **gdpo**: final mean reward" in summary and "- **mrtpo**:" in summary
        assert len(progress.rows) == 4  # no step was started after the click
        points = [len(t.x) for t in fig.data if t.mode == "lines+markers"]
        assert points and all(n == 2 for n in points)  # the curves keep their 2 points per method
        with pytest.raises(StopIteration):
            next(gen)
    finally:
        gen.close()
    assert not progress.running
    tab.stop_live_training(progress)  # nothing running: Stop changes nothing
    assert not progress.running


def test_stop_between_two_methods_steps_draws_only_the_steps_every_method_finished(tiny_policy_dir):
    progress = LiveProgress()
    gen = _run(tiny_policy_dir, steps=5, progress=progress)
    try:
        for _ in range(1 + 2 * 2 + 1):  # preparing, 2 steps of 2 methods, then gdpo's step 3
            next(gen)
        assert progress.done == 2 and len(progress.rows) == 5 and progress.samples["gdpo"]["step"] == 3
        tab.stop_live_training(progress)
        fig, sample_html, _, status, summary = next(gen)
        assert status.startswith("**Stopped at step 2** of 5") and "**Summary after 2 steps**" in summary
        points = {t.name: len(t.x) for t in fig.data if t.mode == "lines+markers"}
        assert points == {"gdpo": 2, "mrtpo": 2}  # gdpo's step 3 is not drawn: "every method finished 2 steps"
        assert len(progress.rows) == 4 and "gdpo" not in progress.samples  # its latest sample was of step 3
        assert "(step 3)" not in sample_html
    finally:
        gen.close()


def test_stop_before_the_first_step_says_so(tiny_policy_dir):
    progress = LiveProgress()
    gen = _run(tiny_policy_dir, methods=("gdpo", "gdpo"), steps=3, progress=progress)  # a repeated method counts once
    try:
        next(gen)  # preparing
        assert progress.methods == 1
        tab.stop_live_training(progress)
        assert progress.stopped
        out = next(gen)
        assert out[3] == "**Stopped at step 0** of 3, before any step had finished." and out[4] == ""
    finally:
        gen.close()


def test_a_finished_run_ends_with_a_summary_line_per_method(tiny_policy_dir):
    progress = LiveProgress()
    out = list(_run(tiny_policy_dir, methods=("grpo", "gdpo", "mrtpo"), steps=2, progress=progress))
    assert len(out) == 1 + 3 * 2 + 1  # preparing, a yield per method and step, the end
    fig, _, _, status, summary = out[-1]
    assert status.startswith("**Done**: 2 steps of grpo, gdpo, mrtpo")
    lines = [line for line in summary.splitlines() if line.startswith("- **")]
    assert [line.split("**")[1] for line in lines] == ["grpo", "gdpo", "mrtpo"]
    for method, line in zip(("grpo", "gdpo", "mrtpo"), lines):
        final = [r["reward/mean"] for r in progress.rows if r["variant"] == method][-1]  # 2 steps: windows of 1
        assert f"final mean reward **{final:.3f}**" in line and "threshold" in line
    assert len([t for t in fig.data if t.mode == "lines+markers"]) >= 3 * 2  # mean reward and all-pass panels


def test_shared_samples_make_the_first_step_equal_and_own_seeds_do_not(tiny_policy_dir):
    def first_step(shared):
        progress = LiveProgress()
        gen = _run(tiny_policy_dir, methods=("grpo", "gdpo"), steps=2, progress=progress, shared_samples=shared)
        try:
            for _ in range(3):
                next(gen)
        finally:
            gen.close()
        return [r["reward/mean"] for r in progress.rows], [r["seed"] for r in progress.rows]

    rewards, seeds = first_step(True)
    assert rewards[0] == rewards[1] and seeds == [0, 0]  # the same completions: the same rewards
    _, seeds = first_step(False)
    assert seeds == [LiveSettings(shared_samples=False).seed_for(m, 0) for m in ("grpo", "gdpo")] == [0, 1]


def test_smoothing_redraws_the_curves_so_far():
    raw = [0.2, 0.6, 0.7]
    progress = LiveProgress(
        rows=[{"variant": "gdpo", "seed": 0, "step": s, "reward/mean": y, "all_pass": 0.0} for s, y in enumerate(raw)]
    )
    fig = tab.redraw(progress, 3)
    line = next(t for t in fig.data if t.mode == "lines+markers" and t.xaxis == "x")
    assert list(line.y) == pytest.approx([0.2, 0.4, 0.5])  # trailing means over up to 3 steps
    assert progress.window == 3  # a running run draws with it from its next step
    assert "Press Start" in tab.redraw(LiveProgress(), 2).layout.annotations[0].text


def test_the_sample_control_shows_the_chosen_methods_latest_sample():
    sample = {"tokens": ["a", "b"], "adv": [0.5, 0.5], "rewards": {"v": 1.0}, "prompt": "p", "step": 4}
    progress = LiveProgress(samples={"gdpo": sample, "mrtpo": {**sample, "adv": [1.0, 0.0], "step": 4}})
    assert "Latest mrtpo sample (step 4)" in tab.sample_html(progress)  # MRTPO by default
    gdpo = tab.show_sample(progress, "gdpo")
    assert "Latest gdpo sample (step 4)" in gdpo and progress.sample_of == "gdpo"
    assert gdpo.count("advantage +0.500") == 2  # GDPO: one advantage for every token
    assert "Latest gdpo sample" in tab.show_sample(progress, "nope")  # an unknown name keeps the choice
    assert "Latest mrtpo sample" in tab.show_sample(progress, "mrtpo")
    assert "Latest gdpo sample" in tab.sample_html(LiveProgress(samples={"gdpo": sample}, sample_of="grpo"))
    assert tab.sample_html(LiveProgress()) == ""


# --- limits and bad input --------------------------------------------------------------------------------------------


def test_live_training_reports_a_full_cap(tiny_policy_dir):
    held = [tab.SLOTS.acquire() for _ in range(tab.SLOTS.free())]
    try:
        assert held and all(held) and tab.SLOTS.free() == 0
        progress = LiveProgress(rows=[{"kept": 1}])
        out = list(_run(tiny_policy_dir, methods=("gdpo",), steps=2, progress=progress))
        assert len(out) == 1 and "busy" in out[0][3]
        assert progress.rows == [{"kept": 1}]  # a refused click leaves the session's last run alone
    finally:
        for _ in held:
            tab.SLOTS.release()


@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(methods=()), "at least one method"),
        (dict(methods=("nope",)), "at least one method"),
        (dict(steps=LIVE.max_steps + 1), "Steps must lie between"),
        (dict(seed=-1), "seed must be a whole number"),
        (dict(seed=1.5), "seed must be a whole number"),
        (dict(temperature=0.0), r"temperature must lie in \[0.01, 100\]"),
    ],
)
def test_bad_live_inputs_are_readable_errors(tiny_policy_dir, kw, words):
    free = tab.SLOTS.free()
    with pytest.raises(gr.Error, match=words):
        list(_run(tiny_policy_dir, **kw))
    assert tab.SLOTS.free() == free
