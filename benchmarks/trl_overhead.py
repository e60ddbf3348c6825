"""What MRTPOTrainer costs on top of TRL's GRPOTrainer (GDPO), per optimizer step, on the bundled policy (CPU).

The configuration of ``examples/trl_mrtpo.py`` (tool calling, 2 prompts x 4 completions a step, up to 64 tokens).
Variants: ``GRPOTrainer(multi_objective_aggregation="normalize_then_sum")``; ``MRTPOTrainer`` with ``alpha=0`` (the
same trajectory as GDPO: the replay runs only for the per-token log) and with ``alpha=1``. The process CPU time of
``train()`` (one torch thread: about the compute, little disturbed by other load) is divided by the steps; the
replay's share comes from the ``mrtpo/replay_seconds`` metric (wall time).

    python benchmarks/trl_overhead.py --steps 10        # writes benchmarks/results/trl_overhead.{csv,md}
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings

from _common import RESULTS, load_average, machine, set_threads, write_results


def run(kind: str, steps: int, seed: int) -> dict:
    from trl import GRPOConfig, GRPOTrainer

    from mrtpo_viz import load_examples
    from mrtpo_viz.integrations.trl import MRTPOConfig, MRTPOTrainer, trl_dataset
    from mrtpo_viz.tasks import get_verifier
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    examples = load_examples("tool_calling", split="train")[:64]
    names = list(examples[0].verifiers)
    common = dict(
        output_dir=tempfile.mkdtemp(prefix="trl-overhead-"),
        max_steps=steps,
        seed=seed,
        learning_rate=2e-4,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=64,
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        multi_objective_aggregation="normalize_then_sum",
    )
    data = trl_dataset(examples)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "gdpo":
            trainer = GRPOTrainer(
                str(BUNDLED_POLICY_DIR),
                [get_verifier(n).as_trl_reward() for n in names],
                args=GRPOConfig(**common),
                train_dataset=data,
            )
        else:
            trainer = MRTPOTrainer(
                str(BUNDLED_POLICY_DIR),
                names,
                args=MRTPOConfig(**common, alpha=float(kind.split("=")[1])),
                train_dataset=data,
            )
        cpu, wall = time.process_time(), time.perf_counter()
        trainer.train()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    hist = [h for h in trainer.state.log_history if "reward" in h]
    replay = sum(h.get("mrtpo/replay_seconds", 0.0) for h in hist)
    length = sum(h["completions/mean_length"] for h in hist) / len(hist)
    return {
        "variant": kind,
        "steps": steps,
        "cpu_s_per_step": cpu / steps,
        "wall_s_per_step": wall / steps,
        "replay_wall_s_per_step": replay / steps,
        "mean_completion_tokens": length,
        "final_reward": hist[-1]["reward"],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    set_threads(1)
    rows = [run(kind, args.steps, args.seed) for kind in ("gdpo", "mrtpo alpha=0", "mrtpo alpha=1")]
    base = rows[0]["cpu_s_per_step"]
    for r in rows:
        r["cpu_vs_gdpo"] = r["cpu_s_per_step"] / base
    notes = [
        f"Command: `python benchmarks/trl_overhead.py --steps {args.steps}`. Machine: {machine()}; load "
        f"{load_average()}.",
        "alpha=0 follows GDPO's trajectory exactly, so its extra CPU time is the replay and the per-token log; "
        "alpha=1 trains differently (other completions and lengths after step 1).",
    ]
    write_results(
        rows,
        RESULTS / "trl_overhead",
        "MRTPOTrainer vs TRL's GRPOTrainer (GDPO), per step",
        notes,
        [
            "variant",
            "steps",
            "cpu_s_per_step",
            "cpu_vs_gdpo",
            "wall_s_per_step",
            "replay_wall_s_per_step",
            "mean_completion_tokens",
            "final_reward",
        ],
    )
    print((RESULTS / "trl_overhead.md").read_text())


if __name__ == "__main__":
    main()
