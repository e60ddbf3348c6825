"""Agreement of a bfloat16 replay with the float32 replay, and their speed, on the localization split.

For the first ``--n`` test examples of every task family with a gold reference (the split of
``benchmarks/localization.py``), the gold response is replayed with every verifier of the example (metric ``js``, no
control) by the policy loaded in float32 and in bfloat16. Per case and verifier: the absolute differences of the JS
scores (max and p99 over all tokens of all cases), and whether the 3 most relevant tokens are the same set (top-3
agreement; also the mean overlap of the two sets, out of 3). Seconds: the median replay of each dtype.

Whether bfloat16 is worth offering depends on the CPU: with AVX-512 BF16 or AMX it is native; without (an AVX2
machine) torch emulates it and it is slower than float32 (``mrtpo_viz.policy.precision``). The agreement does not
depend on native support (the same rounding to bfloat16 of weights and activations), so it can be measured anywhere.

    python benchmarks/reduced_precision.py --checkpoint smollm2-135m-instruct --n 4
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from _common import RESULTS  # noqa: E402


def cases(n: int):
    from mrtpo_viz.names import TASKS
    from mrtpo_viz.tasks.example_sources import load_examples

    return [(task, e) for task in TASKS for e in [e for e in load_examples(task, "test") if e.reference][:n]]


def compare(checkpoint: str, n: int) -> tuple[list[dict], dict]:
    import torch

    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.relevance import replay
    from mrtpo_viz.relevance.warm import warm_policy

    policies = {d: load_policy(checkpoint, device="cpu", dtype=d) for d in ("float32", "bfloat16")}
    for p in policies.values():
        warm_policy(p)
    rows, diffs, scores, seconds = [], [], [], {d: [] for d in policies}
    for task, ex in cases(n):
        rel = {}
        for d, policy in policies.items():
            start = time.perf_counter()
            rel[d] = replay(policy, ex, ex.reference, list(ex.verifiers))
            seconds[d].append(time.perf_counter() - start)
        a, b = rel["float32"].raw_scores, rel["bfloat16"].raw_scores  # (K, T)
        diffs.append((a - b).abs().reshape(-1))
        scores.append(a.reshape(-1))
        for k, name in enumerate(rel["float32"].verifiers):
            top = [set(x[k].topk(min(3, x.shape[1])).indices.tolist()) for x in (a, b)]
            rows.append(
                {
                    "task": task,
                    "example": ex.id,
                    "verifier": name,
                    "tokens": a.shape[1],
                    "max_abs_diff": round(float((a[k] - b[k]).abs().max()), 5),
                    "top3_same": top[0] == top[1],
                    "top3_overlap": len(top[0] & top[1]),
                }
            )
        print(rows[-1], flush=True)
    every, score = torch.cat(diffs), torch.cat(scores)
    summary = {
        "checkpoint": _common.model_label(checkpoint),
        "cases": len(diffs),
        "scores": int(every.numel()),
        "max_abs_diff": round(float(every.max()), 5),
        "p99_abs_diff": round(float(every.quantile(0.99)), 5),
        "float32_median_score": round(float(score.median()), 4),
        "float32_p90_score": round(float(score.quantile(0.9)), 4),
        "top3_same_share": round(sum(r["top3_same"] for r in rows) / len(rows), 3),
        "top3_mean_overlap": round(statistics.mean(r["top3_overlap"] for r in rows), 2),
        "float32_median_s": round(statistics.median(seconds["float32"]), 3),
        "bfloat16_median_s": round(statistics.median(seconds["bfloat16"]), 3),
    }
    return rows, summary


def per_verifier(rows: list[dict]) -> list[dict]:
    out = []
    for name in dict.fromkeys(r["verifier"] for r in rows):
        mine = [r for r in rows if r["verifier"] == name]
        out.append(
            {
                "verifier": name,
                "cases": len(mine),
                "max_abs_diff": max(r["max_abs_diff"] for r in mine),
                "top3_same_share": round(sum(r["top3_same"] for r in mine) / len(mine), 2),
                "top3_mean_overlap": round(statistics.mean(r["top3_overlap"] for r in mine), 2),
            }
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="tiny-mrtpo", help="a folder or a known name; comma-separated: each")
    ap.add_argument("--n", type=int, default=4, help="test examples per task family")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(RESULTS / "reduced_precision"))
    args = ap.parse_args(argv)
    _common.set_threads(args.threads)
    from mrtpo_viz.policy.precision import reduced_precision_note

    load_start = _common.load_average()
    summaries, verifier_rows = [], []
    for checkpoint in args.checkpoint.split(","):
        rows, summary = compare(checkpoint, args.n)
        summaries.append(summary)
        verifier_rows += [{"checkpoint": summary["checkpoint"], **r} for r in per_verifier(rows)]
    notes = [
        f"`{_common.command('reduced_precision.py', sys.argv[1:] if argv is None else argv)}`; {_common.machine()}; "
        f"{_common.cpu_description()}; load average {load_start} at the start and {_common.load_average()} at the "
        f"end. {reduced_precision_note()}.",
        "",
        "JS distance (raw, no control) of each gold response of the first test examples of every family, every "
        "verifier of the example, replayed in float32 and in bfloat16 (weights and activations; the metric in "
        "float32 either way). `top3_same_share`: share of (example, verifier) cases whose 3 most relevant tokens are "
        "the same set. Seconds: median replay.",
    ]
    _common.write_results(summaries, Path(args.out), "Reduced precision: bfloat16 against float32", notes)
    _common.write_results(verifier_rows, Path(args.out + "_verifiers"), "Reduced precision per verifier", notes[:1])
    print(Path(args.out + ".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
