"""Progressive replay against the one-shot (batched) replay: total time, time to the tokens and to the first row.

The case of ``benchmarks/ui_latency.py``: the instruction-following test example 5 (K = 3 verifiers), a response
of 128 tokens of the policy's tokenizer. Methods, measured interleaved (repeat 1 of each, then repeat 2, ...):

- ``one-shot``: ``replay_steps(..., progressive=False)``: the K with-information suffixes in one batched forward
  (what ``mrtpo_viz.replay`` runs);
- ``progressive``: ``replay_steps(..., progressive=True)``: each verifier's suffix in a forward of its own over the
  same cropped prefix cache, a step yielded after each; the time to the tokens-only step and to the first row are
  taken from the same run.

``progressive / one-shot`` is the median of the per-repeat ratios (a shared machine's load changes both alike).

    python benchmarks/progressive_replay.py --checkpoint smollm2-135m-instruct --repeats 7
    python benchmarks/progressive_replay.py --checkpoint tiny-mrtpo --repeats 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _common  # noqa: E402
from mrtpo_viz.policy import load_policy  # noqa: E402
from mrtpo_viz.relevance.engine import plan_replay, replay_steps  # noqa: E402
from mrtpo_viz.relevance.progressive import PROGRESSIVE_FROM_S, estimate_seconds  # noqa: E402
from mrtpo_viz.tasks.example_sources import load_examples  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
TASK, EXAMPLE, K, RESPONSE_TOKENS = "instruction_following", 5, 3, 128


def one_run(policy, ex, response, verifiers, progressive: bool) -> dict:
    """Seconds from the call to each step (``tokens``: the step with no rows; ``row1``; ``total``: the last)."""
    start, marks = time.perf_counter(), {}
    for step in replay_steps(policy, ex, response, verifiers, progressive=progressive):
        now = time.perf_counter() - start
        if step.results is not None:
            marks["total"] = now
        elif step.done == 0:
            marks["tokens"] = now
        elif step.done == 1:
            marks["row1"] = now
    return marks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default="smollm2-135m-instruct")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="results file (default: benchmarks/results/progressive_<name>.md)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    policy = load_policy(args.checkpoint, device="cpu")
    ex = load_examples(TASK, split="test")[EXAMPLE]
    verifiers = list(ex.verifiers)[:K]
    ids = _common.response_ids(policy.tokenizer, _common.corpus(), RESPONSE_TOKENS + 1, skip=3000)[:RESPONSE_TOKENS]
    response = policy.tokenizer.decode(ids)
    plan = plan_replay(policy, ex, response, verifiers)
    estimate = estimate_seconds(policy, plan.branches)
    load0 = os.getloadavg()[0]
    for progressive in (False, True):  # warm-up, not counted
        one_run(policy, ex, response, verifiers, progressive)
    runs = {"one-shot": [], "progressive": []}
    for _ in range(args.repeats):
        runs["one-shot"].append(one_run(policy, ex, response, verifiers, False))
        runs["progressive"].append(one_run(policy, ex, response, verifiers, True))
    ratio = statistics.median(p["total"] / o["total"] for o, p in zip(runs["one-shot"], runs["progressive"]))
    med = {(m, k): statistics.median(r[k] for r in rs) for m, rs in runs.items() for k in rs[0]}
    T = len(plan.branches.response_ids)
    lines = [
        f"# Progressive replay: {policy.name}",
        "",
        f"`python benchmarks/progressive_replay.py --checkpoint {args.checkpoint} --repeats {args.repeats} "
        f"--threads {args.threads}`: {TASK} test example {EXAMPLE}, K = {K}, {T} response tokens, prompt prefix "
        f"{len(plan.branches.prefix_ids)} tokens; {args.threads} thread(s); medians of {args.repeats} interleaved "
        f"repeats; load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end.",
        "",
        "| method | tokens shown | first row | total |",
        "|---|---:|---:|---:|",
        f"| one-shot (batched) | - | - | {med['one-shot', 'total']:.3f} s |",
        f"| progressive | {med['progressive', 'tokens'] * 1000:.1f} ms | {med['progressive', 'row1']:.3f} s | "
        f"{med['progressive', 'total']:.3f} s |",
        "",
        f"progressive / one-shot total: **{ratio:.3f}x** (median of per-repeat ratios). The app's estimate "
        f"(`estimate_seconds`) for this replay: {estimate:.2f} s; progressive from {PROGRESSIVE_FROM_S:g} s.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out) if args.out else RESULTS / f"progressive_{Path(args.checkpoint).name}.md"
    out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
