"""Training views on a hand-built metrics frame: reward curves (axis titles, ticks, distinguishable lines,
smoothing), the end-of-run summary, a step's sample coloured by advantage, the phase times."""

import pandas as pd
import pytest

from mrtpo_viz.viz import training as viz_training
from tests.training.test_loop import _hand_frame


def _lines(fig):
    """The curve traces (one per variant and panel), not the bands or the faint per-step dots."""
    return [t for t in fig.data if t.mode == "lines+markers"]


def test_curves_have_one_line_per_variant_and_a_band_over_seeds():
    fig = viz_training.reward_curves_figure(_hand_frame(), columns=["reward/mean", "reward/a"])
    lines, bands = _lines(fig), [t for t in fig.data if t.fill == "toself"]
    assert len(lines) == 4 and len(bands) == 4  # 2 variants x 2 panels
    fast = next(t for t in lines if t.name == "fast" and t.xaxis == "x")
    assert list(fast.y) == pytest.approx([0.15, 0.55, 0.95, 0.95])  # mean over the two seeds
    assert list(fast.x) == [1, 2, 3, 4]  # steps counted from 1, as the tab's status counts them
    assert "fast" in fast.hovertemplate and "%{y:.3f}" in fast.hovertemplate
    assert [t.showlegend for t in lines] == [True, True, False, False]  # one legend entry per variant


def test_every_panel_has_axis_titles_and_tick_labels_and_empty_cells_hide():
    cols = ["reward/mean", "all_pass", "reward/a", "reward/mean"]  # 4 panels on a 3-wide grid: 2 rows, 2 empty
    fig = viz_training.reward_curves_figure(_hand_frame(), columns=cols)
    used = {(t.xaxis, t.yaxis) for t in _lines(fig)}
    assert len(used) == 4
    for x, y in used:
        xa, ya = fig.layout[x.replace("x", "xaxis")], fig.layout[y.replace("y", "yaxis")]
        assert xa.title.text == "step" and xa.showticklabels is True  # ticks on the top row too, not only the bottom
        assert ya.title.text in ("reward (0-1)", "share of completions") and ya.showticklabels is True
    assert fig.layout.yaxis2.title.text == "share of completions"  # the all-pass panel
    assert fig.layout.xaxis5.visible is False and fig.layout.xaxis6.visible is False
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["mean reward", "all verifiers pass", "a", "mean reward"]


def test_coinciding_lines_stay_distinguishable():
    rows = [
        {"variant": v, "seed": 0, "step": s, "reward/mean": 0.5} for v in ("grpo", "gdpo", "mrtpo") for s in range(4)
    ]  # three identical curves: what shared samples give at the first step
    lines = _lines(viz_training.reward_curves_figure(pd.DataFrame(rows), columns=["reward/mean"]))
    assert [t.name for t in lines] == ["grpo", "gdpo", "mrtpo"]
    assert all(list(t.y) == [0.5] * 4 for t in lines)
    styles = [(t.line.dash, t.marker.symbol) for t in lines]
    assert len(set(styles)) == 3 and len({t.line.color for t in lines}) == 3
    widths, sizes = [t.line.width for t in lines], [t.marker.size for t in lines]
    assert widths == sorted(widths, reverse=True) and widths[0] > widths[-1]  # later lines drawn thinner, on top
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 3  # nested markers


def test_smoothing_is_a_trailing_mean_and_keeps_the_raw_steps_as_dots():
    fig = viz_training.reward_curves_figure(_hand_frame(), columns=["reward/mean"], window=2)
    fast = next(t for t in _lines(fig) if t.name == "fast")
    # seed 0: 0.1 0.5 0.9 0.9 -> 0.1 0.3 0.7 0.9; seed 1 (+0.1): 0.2 0.4 0.8 1.0; mean over seeds:
    assert list(fast.y) == pytest.approx([0.15, 0.35, 0.75, 0.95])
    dots = [t for t in fig.data if t.mode == "markers" and t.legendgroup == "fast"]
    assert len(dots) == 1 and list(dots[0].y) == pytest.approx([0.15, 0.55, 0.95, 0.95])
    assert "trailing mean over 2 steps" in fig.layout.title.text
    unsmoothed = viz_training.reward_curves_figure(_hand_frame(), columns=["reward/mean"], window=1)
    assert not [t for t in unsmoothed.data if t.mode == "markers"]


def test_run_summary_gives_final_reward_change_and_steps_to_threshold():
    one_seed = _hand_frame().query("seed == 0")  # fast: 0.1 0.5 0.9 0.9; slow: 0.1 0.2 0.3 0.6
    md = viz_training.run_summary_markdown(one_seed)
    # 4 steps: windows of 1 step (a third of the run); threshold 0.1 + (0.9 - 0.1) / 2 = 0.5
    assert "**Summary after 4 steps**" in md and "threshold 0.500" in md
    assert "- **fast**: final mean reward **0.900** (start 0.100, +0.800) · threshold reached after 2 steps" in md
    assert "- **slow**: final mean reward **0.600** (start 0.100, +0.500) · threshold reached after 4 steps" in md
    both = viz_training.run_summary_markdown(_hand_frame())  # two seeds: how many reached, and the mean steps
    assert (
        "- **fast**: final mean reward **0.950** (start 0.150, +0.800) · threshold reached in 2/2 seeds, after "
        "2.5 steps on average" in both
    )  # threshold 0.55: seed 0 at its 3rd step, seed 1 at its 2nd
    ys = {"up": [0.1, 0.5, 0.9], "flat": [0.1, 0.1, 0.1]}  # threshold 0.5; the flat run never gets there
    never = pd.DataFrame(
        [{"variant": v, "seed": 0, "step": s, "reward/mean": y} for v, c in ys.items() for s, y in enumerate(c)]
    )
    assert (
        "- **flat**: final mean reward **0.100** (start 0.100, +0.000) · threshold not reached"
        in viz_training.run_summary_markdown(never)
    )
    assert viz_training.run_summary_markdown(pd.DataFrame()) == ""


def test_advantage_html_escapes_tokens_and_explains_the_colours():
    html = viz_training.advantage_tokens_html(
        {"tokens": ["<b>", "x"], "adv": [1.0, -0.5], "rewards": {"a<": 1.0}, "relevance": {"v": [0.2, 0.1]}},
        "Latest mrtpo sample (step 3)",
    )
    assert "<b>" not in html.replace("<b>Latest", "") and "&lt;b&gt;" in html and "a&lt;" in html
    assert "advantage +1.000" in html and "relevance to v: 0.200" in html
    assert "<b>Latest mrtpo sample (step 3)</b>" in html and "largest token advantage" in html
    assert "blue: made more likely, red: less likely" in html and "largest, 1.000" in html
    assert html.count('class="mrtpo-train-tok"') == 2
    assert viz_training.advantage_tokens_html({}) == "<p>No sample yet.</p>"


def test_phase_times_table_lists_every_phase():
    md = viz_training.phase_times_markdown({"gdpo": {"sample": 1.0, "update": 0.5}})
    assert "| method | sample | score | replay | advantages | update | total |" in md
    assert "| gdpo | 1 | 0 | 0 | 0 | 0.5 | 1.5 |" in md  # 3 significant digits
