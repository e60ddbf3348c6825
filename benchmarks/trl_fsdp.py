"""What MRTPOTrainer costs on top of TRL's GRPOTrainer (GDPO) per step when both are sharded by FSDP2 (CPU).

The setup of ``benchmarks/trl_overhead.py`` (the bundled policy, tool calling, 2 prompts x 4 completions a step, up
to 64 tokens), on 2 processes (``torch.distributed.run``, gloo), each holding half of every layer
(accelerate's FSDP plugin, ``fsdp_version: 2``; :func:`mrtpo_viz.integrations.trl_fsdp.allow_cpu_fsdp` lets
accelerate shard on CPU): global batch 8, 4 rows per process. Each process measures the CPU time of its
``train()`` (one torch thread); the table gives their mean per step. Under FSDP2 every forward all-gathers each
layer, so MRTPO's replay (K + 1 branches per group, in lockstep across the ranks) also pays communication.

    python benchmarks/trl_fsdp.py --steps 5        # writes benchmarks/results/trl_fsdp.{csv,md}
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _common import RESULTS, load_average, machine, set_threads, write_results

VARIANTS = ("gdpo", "mrtpo alpha=1")
FSDP2 = dict(
    fsdp="full_shard",
    fsdp_config={
        "fsdp_version": 2,
        "transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"],
        "reshard_after_forward": True,
    },
)


def worker(kind: str, steps: int, seed: int, out: Path) -> None:
    """One process of the sharded run: train, then write its CPU time and TRL's metrics."""
    from trl import GRPOConfig, GRPOTrainer

    from mrtpo_viz import load_examples
    from mrtpo_viz.integrations.trl import MRTPOConfig, MRTPOTrainer, trl_dataset
    from mrtpo_viz.integrations.trl_fsdp import allow_cpu_fsdp
    from mrtpo_viz.tasks import get_verifier
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    set_threads(1)
    allow_cpu_fsdp()
    world = int(os.environ["WORLD_SIZE"])
    examples = load_examples("tool_calling", split="train")[:64]
    names = list(examples[0].verifiers)
    common = dict(
        output_dir=tempfile.mkdtemp(prefix="trl-fsdp-"),
        max_steps=steps,
        seed=seed,
        learning_rate=2e-4,
        per_device_train_batch_size=8 // world,
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
        **FSDP2,
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
                args=MRTPOConfig(**common, alpha=float(kind.split("=")[1]), log_tokens=False),
                train_dataset=data,
            )
        if not trainer.is_fsdp_enabled:
            raise SystemExit("FSDP did not turn on")
        cpu, wall = time.process_time(), time.perf_counter()
        trainer.train()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    hist = [h for h in trainer.state.log_history if "reward" in h]
    rank = trainer.accelerator.process_index
    (out / f"rank{rank}.json").write_text(
        json.dumps(
            {
                "cpu": cpu,
                "wall": wall,
                "replay": sum(h.get("mrtpo/replay_seconds", 0.0) for h in hist),
                "length": sum(h["completions/mean_length"] for h in hist) / len(hist),
                "reward": hist[-1]["reward"],
            }
        )
    )


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(kind: str, steps: int, seed: int, processes: int = 2) -> dict:
    with tempfile.TemporaryDirectory(prefix="trl-fsdp-") as tmp:
        env = dict(
            os.environ,
            OMP_NUM_THREADS="1",
            HF_HUB_OFFLINE="1",
            HF_DATASETS_OFFLINE="1",
            ACCELERATE_USE_CPU="1",
            PYTHONPATH=os.pathsep.join([str(Path(__file__).parent.parent), os.environ.get("PYTHONPATH", "")]),
        )
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            str(processes),
            "--master_port",
            str(free_port()),
            __file__,
            "--worker",
            kind,
            "--steps",
            str(steps),
            "--seed",
            str(seed),
            "--out",
            tmp,
        ]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{kind}: the sharded run failed:\n{proc.stderr[-3000:]}")
        ranks = [json.loads((Path(tmp) / f"rank{r}.json").read_text()) for r in range(processes)]
    mean = lambda key: sum(r[key] for r in ranks) / len(ranks)  # noqa: E731
    return {
        "variant": f"{kind} (FSDP2)",
        "processes": processes,
        "steps": steps,
        "cpu_s_per_process_step": mean("cpu") / steps,
        "wall_s_per_step": mean("wall") / steps,
        "replay_wall_s_per_step": mean("replay") / steps,
        "mean_completion_tokens": ranks[0]["length"],
        "final_reward": ranks[0]["reward"],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.steps, args.seed, Path(args.out))
    rows = [run(kind, args.steps, args.seed) for kind in VARIANTS]
    base = rows[0]["cpu_s_per_process_step"]
    for r in rows:
        r["cpu_vs_gdpo"] = r["cpu_s_per_process_step"] / base
    notes = [
        f"Command: `python benchmarks/trl_fsdp.py --steps {args.steps}`. Machine: {machine()}; load "
        f"{load_average()}. 2 processes (gloo) on the same 2 cores, 1 torch thread each.",
        "CPU time is each process's own (train() only, start-up excluded), averaged over the 2 processes. "
        "alpha=1 trains differently from GDPO after step 1 (other completions and lengths), so the columns "
        "compare a run's cost, not one trajectory's. The per-token log is off in both (it is written by the "
        "main process only).",
    ]
    write_results(
        rows,
        RESULTS / "trl_fsdp",
        "MRTPOTrainer vs TRL's GRPOTrainer (GDPO) under FSDP2, per step",
        notes,
        [
            "variant",
            "processes",
            "steps",
            "cpu_s_per_process_step",
            "cpu_vs_gdpo",
            "wall_s_per_step",
            "replay_wall_s_per_step",
            "mean_completion_tokens",
            "final_reward",
        ],
    )
    print((RESULTS / "trl_fsdp.md").read_text())


if __name__ == "__main__":
    main()
