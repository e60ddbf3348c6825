"""The Method tab's "Does token credit help?" section: the study's results when the file is there, "not run yet"
otherwise, and a readable line (not a traceback) for a damaged file."""

import json

import gradio as gr

from mrtpo_viz.ui.method_tab import STUDY_RESULTS, build_method_tab, study_results
from tests.viz.test_study import RESULTS


def _build(path):
    with gr.Blocks() as demo:
        build_method_tab(path)
    markdown = [b.value for b in demo.blocks.values() if isinstance(b, gr.Markdown)]
    plots = [b for b in demo.blocks.values() if isinstance(b, gr.Plot)]
    return markdown, plots


def test_the_tab_shows_the_committed_results_file_or_not_run_yet():
    assert STUDY_RESULTS.name == "convergence.json" and STUDY_RESULTS.parent.name == "results"
    results = study_results()
    markdown, plots = _build(STUDY_RESULTS)
    if results is None:  # before the full study: the committed file is absent or of the earlier format
        assert any("Not run yet" in m for m in markdown) and plots == []
    else:
        assert any(results["conclusion"] in m for m in markdown) and len(plots) == 1


def test_a_results_file_gives_the_conclusion_and_the_plot(tmp_path):
    path = tmp_path / "convergence.json"
    path.write_text(json.dumps(RESULTS))
    assert study_results(path)["study"] == "main"
    markdown, plots = _build(path)
    assert any("Does token credit help?" in m and "Of 2 arms" in m for m in markdown) and len(plots) == 1


def test_missing_foreign_or_damaged_files_do_not_break_the_tab(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps({"steps": 57, "summaries": {}}))
    (tmp_path / "bad.json").write_text("{not json")
    for name in ("missing.json", "old.json", "bad.json"):
        assert study_results(tmp_path / name) is None
        markdown, plots = _build(tmp_path / name)
        assert any("Not run yet" in m for m in markdown) and plots == []
    broken = dict(RESULTS, arms={"tool_calling": {"vs_gdpo": {"mrtpo": {}}}})  # the right schema, fields missing
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    markdown, plots = _build(tmp_path / "broken.json")
    assert any("could not be shown" in m and "KeyError" in m for m in markdown) and plots == []
