"""``python -m mrtpo_viz bench``: quick versions of the benchmark scripts in ``benchmarks/``, one table.

Each script runs in its own process with its ``--quick`` flag and writes its CSV to a temporary folder (a process
of its own gives the memory benchmark a clean baseline, and a failure in one does not stop the others). A registry
(``BENCHMARKS``) says per script what to run, which CSV it writes and how to condense that CSV into summary rows
``{benchmark, case, measure, value, target}``; a script whose optional dependency is missing (Inseq) is skipped
with a note. ``checkpoint`` (``bench --checkpoint smollm2-135m-instruct``) passes ``--checkpoint`` to every script,
which then measures that model instead of its default one. The full runs and their results files are described in
``benchmarks/README.md``.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from collections.abc import Callable, Sequence


def benchmarks_dir() -> Path:
    """The checkout's ``benchmarks/``: under the working directory, else beside the package (an editable install)."""
    here = Path.cwd() / "benchmarks"
    return here if here.is_dir() else Path(__file__).resolve().parent.parent / "benchmarks"


TIMEOUT_S = 1800
COLUMNS = ("benchmark", "case", "measure", "value", "target")


def _num(x) -> float:
    return float(x) if x not in (None, "") else float("nan")


def summarize_replay_speed(rows: list[dict]) -> list[dict]:
    """Per (model, prompt, K): the replay's seconds and its speed-up over the naive 2K separate forwards."""
    by = {(r["model"], r["prompt_tokens"], r["K"], r["method"]): r for r in rows}
    out = []
    for (model, P, K, method), r in by.items():
        if method != "replay":
            continue
        case = f"{model}, prompt {P}, K={K}"
        out.append({"case": case, "measure": "replay s", "value": _num(r["seconds"])})
        naive = by.get((model, P, K, "naive"))
        if naive:
            out.append(
                {
                    "case": case,
                    "measure": "naive / replay",
                    "value": _num(naive["seconds"]) / _num(r["seconds"]),
                    "target": ">= 2.5x at prompt ~1000, K=3",
                }
            )
    return out


LOCALIZATION_VIEWS = ("span_all", "error_top1")
LOCALIZATION_METHODS = ("js_raw", "entropy")


def summarize_localization(rows: list[dict]) -> list[dict]:
    """Mean over verifiers of span AUROC and error top-1 rate, for raw JS against the entropy baseline."""
    return [
        {"case": f"{r['view']} (mean over verifiers)", "measure": r["method"], "value": _num(r["value"])}
        for r in rows
        if r["verifier"] == "mean" and r["view"] in LOCALIZATION_VIEWS and r["method"] in LOCALIZATION_METHODS
    ]


def summarize_vs_inseq(rows: list[dict]) -> list[dict]:
    """Per (model, T, K): Inseq CTI CPU time over the replay's (kl), i.e. the speed-up per verifier."""
    out = []
    for r in rows:
        if r.get("speedup_kl") in (None, ""):
            continue
        estimated = " (Inseq estimated)" if str(r.get("inseq_how", "")).startswith("estimated") else ""
        out.append(
            {
                "case": f"{r['model']}, T={r['response_tokens']}, K={r['K']}",
                "measure": "Inseq / replay (kl, CPU)" + estimated,
                "value": _num(r["speedup_kl"]),
                "target": ">= 20x at 128 tokens",
            }
        )
    return out


def summarize_memory(rows: list[dict]) -> list[dict]:
    """Replay peak RSS above the weights per chunk size, and the top-k JS bound's speed-up over the exact JS."""
    out = []
    for r in rows:
        case = f"T={r['response_tokens']}, K={r['K']}"
        if r["part"] == "replay":
            out.append(
                {
                    "case": f"{case}, chunk {r['chunk_rows']}",
                    "measure": "replay peak MiB above weights",
                    "value": _num(r["peak_mib"]),
                    "target": "< 2048 at T=1024",
                }
            )
        elif r["part"].startswith("js_topk"):
            out.append(
                {"case": case, "measure": f"{r['part']} speed-up over exact js", "value": _num(r["speedup_vs_exact"])}
            )
    return out


@dataclass(frozen=True)
class Benchmark:
    """How to run one benchmark script quickly and read its result."""

    script: str
    """File in ``benchmarks/``."""
    args: tuple[str, ...]
    """Its quick command-line arguments; ``{out}`` stands for the temporary results folder."""
    result: str
    """The CSV it writes, relative to ``{out}``."""
    summarize: Callable[[list[dict]], list[dict]]
    """CSV rows -> summary rows (case, measure, value, optional target)."""
    requires: tuple[str, ...] = field(default=())
    """Modules it needs beyond the runtime dependencies (skipped with a note when one is missing)."""


BENCHMARKS: dict[str, Benchmark] = {
    "replay_speed": Benchmark(
        "replay_speed.py",
        ("--quick", "--models", "tiny", "--out", "{out}/replay_speed"),
        "replay_speed.csv",
        summarize_replay_speed,
    ),
    "localization": Benchmark(
        "localization.py", ("--quick", "--out", "{out}"), "localization_quick.csv", summarize_localization
    ),
    "vs_inseq": Benchmark(
        "vs_inseq.py",
        ("--quick", "--models", "tiny", "--out", "{out}/vs_inseq"),
        "vs_inseq.csv",
        summarize_vs_inseq,
        requires=("inseq",),
    ),
    "memory": Benchmark(
        "memory.py", ("--quick", "--layers", "2", "--out", "{out}/memory"), "memory.csv", summarize_memory
    ),
}
"""Benchmark name -> how ``bench`` runs it, in this order."""


def note_row(name: str, measure: str, text: str) -> dict:
    return {"benchmark": name, "case": "-", "measure": measure, "value": text}


def missing_requirement(bench: Benchmark) -> Optional[str]:
    return next((m for m in bench.requires if importlib.util.find_spec(m) is None), None)


def run_benchmark(
    name: str,
    bench: Benchmark,
    out: Path,
    folder: Optional[Path] = None,
    timeout: float = TIMEOUT_S,
    checkpoint: Optional[str] = None,
) -> list[dict]:
    """Run one script quickly in its own process (on ``checkpoint`` if given); its summary rows, or one row that
    says why there are none."""
    folder = folder or benchmarks_dir()
    missing = missing_requirement(bench)
    if missing:
        return [note_row(name, "skipped", f"{missing} is not installed (pip install -r benchmarks/requirements.txt)")]
    script = folder / bench.script
    if not script.is_file():
        return [note_row(name, "skipped", f"{script} does not exist")]
    args = [a.format(out=out) for a in bench.args] + (["--checkpoint", str(checkpoint)] if checkpoint else [])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, str(script), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            cwd=folder.parent,
        )
    except subprocess.TimeoutExpired:
        return [note_row(name, "failed", f"timed out after {timeout:.0f} s")]
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no error output"])[-1]
        return [note_row(name, "failed", f"exit {proc.returncode}: {last[:200]}")]
    rows = [{"benchmark": name, **r} for r in bench.summarize(read_csv(out / bench.result))]
    return rows + [note_row(name, "wall s (quick run, whole script)", f"{time.perf_counter() - start:.0f}")]


def read_csv(path: Path) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"the benchmark did not write {path}")
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def format_value(v) -> str:
    if isinstance(v, float):
        return "nan" if v != v else f"{v:.4g}"
    return "" if v is None else str(v)


def format_table(rows: Sequence[dict], columns: Sequence[str] = COLUMNS) -> str:
    """A plain-text table with aligned columns (values with up to 4 significant digits)."""
    cells = [[format_value(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    line = lambda parts: "  ".join(p.ljust(w) for p, w in zip(parts, widths)).rstrip()  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(row) for row in cells])


def markdown_table(rows: Sequence[dict], columns: Sequence[str] = COLUMNS) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return "\n".join(lines + ["| " + " | ".join(format_value(r.get(c)) for c in columns) + " |" for r in rows])


def write_outputs(rows: list[dict], stem: Path) -> None:
    """``stem.csv`` and ``stem.md`` (the same table)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    with stem.with_suffix(".csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows({c: format_value(r.get(c)) for c in COLUMNS} for r in rows)
    stem.with_suffix(".md").write_text(
        "# Quick benchmarks\n\n`python -m mrtpo_viz bench`; quick versions of the "
        "scripts in benchmarks/ (see benchmarks/README.md for the full runs).\n\n" + markdown_table(rows) + "\n"
    )


def run_all(
    benchmarks: dict[str, Benchmark] = BENCHMARKS, folder: Optional[Path] = None, checkpoint: Optional[str] = None
) -> list[dict]:
    folder = folder or benchmarks_dir()
    if not folder.is_dir():
        raise FileNotFoundError(f"no benchmarks folder at {folder}: `bench` runs from a source checkout")
    rows = []
    with tempfile.TemporaryDirectory(prefix="mrtpo_bench_") as tmp:
        for name, bench in benchmarks.items():
            print(f"running {name} ...", file=sys.stderr, flush=True)
            rows += run_benchmark(name, bench, Path(tmp), folder, checkpoint=checkpoint)
    return rows
