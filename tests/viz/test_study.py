"""The convergence study's views: the forest plot and the summary, on a hand-built results dict."""

import math

from mrtpo_viz.viz.study import SCHEMA, forest_rows, is_study, study_figure, study_markdown


def _paired(mean, lo, hi, n=5):
    return {"final": {"mean": mean, "lo": lo, "hi": hi, "n": n}}


RESULTS = {
    "schema": SCHEMA,
    "study": "main",
    "variants": ["gdpo", "mrtpo", "mrtpo:oracle"],
    "complete": True,
    "labels": {"mrtpo": "MRTPO (raw JS)", "mrtpo:oracle": "oracle"},
    "min_seeds": 5,
    "cpu_h": 6.25,
    "conclusion": "Of 2 arms, the oracle beats GDPO on 1.",
    "arms": {
        "tool_calling": {
            "vs_gdpo": {"mrtpo": _paired(0.02, -0.01, 0.05), "mrtpo:oracle": _paired(0.10, 0.06, 0.14)},
            "verdict": "tool_calling: headroom.",
        },
        "text_to_sql": {"vs_gdpo": {"mrtpo": _paired(-0.03, None, None, n=1)}, "verdict": ""},
    },
}


def test_forest_rows_follow_the_variant_order_and_skip_gdpo():
    rows = forest_rows(RESULTS, "tool_calling")
    assert [r["variant"] for r in rows] == ["mrtpo", "mrtpo:oracle"]
    assert rows[1] == {"variant": "mrtpo:oracle", "label": "oracle", "mean": 0.10, "lo": 0.06, "hi": 0.14, "n": 5}
    one = forest_rows(RESULTS, "text_to_sql")[0]  # one seed: no interval, a point at the mean
    assert one["lo"] == one["hi"] == one["mean"] == -0.03


def test_study_figure_draws_each_difference_with_its_interval():
    fig = study_figure(RESULTS)
    points = [t for t in fig.data if t.type == "scatter"]
    assert len(points) == 3
    oracle = next(t for t in points if t.name == "oracle")
    assert list(oracle.x) == [0.10] and math.isclose(oracle.error_x.array[0], 0.04)
    assert math.isclose(oracle.error_x.arrayminus[0], 0.04)
    assert [a.text for a in fig.layout.annotations][:2] == ["tool_calling", "text_to_sql"]


def test_study_markdown_and_not_run_yet():
    md = study_markdown(RESULTS)
    assert "at least 5 seeds" in md and "Of 2 arms" in md and "- tool_calling: headroom." in md
    assert "incomplete" not in md
    assert "incomplete" in study_markdown(dict(RESULTS, complete=False))
    for other in (None, {"steps": 57, "summaries": {}}, {"schema": "other/9", "arms": {}}, [1, 2]):
        assert not is_study(other) and study_markdown(other).startswith("**Not run yet.**")
