"""Shared pieces of the benchmark scripts: threads, wall time and peak RSS, the two model shapes, result files.

- ``measure(fn)`` times one call and samples the process RSS in a thread (every 2 ms): ``peak_mib`` is the peak
  above the level just before the call (tracemalloc does not see torch's allocations, RSS does).
- ``tiny_policy()`` is the bundled policy when its weights exist, else a random-init model of the same shape
  (``mrtpo_viz.sample_policy.build.TinyPolicyConfig``) with a tokenizer trained on the sample tasks.
- ``qwen05b_folder()`` saves a random-init Qwen2-0.5B-shaped model (bf16 safetensors, ~1 GB) and that tokenizer to
  a temporary folder and deletes it afterwards.
- ``write_results(rows, stem, ...)`` writes ``stem.csv`` and a markdown table ``stem.md``.
- ``model_label(checkpoint)`` is the name a results file gives a checkpoint (``--checkpoint``: a folder, the bundled
  policy's name or a known real model's name such as ``smollm2-135m-instruct``).
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import functools
import gc
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional
from collections.abc import Callable, Iterator, Sequence

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR  # noqa: E402

BUNDLED_POLICY = BUNDLED_POLICY_DIR

for _key, _value in (
    ("HF_HUB_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
    ("GRADIO_ANALYTICS_ENABLED", "False"),
    ("HF_HUB_DISABLE_TELEMETRY", "1"),
    ("TOKENIZERS_PARALLELISM", "false"),
):
    os.environ.setdefault(_key, _value)

QWEN05B_SHAPE = dict(
    vocab_size=151_936,
    hidden_size=896,
    intermediate_size=4864,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    max_position_embeddings=32768,
    tie_word_embeddings=True,
)
"""Qwen2-0.5B's shape (494M parameters); the weights are random."""


def set_threads(n: int = 1) -> int:
    """torch threads for this process (one per concurrent worker on a shared 2-core machine; see NOTES)."""
    import torch

    torch.set_num_threads(int(n))
    return torch.get_num_threads()


def machine() -> str:
    """E.g. ``"2 cores (AMD EPYC), no GPU, torch 2.13.0+cpu, 1 thread"``."""
    import torch

    cpu = next(
        (line.split(":", 1)[1].strip() for line in _read_lines("/proc/cpuinfo") if line.startswith("model name")),
        platform.processor() or "unknown CPU",
    )
    gpu = "GPU" if torch.cuda.is_available() else "no GPU"
    n = torch.get_num_threads()
    return f"{os.cpu_count()} cores ({cpu}), {gpu}, torch {torch.__version__}, {n} thread{'s' * (n != 1)}"


def cpu_description() -> str:
    """The CPU's model, vector flags (bfloat16 speed depends on them) and cores, for a results file."""
    from mrtpo_viz.policy.precision import describe_cpu

    return f"{describe_cpu()}; {os.cpu_count()} cores"


def load_average() -> str:
    """The 1-minute load average (how busy the shared machine was), e.g. ``"3.1"``."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "unknown"


def _read_lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


# --- time and memory ------------------------------------------------------------------------------------------------


def trim_memory() -> None:
    """Collect garbage and give freed heap back to the OS, so the next RSS baseline is honest."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def rss_mib() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


@dataclass(frozen=True)
class Measurement:
    seconds: float
    """Wall time."""
    cpu_seconds: float
    """CPU time of this process (all its threads): on a busy shared machine it varies less than wall time."""
    peak_mib: float
    """Peak RSS above the level just before the call."""
    result: Any = None


def measure(fn: Callable, *args, interval: float = 0.002, **kwargs) -> Measurement:
    """Wall time, CPU time and peak RSS (above the start level) of one call ``fn(*args, **kwargs)``; RSS is
    sampled every ``interval`` seconds (the sampler costs some CPU: use a longer interval for timing only)."""
    import psutil

    trim_memory()
    proc, stop = psutil.Process(), threading.Event()
    base = proc.memory_info().rss
    peak = [base]

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        result = fn(*args, **kwargs)
    finally:
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        stop.set()
        sampler.join()
    peak[0] = max(peak[0], proc.memory_info().rss)
    return Measurement(seconds, cpu_seconds, (peak[0] - base) / 2**20, result)


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def p95(xs: Sequence[float]) -> float:
    """95th percentile, linear interpolation between order statistics (the max for fewer than 20 values)."""
    s = sorted(xs)
    pos = 0.95 * (len(s) - 1)
    lo = int(pos)
    return float(s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (pos - lo))


# --- models ---------------------------------------------------------------------------------------------------------


def command(script: str, argv: Sequence[str]) -> str:
    """``python benchmarks/<script> <argv>`` as it was run, without the ``--out`` folder (results files say how to
    reproduce them, not where they were written)."""
    args, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--out":
            skip = True
        elif not a.startswith("--out="):
            args.append(a)
    return " ".join(["python", f"benchmarks/{script}", *args])


def checkpoint_folder(checkpoint) -> Path:
    """The folder of a checkpoint given as a folder, the bundled policy's name or a downloaded known model's name."""
    from mrtpo_viz.names import BUNDLED_POLICY as BUNDLED_NAME, KNOWN_MODELS

    name = str(checkpoint)
    if name == BUNDLED_NAME:
        return BUNDLED_POLICY
    if name in KNOWN_MODELS and not Path(name).is_dir():
        from mrtpo_viz.policy.known import is_downloaded, model_dir

        if not is_downloaded(name):
            raise FileNotFoundError(f"{name} is not downloaded: run `python -m mrtpo_viz get-model {name}`")
        return model_dir(name)
    return Path(name).expanduser()


def model_label(checkpoint) -> str:
    """The ``model`` column of the results: a known real model's or the bundled policy's name as given, the bundled
    policy's name for its folder, else the folder's (or hub id's) last part."""
    from mrtpo_viz.names import BUNDLED_POLICY as BUNDLED_NAME, KNOWN_MODELS

    name = str(checkpoint).rstrip("/")
    if name in KNOWN_MODELS or name == BUNDLED_NAME:
        return name
    with contextlib.suppress(OSError):
        if Path(name).expanduser().resolve() == BUNDLED_POLICY.resolve():
            return BUNDLED_NAME
    return Path(name).name or name


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[str, ...]:
    """Prompt, information and reference texts of every sample task (tokenizer training and benchmark inputs)."""
    from mrtpo_viz.names import TASKS
    from mrtpo_viz.tasks.example_sources import load_examples

    texts = []
    for task in TASKS:
        for ex in load_examples(task, split="all"):
            texts += [m["content"] for m in ex.messages()] + [ex.reference or ""]
    return tuple(t for t in texts if t)


def bundled_policy_ready() -> bool:
    return (BUNDLED_POLICY / "config.json").is_file() and any(BUNDLED_POLICY.glob("*.safetensors"))


def _tiny_random(out: Path) -> Path:
    """Save a random-init model of the bundled policy's shape and a tokenizer trained on the sample tasks."""
    import torch
    from mrtpo_viz.sample_policy.build import TinyPolicyConfig, build_model, build_tokenizer

    cfg = TinyPolicyConfig()
    tok = build_tokenizer(corpus(), cfg.vocab_size)
    torch.manual_seed(0)
    model = build_model(cfg, tok)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out


@contextlib.contextmanager
def tiny_policy_folder() -> Iterator[tuple[Path, str]]:
    """(folder, description): the bundled policy if trained, else a random-init one of its shape (temporary)."""
    if bundled_policy_ready():
        yield BUNDLED_POLICY, "bundled tiny-mrtpo"
        return
    with tempfile.TemporaryDirectory(prefix="mrtpo_tiny_") as tmp:
        yield _tiny_random(Path(tmp)), "random-init, bundled policy's shape (the trained one was not ready)"


@contextlib.contextmanager
def qwen05b_folder(tokenizer_from: Optional[Path] = None, layers: Optional[int] = None) -> Iterator[Path]:
    """A random-init Qwen2-0.5B-shaped model in bf16 safetensors (~1 GB) with a small BPE tokenizer, in a temporary
    folder under /tmp that is deleted on exit. Token ids above the tokenizer's size decode to "". ``layers``: keep
    only that many of its 24 decoder layers (same width and vocabulary)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2Config

    tmp = Path(tempfile.mkdtemp(prefix="mrtpo_qwen05b_"))
    try:
        with (
            tiny_policy_folder() if tokenizer_from is None else contextlib.nullcontext((tokenizer_from, "")) as (
                tiny,
                _,
            )
        ):
            tok = AutoTokenizer.from_pretrained(tiny)
        torch.manual_seed(0)
        shape = {**QWEN05B_SHAPE, **({"num_hidden_layers": layers} if layers else {})}
        cfg = Qwen2Config(
            **shape, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id
        )
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        del model
        trim_memory()
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def qwen05b_labelled() -> Iterator[tuple[Path, str]]:
    """``qwen05b_folder()`` as (folder, label), the form ``tiny_policy_folder()`` yields."""
    with qwen05b_folder() as folder:
        yield folder, "qwen2-0.5b-shape (random)"


def response_ids(tokenizer, texts: Sequence[str], n_tokens: int, skip: int = 0) -> list[int]:
    """About ``n_tokens`` ids of sample text that survive a decode / encode round trip (so a text-based tool and an
    id-based one see the same tokens), with no whitespace at either end (Inseq drops a separator that the response
    already starts with)."""
    ids = tokenizer("\n".join(texts), add_special_tokens=False)["input_ids"][skip : skip + n_tokens]
    if len(ids) < n_tokens:
        raise ValueError(f"the corpus has only {len(ids)} tokens after skipping {skip}; {n_tokens} were asked")
    return tokenizer(tokenizer.decode(ids).strip(), add_special_tokens=False)["input_ids"]


# --- results --------------------------------------------------------------------------------------------------------


def write_results(
    rows: list[dict], stem: Path, title: str, notes: Sequence[str] = (), columns: Optional[Sequence[str]] = None
) -> tuple[Path, Path]:
    """``stem.csv`` (all fields) and ``stem.md`` (title, notes, a table of ``columns``)."""
    if not rows:
        raise ValueError("no rows to write")
    stem.parent.mkdir(parents=True, exist_ok=True)
    fields = list(dict.fromkeys(k for r in rows for k in r))
    # the name plus a suffix, not with_suffix: a stem such as "slice_t0.7" has a dot of its own
    csv_path, md_path = stem.with_name(stem.name + ".csv"), stem.with_name(stem.name + ".md")
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    md_path.write_text("\n".join([f"# {title}", "", *notes, "", markdown_table(rows, columns or fields), ""]))
    return csv_path, md_path


def markdown_table(rows: list[dict], columns: Sequence[str]) -> str:
    """A GitHub markdown table; floats with up to 4 significant digits, missing cells as ``-``."""

    def cell(v) -> str:
        if v is None or v == "":
            return "-"
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)
