"""The ``ab`` command (verifier information A/B over a split) end to end on the bundled policy, ``serve`` on a busy
port naming ``--port``, and ``examples/trl_mrtpo.py`` without TRL naming the extra to install."""

import csv
import json
import socket
import subprocess
import sys

import pytest

from mrtpo_viz.cli import main
from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR
from tests.apphelpers import REPO


@pytest.mark.skipif(not (BUNDLED_POLICY_DIR / "config.json").is_file(), reason="the bundled policy is absent")
def test_ab_prints_each_case_and_the_summary_and_writes_the_csv(tmp_path, capsys):
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.relevance import ab_split
    from mrtpo_viz.tasks import load_examples

    out = tmp_path / "ab.csv"
    assert main(["ab", "--task", "tool_calling", "--n", "3", "--threads", "1", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    rows = list(csv.DictReader(out.open()))
    want = list(
        ab_split.compare_split(load_policy("tiny-mrtpo"), ab_split.split_cases(load_examples("tool_calling"), 3))
    )
    assert [(r["example"], r["verifier"]) for r in rows] == [(w.example, w.verifier) for w in want]
    assert [float(r["span_mass_b_minus_a"]) for r in rows] == pytest.approx([w.difference for w in want], abs=1e-6)
    s = ab_split.summarize(want)
    assert f"mean {s.mean_difference:+.3f} [{s.lo:+.3f}, {s.hi:+.3f}]" in said
    assert f"{len(want)} cases of 3 examples" in said and "s per example" in said
    assert f"1/{len(want)} {want[0].example} {want[0].verifier}: span mass A {want[0].span_mass_a:.3f}" in said


def test_ab_takes_a_file_of_examples_and_reports_its_bad_lines(tmp_path, capsys):
    from mrtpo_viz.tasks import load_examples

    ex = load_examples("tool_calling")[0]
    good = {"task": ex.task, "prompt": ex.prompt, "response": ex.reference, "meta": ex.meta, "id": "mine"}
    path = tmp_path / "examples.jsonl"
    path.write_text("not json\n" + json.dumps(good) + "\n", encoding="utf-8")
    assert main(["ab", "--examples", str(path), "--n", "1", "--threads", "1"]) == 0
    said = capsys.readouterr().out
    assert f"{path}:1: skipped" in said and "1/2 mine tool_call.format" in said
    assert main(["ab", "--n", "1"]) == 2  # neither --task nor --examples
    assert "give --task (its test split) or --examples" in capsys.readouterr().err
    assert main(["ab", "--task", "tool_calling", "--n", "1", "--a", "same", "--b", "same"]) == 2
    assert "no case in the first 1 examples" in capsys.readouterr().err


def test_serve_on_a_busy_port_names_the_port_option(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is in use" in err and f"--port {port + 1}" in err
    assert "GRADIO_SERVER_PORT" not in err


def test_the_trl_example_without_trl_says_which_extra_to_install(tmp_path):
    code = (
        "import sys, runpy; sys.modules['trl'] = None; "  # as if TRL were not installed
        f"sys.argv = ['trl_mrtpo.py', '--out', {str(tmp_path / 'run')!r}, '--steps', '1']; "
        f"runpy.run_path({str(REPO / 'examples' / 'trl_mrtpo.py')!r}, run_name='__main__')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "This example needs TRL (trl is not installed): pip install 'mrtpo-viz[trl]'"
    assert not (tmp_path / "run").exists()
