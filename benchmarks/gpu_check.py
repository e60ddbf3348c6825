"""The CUDA path, checked: bf16 and float32 on the GPU against float32 on the CPU, and the GPU's speed.

On a CUDA machine, for the bundled policy and SmolLM2-135M-Instruct (``python -m mrtpo_viz get-model
smollm2-135m-instruct`` first):

1. agreement: replay the first test examples of tool calling and instruction following on the CPU in float32, on
   the GPU in float32 and in bfloat16 (the GPU default); max |relevance difference| against CPU float32 (bf16's
   known noise floor is ~1e-4..1e-3 on JS values: its log-probs differ from float32 by ~1e-2);
2. speed: replay vs naive (two full forwards per verifier) vs floor (prefix + one batched suffix forward, no metric)
   at ~100 and ~1,000 prompt tokens for K = 1, 3, 6 (the cases of ``replay_speed.py``), bf16, synchronized timings;
3. a training step of each advantage method on tool calling (bf16), the median of its steps' time.

Without CUDA it writes a results file that says so, with the command to run.

    python benchmarks/gpu_check.py                     # writes benchmarks/results/gpu_check.{md,csv}
    python benchmarks/gpu_check.py --models tiny-mrtpo --quick
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import RESULTS, machine, write_results  # noqa: E402

NOT_MEASURED = (
    "Not measured: no GPU was lent to this task (the machines it ran on have no CUDA device). On a CUDA "
    "machine run `python benchmarks/gpu_check.py` (after `python -m mrtpo_viz get-model "
    "smollm2-135m-instruct`); it rewrites this file with the agreement, speed and training-step tables."
)


def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn, *args, repeats: int = 3) -> float:
    """Median synchronized seconds of ``fn(*args)`` after one warm-up call."""
    fn(*args)
    out = []
    for _ in range(repeats):
        _sync()
        start = time.perf_counter()
        fn(*args)
        _sync()
        out.append(time.perf_counter() - start)
    return statistics.median(out)


def agreement_rows(name: str, n_examples: int, device: str = "cuda") -> list[dict]:
    """Max |scores - CPU float32 scores| of GPU float32 and GPU bf16 replays of the first test examples."""
    from mrtpo_viz.policy import clear_cache, load_policy
    from mrtpo_viz.relevance import replay
    from mrtpo_viz.tasks import load_examples

    examples = [ex for task in ("tool_calling", "instruction_following") for ex in load_examples(task)[:n_examples]]
    runs = {}
    for dev, dtype in (("cpu", "float32"), (device, "float32"), (device, "bfloat16")):
        policy = load_policy(name, device=dev, dtype=dtype)
        runs[(dev, dtype)] = [replay(policy, ex, ex.reference, list(ex.verifiers)).scores for ex in examples]
        clear_cache()
    ref = runs[("cpu", "float32")]
    rows = []
    for dev, dtype in ((device, "float32"), (device, "bfloat16")):
        diffs = [float((a - b).abs().max()) for a, b in zip(runs[(dev, dtype)], ref)]
        rows.append(
            {
                "part": "agreement",
                "model": name,
                "device": dev,
                "dtype": dtype,
                "examples": len(examples),
                "max_abs_diff_vs_cpu_fp32": max(diffs),
                "median_abs_diff": statistics.median(diffs),
            }
        )
    return rows


def speed_rows(name: str, prompts, Ks, device: str = "cuda") -> list[dict]:
    """Replay / naive / floor seconds on the GPU in bf16, the cases of replay_speed.py on the model's tokenizer."""
    import replay_speed as rs

    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.relevance.engine import plan_replay

    policy = load_policy(name, device=device, dtype="bfloat16")
    texts = rs.corpus()
    rows = []
    for P in prompts:
        for K in Ks:
            case = rs.make_case(policy.tokenizer, texts, P, K)
            plan = plan_replay(policy, case[0], case[1], case[2], infos=case[3])
            times = {m: timed(rs.METHODS[m], policy, case, plan) for m in ("replay", "naive", "floor")}
            rows.append(
                {
                    "part": "speed",
                    "model": name,
                    "device": device,
                    "dtype": "bfloat16",
                    "prompt_tokens": len(plan.branches.full_ids(0)) - len(plan.branches.response_ids),
                    "K": K,
                    **{f"{m}_s": round(s, 4) for m, s in times.items()},
                    "naive_over_replay": round(times["naive"] / times["replay"], 2),
                    "replay_over_floor": round(times["replay"] / times["floor"], 2),
                }
            )
            print(rows[-1], flush=True)
    return rows


def training_rows(name: str, steps: int, device: str = "cuda", methods=None) -> list[dict]:
    """Median seconds per training step of each advantage method (tool calling, bf16, G = 4, 2 prompts)."""
    from mrtpo_viz.names import METHODS
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.training import TrainConfig, train

    policy = load_policy(name, device=device, dtype="bfloat16")
    rows = []
    for method in methods or METHODS:
        cfg = TrainConfig(
            task="tool_calling",
            method=method,
            steps=steps,
            group_size=4,
            prompts_per_step=2,
            max_new_tokens=48,
            dtype="bfloat16",
        )
        seconds = [sum(m.times.values()) for m in train(cfg, policy=policy)][1:]  # the first step warms up
        rows.append(
            {
                "part": "training",
                "model": name,
                "device": device,
                "dtype": "bfloat16",
                "method": method,
                "steps": len(seconds),
                "seconds_per_step": round(statistics.median(seconds), 3),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="tiny-mrtpo,smollm2-135m-instruct")
    ap.add_argument("--examples", type=int, default=5, help="test examples per task for the agreement")
    ap.add_argument("--quick", action="store_true", help="~100 tokens, K = 1, 3; 3 training steps")
    ap.add_argument("--out", default=str(RESULTS / "gpu_check"))
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of the same code (tests use it)")
    args = ap.parse_args(argv)
    stem = Path(args.out)
    if args.device == "cuda" and not torch.cuda.is_available():
        write_results(
            [{"part": "all", "result": "not measured", "reason": "no CUDA device"}],
            stem,
            "GPU path check",
            [NOT_MEASURED, "", f"Checked on: {machine()}."],
        )
        print(NOT_MEASURED)
        return 0
    prompts, Ks, steps = ([100], [1, 3], 3) if args.quick else ([100, 1000], [1, 3, 6], 6)
    rows = []
    for name in args.models.split(","):
        rows += (
            agreement_rows(name, args.examples, args.device)
            + speed_rows(name, prompts, Ks, args.device)
            + training_rows(name, steps, args.device)
        )
    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" else "a CPU dry run (no GPU)"
    notes = [
        f"`python benchmarks/gpu_check.py{' --quick' if args.quick else ''}` on {machine()}, {gpu}, "
        f"torch {torch.__version__}.",
        "agreement: max |relevance - CPU float32 relevance| over the examples; speed: synchronized medians "
        "of 3 runs after a warm-up; training: median seconds per step (the first step excluded).",
    ]
    write_results(rows, stem, "GPU path check", notes)
    print(stem.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
