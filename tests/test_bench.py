"""bench.py: summary rows from fake benchmark CSV rows, the table, skipped and failed scripts (no timing)."""

import math
import textwrap
from pathlib import Path

import pytest

from mrtpo_viz import bench
from mrtpo_viz.bench import Benchmark


def test_replay_speed_summary_gives_seconds_and_naive_speedup():
    rows = [
        {"model": "tiny", "prompt_tokens": "100", "K": "3", "method": "replay", "seconds": "0.5"},
        {"model": "tiny", "prompt_tokens": "100", "K": "3", "method": "naive", "seconds": "2.0"},
        {"model": "tiny", "prompt_tokens": "100", "K": "3", "method": "floor", "seconds": "0.4"},
    ]
    out = bench.summarize_replay_speed(rows)
    assert [(r["case"], r["measure"], r["value"]) for r in out] == [
        ("tiny, prompt 100, K=3", "replay s", 0.5),
        ("tiny, prompt 100, K=3", "naive / replay", 4.0),
    ]


def test_replay_speed_summary_without_naive_row_has_no_ratio():
    rows = [{"model": "tiny", "prompt_tokens": "100", "K": "1", "method": "replay", "seconds": "0.25"}]
    assert [r["measure"] for r in bench.summarize_replay_speed(rows)] == ["replay s"]


def test_localization_summary_keeps_mean_rows_of_chosen_views_and_methods():
    rows = [
        {"view": "span_all", "verifier": "mean", "method": "js_raw", "value": "0.71", "n": "3"},
        {"view": "span_all", "verifier": "mean", "method": "entropy", "value": "0.55", "n": "3"},
        {"view": "span_all", "verifier": "sql.format", "method": "js_raw", "value": "0.9", "n": "10"},
        {"view": "span_all", "verifier": "mean", "method": "kl", "value": "0.6", "n": "3"},
        {"view": "specificity", "verifier": "mean", "method": "js_raw", "value": "0.8", "n": "3"},
    ]
    out = bench.summarize_localization(rows)
    assert [(r["measure"], r["value"]) for r in out] == [("js_raw", 0.71), ("entropy", 0.55)]


def test_vs_inseq_summary_marks_estimates_and_skips_rows_without_inseq():
    tiny = {"model": "tiny", "response_tokens": "127"}
    rows = [
        {**tiny, "K": "1", "speedup_kl": "62.5", "inseq_how": "measured, 1 run"},
        {**tiny, "K": "3", "speedup_kl": "110", "inseq_how": "estimated, not run"},
        {**tiny, "response_tokens": "31", "K": "1", "speedup_kl": ""},
    ]
    out = bench.summarize_vs_inseq(rows)
    assert [r["value"] for r in out] == [62.5, 110.0]
    assert "estimated" not in out[0]["measure"] and "estimated" in out[1]["measure"]
    assert out[0]["case"] == "tiny, T=127, K=1"


def test_memory_summary_reads_replay_peaks_and_topk_speedup():
    rows = [
        {"part": "replay", "response_tokens": "1024", "K": "3", "chunk_rows": "default", "peak_mib": "1500"},
        {"part": "metric js", "response_tokens": "1024", "K": "3", "chunk_rows": "4", "peak_mib": "30"},
        {
            "part": "js_topk k=64",
            "response_tokens": "1024",
            "K": "3",
            "chunk_rows": "64",
            "peak_mib": "90",
            "speedup_vs_exact": "3.5",
        },
    ]
    out = bench.summarize_memory(rows)
    assert [(r["case"], r["value"]) for r in out] == [("T=1024, K=3, chunk default", 1500.0), ("T=1024, K=3", 3.5)]


def test_format_table_aligns_columns_and_rounds():
    rows = [
        {"benchmark": "memory", "case": "T=1", "measure": "peak", "value": 1234.5678, "target": "< 2048"},
        {"benchmark": "vs_inseq", "case": "-", "measure": "skipped", "value": "inseq is not installed"},
        {"benchmark": "x", "case": "-", "measure": "ratio", "value": float("nan")},
    ]
    lines = bench.format_table(rows).splitlines()
    assert lines[0].split() == list(bench.COLUMNS)
    assert "1235" in lines[2] and "1234.5678" not in lines[2]
    assert lines[4].split()[-1] == "nan"
    starts = {line.index(word) for line, word in zip(lines[2:4], ["T=1", "-"])}
    assert len(starts) == 1  # the case column starts at the same place in every row


def test_missing_requirement_skips_without_running(tmp_path):
    b = Benchmark("does_not_matter.py", (), "x.csv", lambda rows: rows, requires=("no_such_module_mrtpo_xyz",))
    rows = bench.run_benchmark("fake", b, tmp_path, folder=tmp_path)
    assert rows == [
        bench.note_row(
            "fake", "skipped", "no_such_module_mrtpo_xyz is not installed (pip install -r benchmarks/requirements.txt)"
        )
    ]


def _script(folder: Path, body: str) -> str:
    (folder / "fake_bench.py").write_text(textwrap.dedent(body))
    return "fake_bench.py"


def test_a_script_that_writes_its_csv_is_summarized(tmp_path):
    name = _script(
        tmp_path,
        """
        import sys, pathlib
        out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        (out / "r.csv").write_text("case,measure,value\\nc1,m1,2.5\\n")
    """,
    )
    b = Benchmark(
        name, ("--out", "{out}/res"), "res/r.csv", lambda rows: [{**r, "value": float(r["value"]) * 2} for r in rows]
    )
    rows = bench.run_benchmark("fake", b, tmp_path / "out", folder=tmp_path)
    assert rows[0] == {"benchmark": "fake", "case": "c1", "measure": "m1", "value": 5.0}
    assert rows[1]["measure"].startswith("wall s")


def test_a_failing_script_gives_one_failed_row_with_its_last_error_line(tmp_path):
    name = _script(
        tmp_path,
        """
        import sys
        print("some progress")
        sys.exit("broke on purpose")
    """,
    )
    rows = bench.run_benchmark("fake", Benchmark(name, (), "r.csv", lambda r: r), tmp_path, folder=tmp_path)
    assert rows == [bench.note_row("fake", "failed", "exit 1: broke on purpose")]


def test_missing_script_is_skipped(tmp_path):
    rows = bench.run_benchmark("fake", Benchmark("absent.py", (), "r.csv", lambda r: r), tmp_path, folder=tmp_path)
    assert rows[0]["measure"] == "skipped" and "absent.py" in rows[0]["value"]


def test_run_all_needs_the_benchmarks_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="source checkout"):
        bench.run_all({}, folder=tmp_path / "nowhere")


def test_outputs_hold_the_same_rows(tmp_path):
    rows = [{"benchmark": "b", "case": "c", "measure": "m", "value": 0.123456, "target": ""}]
    bench.write_outputs(rows, tmp_path / "bench")
    assert (tmp_path / "bench.csv").read_text().splitlines()[1] == "b,c,m,0.1235,"
    assert "| b | c | m | 0.1235 |  |" in (tmp_path / "bench.md").read_text()


def test_every_registered_script_exists_and_names_its_quick_flag():
    for name, b in bench.BENCHMARKS.items():
        assert (bench.benchmarks_dir() / b.script).is_file(), name
        assert "--quick" in b.args, name


def test_empty_csv_cells_read_as_nan():
    assert bench._num("1.5") == 1.5 and math.isnan(bench._num("")) and math.isnan(bench._num(None))


def test_gpu_check_says_not_measured_without_a_gpu_and_its_code_runs_on_the_cpu(tmp_path):
    """Without CUDA the results file says so and names the command; each part's code runs on the CPU (so the script
    works the day a GPU is lent): agreement, speed and training rows, in small sizes."""
    import importlib.util
    import subprocess
    import sys

    import torch

    from tests.apphelpers import REPO

    script = REPO / "benchmarks" / "gpu_check.py"
    if not torch.cuda.is_available():
        subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "none")], check=True, capture_output=True)
        text = (tmp_path / "none.md").read_text()
        assert "Not measured: no GPU was lent" in text and "python benchmarks/gpu_check.py" in text
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("gpu_check", script)
        gc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gc)
        agree = gc.agreement_rows("tiny-mrtpo", 1, device="cpu")
        speed = gc.speed_rows("tiny-mrtpo", [60], [1], device="cpu")
        trained = gc.training_rows("tiny-mrtpo", 2, device="cpu", methods=("gdpo", "entropy"))
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    assert [r["dtype"] for r in agree] == ["float32", "bfloat16"]
    assert agree[0]["max_abs_diff_vs_cpu_fp32"] == 0.0  # the same device and dtype: the same numbers
    assert 0 < agree[1]["max_abs_diff_vs_cpu_fp32"] < 0.2  # bf16's rounding, on JS values in [0, 1]
    assert speed[0]["K"] == 1 and speed[0]["replay_s"] > 0 and speed[0]["naive_s"] > 0
    assert [r["method"] for r in trained] == ["gdpo", "entropy"] and all(r["seconds_per_step"] > 0 for r in trained)


def test_a_checkpoint_is_passed_to_the_script(tmp_path):
    name = _script(
        tmp_path,
        """
        import sys, pathlib
        out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        (out / "r.csv").write_text("case,measure,value\\n" + sys.argv[sys.argv.index("--checkpoint") + 1] + ",m,1\\n")
    """,
    )
    b = Benchmark(name, ("--quick", "--out", "{out}/res"), "res/r.csv", lambda rows: rows)
    rows = bench.run_benchmark("fake", b, tmp_path / "out", folder=tmp_path, checkpoint="smollm2-135m-instruct")
    assert rows[0]["case"] == "smollm2-135m-instruct"
