"""The replay's work after the forward, on its own: what the chunk size and the one-pass columns buy.

Random float32 logits of a replay's shape (rows ``[without, with_1..K]``, T positions, a V-entry vocabulary; default
SmolLM2's 49,152, K = 3, T = 128), no model. Methods, measured interleaved (repeat 1 of each, then repeat 2, ...):

- ``js 1 MiB`` / ``js 32 MiB``: ``divergence.chunked_metric(with, without, "js")`` with chunks of 1 MiB (the default,
  :data:`mrtpo_viz.divergence.CHUNK_ELEMENTS`) and of 32 MiB (the default before) per temporary.
- ``separate``: the JS and then ``token_stats`` of every row (log-prob of the token, entropy, top-5), as the replay
  computed its columns before ``relevance/columns.py``, at the default chunk size.
- ``one pass``: ``relevance.columns.replay_columns`` (the same columns, the entropy of the without-row only).

Ratios are medians of per-repeat ratios, so a shared machine's load moves both sides alike; the results file names
the CPU, its vector flags, the threads and the load average at the start and the end.

    python benchmarks/replay_columns.py                      # writes benchmarks/results/replay_columns.md
    python benchmarks/replay_columns.py --threads 2 --vocab 2048 --out /tmp/tiny.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

import _common
from mrtpo_viz.divergence import chunked_metric, token_stats
from mrtpo_viz.relevance.columns import replay_columns

MIB_32 = 32 * 2**20 // 4  # float32 elements in 32 MiB


def methods(without: torch.Tensor, with_k: torch.Tensor, ids: torch.Tensor) -> dict:
    V = without.shape[-1]
    big = max(1, MIB_32 // V)  # rows of V per 32 MiB chunk
    both = torch.cat([without, with_k])

    def separate():
        chunked_metric(with_k, without, "js")
        token_stats(both, ids.expand(both.shape[0], -1), topk=5)

    return {
        "js 1 MiB": lambda: chunked_metric(with_k, without, "js"),
        "js 32 MiB": lambda: chunked_metric(with_k, without, "js", chunk_size=big),
        "separate": separate,
        "one pass": lambda: replay_columns(without, with_k, ids, topk=5),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, default=49_152)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="results file (default: benchmarks/results/replay_columns.md)")
    args = ap.parse_args()
    _common.set_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    V, K, T = args.vocab, args.k, args.tokens
    without = torch.randn(1, T, V, generator=g) * 3
    with_k = without + torch.randn(K, T, V, generator=g)  # related distributions, as a replay's branches are
    ids = torch.randint(0, V, (T,), generator=g)
    fns = methods(without, with_k, ids)
    load0 = os.getloadavg()[0]
    for fn in fns.values():  # warm-up, not counted
        fn()
    times = {name: [] for name in fns}
    for _ in range(args.repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)

    def ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(times[a], times[b]))

    lines = [
        "# The replay's work after the forward: chunk size and one-pass columns",
        "",
        f"`{_common.command('replay_columns.py', sys.argv[1:])}`: random float32 logits, "
        f"K = {K} with-rows and one without-row, T = {T}, V = {V:,}; {_common.cpu_description()}; "
        f"{args.threads} thread(s); medians of {args.repeats} interleaved repeats; load average {load0:.2f} at the "
        f"start, {os.getloadavg()[0]:.2f} at the end.",
        "",
        "| method | median |",
        "|---|---:|",
        *(f"| {name} | {statistics.median(ts) * 1000:.1f} ms |" for name, ts in times.items()),
        "",
        f"JS with 32 MiB chunks / 1 MiB chunks: **{ratio('js 32 MiB', 'js 1 MiB'):.2f}x**; the columns computed "
        f"separately / in one pass: **{ratio('separate', 'one pass'):.2f}x** (medians of per-repeat ratios).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out) if args.out else _common.RESULTS / "replay_columns.md"
    out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
