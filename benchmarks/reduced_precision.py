"""Agreement of a reduced-precision replay (bfloat16, or int8 through torchao) with the float32 replay, and its speed.

For the first ``--n`` test examples of every task family with a gold reference (the split of
``benchmarks/localization.py``), the gold response is replayed with every verifier of the example (metric ``js``, no
control) by the policy loaded in float32 and in each ``--modes`` mode. Per case and verifier: the absolute differences
of the JS scores (max and p99 over all tokens of all cases), and whether the 3 most relevant tokens are the same set
(top-3 agreement; also the mean overlap of the two sets, out of 3). Seconds: the median replay of each mode; speed:
the median over cases and ``--repeats`` of the per-repeat ratio mode / float32 (the modes interleaved within a
repeat, their order rotated between repeats, so a change of the machine's load hits every mode alike).

Modes: ``bfloat16`` (weights and activations), ``int8-weight`` (torchao ``Int8WeightOnlyConfig``: int8 per-row
weights of every linear layer, float32 activations) and ``int8-dynamic`` (``Int8DynamicActivationInt8WeightConfig``:
int8 weights and per-token int8 activations). The int8 modes need ``pip install torchao``; they quantize a copy of the
float32 model in place (eager, no ``torch.compile``: the replay runs eager).

Whether bfloat16 is worth offering depends on the CPU: with AVX-512 BF16 or AMX it is native; without (an AVX2
machine) torch emulates it and it is slower than float32 (``mrtpo_viz.policy.precision``). The agreement does not
depend on native support (the same rounding to bfloat16 of weights and activations), so it can be measured anywhere.

    python benchmarks/reduced_precision.py --checkpoint smollm2-135m-instruct --n 4
    python benchmarks/reduced_precision.py --checkpoint tiny-mrtpo,smollm2-135m-instruct --n 3 \\
        --modes int8-weight,int8-dynamic --repeats 3 --out benchmarks/results/reduced_precision_int8
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
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


MODES = ("bfloat16", "int8-weight", "int8-dynamic")


def reduced_policy(checkpoint: str, mode: str, float32_policy):
    """The policy of ``mode``: bfloat16 loaded as such; an int8 mode a copy of the float32 model quantized by torchao
    (the loader's cache keeps the float32 policy untouched)."""
    from mrtpo_viz.policy import load_policy

    if mode == "bfloat16":
        return load_policy(checkpoint, device="cpu", dtype="bfloat16")
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, Int8WeightOnlyConfig, quantize_

    config = Int8WeightOnlyConfig() if mode == "int8-weight" else Int8DynamicActivationInt8WeightConfig()
    model = copy.deepcopy(float32_policy.model)
    quantize_(model, config)
    return dataclasses.replace(float32_policy, model=model)


def compare(checkpoint: str, n: int, modes: list[str], repeats: int = 1) -> tuple[dict, dict]:
    """Per mode: the (example, verifier) rows and the summary."""
    import torch

    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.relevance import replay
    from mrtpo_viz.relevance.warm import warm_policy

    policies = {"float32": load_policy(checkpoint, device="cpu", dtype="float32")}
    for mode in modes:
        policies[mode] = reduced_policy(checkpoint, mode, policies["float32"])
    for p in policies.values():
        warm_policy(p)
    rows = {m: [] for m in modes}
    diffs, scores = {m: [] for m in modes}, []
    seconds, ratios = {d: [] for d in policies}, {m: [] for m in modes}
    names = list(policies)
    for i, (task, ex) in enumerate(cases(n)):
        rel = {}
        for r in range(repeats):
            spent = {}
            shift = (i * repeats + r) % len(names)
            for d in names[shift:] + names[:shift]:  # rotated: no mode always runs first (or after another)
                start = time.perf_counter()
                rel[d] = replay(policies[d], ex, ex.reference, list(ex.verifiers))
                spent[d] = time.perf_counter() - start
                seconds[d].append(spent[d])
            for m in modes:
                ratios[m].append(spent[m] / spent["float32"])
        a = rel["float32"].raw_scores  # (K, T)
        scores.append(a.reshape(-1))
        for m in modes:
            b = rel[m].raw_scores.float()
            diffs[m].append((a - b).abs().reshape(-1))
            for k, name in enumerate(rel["float32"].verifiers):
                top = [set(x[k].topk(min(3, x.shape[1])).indices.tolist()) for x in (a, b)]
                rows[m].append(
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
            print(m, rows[m][-1], flush=True)
    score = torch.cat(scores)
    summaries = {}
    for m in modes:
        every, mine = torch.cat(diffs[m]), rows[m]
        summaries[m] = {
            "checkpoint": _common.model_label(checkpoint),
            "mode": m,
            "cases": len(diffs[m]),
            "scores": int(every.numel()),
            "max_abs_diff": round(float(every.max()), 5),
            "p99_abs_diff": round(float(every.quantile(0.99)), 5),
            "float32_median_score": round(float(score.median()), 4),
            "float32_p90_score": round(float(score.quantile(0.9)), 4),
            "top3_same_share": round(sum(r["top3_same"] for r in mine) / len(mine), 3),
            "top3_mean_overlap": round(statistics.mean(r["top3_overlap"] for r in mine), 2),
            "float32_median_s": round(statistics.median(seconds["float32"]), 3),
            "mode_median_s": round(statistics.median(seconds[m]), 3),
            "speed_ratio": round(statistics.median(ratios[m]), 3),
            "repeats": repeats,
        }
    return rows, summaries


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
    ap.add_argument("--modes", default="bfloat16", help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--repeats", type=int, default=1, help="timed replays of each case and mode (interleaved)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(RESULTS / "reduced_precision"))
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        ap.error(f"--modes: comma-separated, of {', '.join(MODES)}")
    _common.set_threads(args.threads)
    from mrtpo_viz.policy.precision import reduced_precision_note

    load_start = _common.load_average()
    summaries, verifier_rows = [], []
    for checkpoint in args.checkpoint.split(","):
        rows, summary = compare(checkpoint, args.n, modes, args.repeats)
        for m in modes:
            summaries.append(summary[m])
            verifier_rows += [{"checkpoint": summary[m]["checkpoint"], "mode": m, **r} for r in per_verifier(rows[m])]
        print(f"load average {_common.load_average()} after {checkpoint}", flush=True)
    versions = ""
    if any(m.startswith("int8") for m in modes):
        import torchao

        versions = f" torchao {torchao.__version__}."
    notes = [
        f"`{_common.command('reduced_precision.py', sys.argv[1:] if argv is None else argv)}`; {_common.machine()}; "
        f"{_common.cpu_description()}; load average {load_start} at the start and {_common.load_average()} at the "
        f"end. {reduced_precision_note()}.{versions}",
        "",
        "JS distance (raw, no control) of each gold response of the first test examples of every family, every "
        "verifier of the example, replayed in float32 and in each mode (bfloat16: weights and activations; "
        "int8-weight: torchao int8 weights of the linear layers; int8-dynamic: int8 weights and per-token int8 "
        "activations; the metric in float32 either way). `top3_same_share`: share of (example, verifier) cases whose "
        "3 most relevant tokens are the same set. Seconds: median replay; `speed_ratio`: median of the per-repeat "
        "ratios mode / float32 (interleaved, rotated order).",
    ]
    title = "Reduced precision against float32"
    _common.write_results(summaries, Path(args.out), title, notes)
    _common.write_results(verifier_rows, Path(args.out + "_verifiers"), "Reduced precision per verifier", notes[:1])
    print(Path(args.out + ".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
