"""scripts/coverage_report.py: coverage.py's JSON report summed per part of the package, and the floors enforced."""

import json
import subprocess
import sys

from tests.apphelpers import REPO

sys.path.insert(0, str(REPO / "scripts"))
import coverage_report as cr  # noqa: E402

REPORT = {
    "files": {
        "mrtpo_viz/names.py": {"summary": {"covered_lines": 10, "num_statements": 10}},
        "mrtpo_viz/relevance/engine.py": {"summary": {"covered_lines": 30, "num_statements": 40}},
        "mrtpo_viz/relevance/rows.py": {"summary": {"covered_lines": 15, "num_statements": 20}},
        "/site/x/mrtpo_viz/ui/errors.py": {"summary": {"covered_lines": 0, "num_statements": 30}},
        "tests/test_names.py": {"summary": {"covered_lines": 5, "num_statements": 5}},
    }
}


def test_statements_are_summed_per_part_and_files_outside_the_package_are_left_out():
    assert cr.part_of("mrtpo_viz/relevance/engine.py") == "relevance"
    assert cr.part_of("mrtpo_viz/names.py") == "names"
    assert cr.per_part(REPORT) == {"names": (10, 10), "relevance": (45, 60), "ui": (0, 30)}


def test_a_part_or_the_total_under_its_floor_is_named():
    parts = cr.per_part(REPORT)
    text, under = cr.table(parts, {"relevance": 75.0, "ui": 0.0}, 55.0)
    assert under == []  # relevance 75.0% meets 75; the total is 55/100
    assert "relevance" in text and "75.0%" in text and "total" in text
    _, under = cr.table(parts, {"relevance": 76.0}, 56.0)
    assert under == ["relevance", "total"]


def test_the_script_exits_1_under_a_floor_and_2_on_a_report_without_the_package(tmp_path, monkeypatch):
    path = tmp_path / "coverage.json"
    path.write_text(json.dumps(REPORT))
    monkeypatch.setattr(cr, "FLOORS", {"ui": 1.0})
    monkeypatch.setattr(cr, "TOTAL_FLOOR", 0.0)
    assert cr.main([str(path)]) == 1
    monkeypatch.setattr(cr, "FLOORS", {})
    assert cr.main([str(path)]) == 0
    path.write_text(json.dumps({"files": {"tests/x.py": {"summary": {"covered_lines": 1, "num_statements": 1}}}}))
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "coverage_report.py"), str(path)], capture_output=True, text=True
    )
    assert out.returncode == 2 and "no file of mrtpo_viz" in out.stderr
