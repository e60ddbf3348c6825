"""Peak memory of a replay on a Qwen2-0.5B-shaped model (vocabulary 151,936), and what the metric costs.

A replay of T response tokens with K verifiers holds the (K + 1, T, V) branch logits in bf16 (for T = 1,024, K = 3:
1.2 GB) plus whatever the metric needs on top. The metric works position chunk by position chunk in float32, so
its extra memory is about ``chunk rows x V x 4 bytes`` per temporary instead of ``K x T x V x 4``. This script
measures, with the model loaded (the weights are the baseline, not counted):

- ``replay``: peak RSS above the baseline of one ``replay()`` call (K = 3; T = 512 and 1,024 by default), with its
  phase timings (``Relevance.timings``);
- ``metric``: the exact JS and KL alone on (K + 1, T, V) bf16 logits, for several chunk sizes and unchunked (one
  chunk for all positions) where that fits in half the free memory: time and peak;
- ``js_topk``: the top-k lower bound on JS (``divergence.js_topk``, k = 64) on the same logits: time, largest
  shortfall from the exact JS, and the tail mass that bounds the error.

RSS is sampled every 2 ms in a thread (``_common.measure``). Random weights and random metric logits: memory and
time depend on the shapes, not the values (the top-k tails do: random distributions are flat).

    python benchmarks/memory.py                          # T = 512 and 1,024, all 24 layers
    python benchmarks/memory.py --layers 2 --lengths 1024 --metric-length 1024   # the run in results/ (see there)
    python benchmarks/memory.py --quick                  # T = 256 only
    python benchmarks/memory.py --checkpoint smollm2-135m-instruct --quick --out /tmp/memory   # a real model

``--checkpoint`` (a folder or a known model's name) measures that model instead of the random 0.5B shape, in
float32 unless ``--dtype`` says otherwise; the metric-alone rows then use its vocabulary size.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from _common import RESULTS, measure, set_threads  # noqa: E402
from vs_inseq import Case, make_case, run_replay  # noqa: E402

K = 3
CHUNK_ROWS = (4, None, 256)
"""Rows of V per metric chunk; None is the library default (32 MiB of float32, 55 rows at V = 151,936)."""
REPLAY_CHUNK_ROWS = (None,)
"""Chunk sizes of the whole-replay rows (the metric-alone rows compare all of ``CHUNK_ROWS``; on this shared
machine a whole 0.5B replay per chunk size did not fit the time)."""
TOPK = 64


def chunk_label(rows) -> str:
    return "default" if rows is None else str(rows)


def replay_rows(policy, case: Case, chunk_rows=CHUNK_ROWS) -> list[dict]:
    """Peak RSS above the loaded weights and the phase timings of one replay per chunk size."""
    from mrtpo_viz.relevance.engine import replay
    from mrtpo_viz.tasks import get_verifier

    vs = [get_verifier(n) for n, _, _ in case.verifiers]
    infos = {n: i for n, _, i in case.verifiers}
    rows = []
    for c in chunk_rows:
        m = measure(replay, policy, case.prompt, case.response_ids, vs, infos=infos, metric="js", chunk_size=c)
        t = m.result.timings
        rows.append(
            {
                "part": "replay",
                "response_tokens": len(case.response_ids),
                "K": len(vs),
                "chunk_rows": chunk_label(c),
                "seconds": round(m.seconds, 3),
                "peak_mib": round(m.peak_mib),
                "forward_s": round(t["forward"], 3),
                "metric_and_columns_s": round(t["metric"], 3),
            }
        )
        print(rows[-1], flush=True)
    return rows


def unchunked_fits(logits: torch.Tensor) -> bool:
    """About 6 float32 temporaries of (K, T, V) for an unchunked JS; run it only within half the free memory."""
    import psutil

    need = 6 * (logits.shape[0] - 1) * logits.shape[1] * logits.shape[2] * 4
    return need < psutil.virtual_memory().available / 2


def metric_rows(logits: torch.Tensor, chunk_rows=CHUNK_ROWS) -> list[dict]:
    """The exact JS and KL alone on the replay's logits, per chunk size (and unchunked where it fits)."""
    from mrtpo_viz.divergence import chunked_metric

    without, with_k = logits[:1], logits[1:]  # (1, T, V), (K, T, V)
    Kk, T = with_k.shape[:2]
    sizes = list(chunk_rows) + ([Kk * T] if unchunked_fits(logits) else [])
    rows = []
    for c in sizes:
        for metric in ("js", "kl"):
            m = measure(chunked_metric, with_k, without, metric, c)
            label = "unchunked" if c == Kk * T else chunk_label(c)
            rows.append(
                {
                    "part": f"metric {metric}",
                    "response_tokens": T,
                    "K": Kk,
                    "chunk_rows": label,
                    "seconds": round(m.seconds, 3),
                    "peak_mib": round(m.peak_mib),
                }
            )
            print(rows[-1], flush=True)
    if Kk * T not in sizes:
        rows.append(
            {
                "part": "metric js",
                "response_tokens": T,
                "K": Kk,
                "chunk_rows": "unchunked",
                "note": "not run: needs more than half the free memory",
            }
        )
    return rows


def chunked_js_topk(with_k: torch.Tensor, without: torch.Tensor, k: int, rows: int = 64):
    """``divergence.js_topk`` over position chunks: (K, T, V) and (1, T, V) logits -> (js, tail), each (K, T)."""
    from mrtpo_viz.divergence import js_topk

    parts = []
    for s in range(0, with_k.shape[1], rows):
        w = with_k[:, s : s + rows]
        parts.append(js_topk(w, without[:, s : s + rows].expand_as(w), k))
    return torch.cat([p[0] for p in parts], -1), torch.cat([p[1] for p in parts], -1)


def topk_row(logits: torch.Tensor, exact_s: float) -> dict:
    """Time of the top-k JS bound, its largest shortfall from the exact JS, and the tail mass (its error bound)."""
    from mrtpo_viz.divergence import chunked_metric

    without, with_k = logits[:1], logits[1:]
    m = measure(chunked_js_topk, with_k, without, TOPK)
    js_fast, tail = m.result
    exact = chunked_metric(with_k, without, "js")
    return {
        "part": f"js_topk k={TOPK}",
        "response_tokens": with_k.shape[1],
        "K": with_k.shape[0],
        "chunk_rows": "64",
        "seconds": round(m.seconds, 3),
        "peak_mib": round(m.peak_mib),
        "speedup_vs_exact": round(exact_s / m.seconds, 1),
        "max_shortfall": float((exact - js_fast).max()),
        "max_tail_mass": float(tail.max()),
        "mean_tail_mass": float(tail.mean()),
    }


def synthetic_logits(T: int, V: int = 151_936, seed: int = 0) -> torch.Tensor:
    """(K + 1, T, V) random bf16 logits: the metric's time and memory depend on the shape, not the values."""
    g = torch.Generator().manual_seed(seed)
    return (2.0 * torch.randn(K + 1, T, V, generator=g)).to(torch.bfloat16)


def bench(policy, Ts, on_rows=lambda rows: None, metric_T: Optional[int] = None) -> list[dict]:
    """One replay per T (default chunk; the largest T first), then the metric alone per chunk size and the top-k
    bound on (K + 1, metric_T, V) logits of random values (no second forward; default: the smallest T).
    ``on_rows`` gets the rows so far after each step (partial results survive a stop)."""
    run_replay(policy, make_case(policy.tokenizer, 16, K), "js")  # warm-up
    rows = []
    for T in sorted(Ts, reverse=True):
        rows += replay_rows(policy, make_case(policy.tokenizer, T, K), REPLAY_CHUNK_ROWS)
        on_rows(rows)
    logits = synthetic_logits(metric_T or min(Ts), policy.model.config.vocab_size)
    metric = metric_rows(logits)
    rows += metric
    on_rows(rows)
    exact_s = next(r["seconds"] for r in metric if r["part"] == "metric js" and r["chunk_rows"] == "default")
    rows.append(topk_row(logits, exact_s))
    print(rows[-1], flush=True)
    on_rows(rows)
    return rows


def run(quick: bool = True) -> list[dict]:
    """Rows for T = 256 on a 2-layer 0.5B shape (quick), or 512 and 1,024 on the full shape."""
    from mrtpo_viz.policy import load_policy

    with _common.qwen05b_folder(layers=2 if quick else None) as folder:
        policy = load_policy(str(folder), device="cpu", dtype="bfloat16")
        return bench(policy, (256,) if quick else (512, 1024))


COLUMNS = [
    "part",
    "response_tokens",
    "K",
    "chunk_rows",
    "seconds",
    "peak_mib",
    "forward_s",
    "metric_and_columns_s",
    "speedup_vs_exact",
    "max_shortfall",
    "max_tail_mass",
    "note",
]


def notes(args, weights_mib: float, policy) -> list[str]:
    layers = f"{args.layers} of its 24 decoder layers" if args.layers else "all 24 decoder layers"
    model = (
        f"Random-init Qwen2-0.5B shape (hidden 896, vocabulary 151,936, bf16) with {layers}"
        if not args.checkpoint
        else f"`{_common.model_label(args.checkpoint)}` ({policy.describe()}, vocabulary "
        f"{policy.model.config.vocab_size:,})"
    )
    return [
        f"`{_common.command('memory.py', sys.argv[1:])}`; {_common.machine()}; load average at the end "
        f"{_common.load_average()}. {model}; RSS after loading it {weights_mib:.0f} MiB is the baseline. "
        f"K = {K} verifiers.",
        "",
        "`peak_mib`: peak RSS above the level before the call (sampled every 2 ms). `replay` rows: one "
        "`replay()` call, metric JS, default chunk (32 MiB of float32 per chunk); `forward_s` and "
        "`metric_and_columns_s` are its phases (the latter: the metric plus the per-token log-probs, entropy "
        "and top-5 columns). Under `no_grad` each decoder layer's activations are freed before the next "
        "layer runs, so fewer layers change the peak only by the KV cache of the missing layers (for 1,024 "
        "tokens and 4 branches, 2 x 4 x 2 heads x ~1,090 x 64 x 2 bytes = 2.2 MB per layer, ~50 MB for 22 "
        "layers) and the time by their forward; the (K + 1, T, V) logits, the metric and the columns are "
        "the same. `metric` rows: the metric alone on (K + 1, T, V) bf16 logits of random values (time and "
        "memory depend on the shape only), per `chunk_rows` (rows of V per float32 chunk; `default` = 55 at "
        "this vocabulary; `unchunked` = one chunk for all positions, run only where it fits in half the free "
        "memory). `js_topk`: the union-of-top-k lower bound with one tail bucket; `max_shortfall` is its "
        "largest distance below the exact JS and the tail mass bounds the error (exact JS divergence <= "
        "bound^2 + tail mass); random logits are far flatter than a trained model's, so their tails are "
        "large.",
        "",
    ]


def main(argv=None) -> int:
    from mrtpo_viz.policy import load_policy

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="T = 256 only")
    ap.add_argument("--lengths", default="512,1024", help="response tokens of the replays, comma-separated")
    ap.add_argument("--metric-length", type=int, default=None, help="positions of the metric-alone rows")
    ap.add_argument(
        "--layers",
        type=int,
        default=None,
        help="keep only this many of the 24 decoder layers (same width and vocabulary; faster)",
    )
    ap.add_argument("--checkpoint", default=None, help="a real checkpoint (folder or known name) instead of the shape")
    ap.add_argument("--dtype", default=None, help="its dtype (default: float32; the 0.5B shape: bfloat16)")
    ap.add_argument("--out", default=str(RESULTS / "memory"))
    args = ap.parse_args(argv)
    set_threads(args.threads)
    import contextlib

    source = contextlib.nullcontext(args.checkpoint) if args.checkpoint else _common.qwen05b_folder(layers=args.layers)
    with source as folder:
        policy = load_policy(
            str(folder), device="cpu", dtype=args.dtype or ("float32" if args.checkpoint else "bfloat16")
        )
        _common.trim_memory()
        weights_mib = _common.rss_mib()
        model = _common.model_label(args.checkpoint) if args.checkpoint else "qwen2-0.5b-shape (random)"
        title = f"Replay memory and metric time, {model}"

        def write(rows):
            rows = [{"model": model, **r} for r in rows]
            return _common.write_results(
                rows, Path(args.out), title, notes(args, weights_mib, policy), ["model"] + COLUMNS
            )[1]

        Ts = (256,) if args.quick else tuple(int(t) for t in args.lengths.split(","))
        rows = bench(policy, Ts, write, args.metric_length)
    print(write(rows).read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
