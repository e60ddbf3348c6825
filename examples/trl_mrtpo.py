"""Train the bundled tiny policy with MRTPO inside TRL's GRPOTrainer, on CPU, then open the run in the app.

    pip install "mrtpo-viz[trl]"
    python examples/trl_mrtpo.py --out runs/trl-tool --steps 20

Each step samples 4 completions for each of 2 tool-calling prompts, scores them with the task's two verifiers
(``tool_call.format``, ``tool_call.correctness``), replays every completion with and without each verifier's
information, and trains on MRTPO's per-token advantages. The run folder then holds TRL's files and
``mrtpo/tokens_{step:05d}.parquet`` (every completion's tokens, relevance and token advantages). About 3 s a step on
one CPU core.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="runs/trl-tool", help="TRL's output_dir (default: %(default)s)")
    p.add_argument("--steps", type=int, default=20, help="optimizer steps (default: %(default)s)")
    p.add_argument("--task", default="tool_calling", choices=["tool_calling", "text_to_sql"])
    p.add_argument("--alpha", type=float, default=1.0, help="MRTPO mixing, 0 = GDPO (default: %(default)s)")
    p.add_argument("--lr", type=float, default=2e-4, help="learning rate (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


TRL_PARTS = ("trl", "datasets", "pyarrow")
"""What ``pip install 'mrtpo-viz[trl]'`` adds (TRL pulls datasets and pyarrow)."""


def main(argv=None) -> Path:
    import torch

    from mrtpo_viz import load_examples
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    args = parse_args(argv)
    try:
        from mrtpo_viz.integrations.trl import MRTPOConfig, MRTPOTrainer, trl_dataset
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in TRL_PARTS:
            raise
        raise SystemExit(f"This example needs TRL ({e.name} is not installed): pip install 'mrtpo-viz[trl]'") from None
    torch.set_num_threads(1)
    examples = load_examples(args.task, split="train")[:64]
    warnings.simplefilter("ignore", FutureWarning)  # transformers 5 renames gradient_checkpointing
    config = MRTPOConfig(
        output_dir=args.out,
        max_steps=args.steps,
        seed=args.seed,
        learning_rate=args.lr,
        alpha=args.alpha,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=64,
        temperature=1.0,
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        dataloader_num_workers=0,  # a CPU run, float32
        logging_steps=1,
        log_completions=True,
        num_completions_to_print=0,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
    )
    trainer = MRTPOTrainer(
        str(BUNDLED_POLICY_DIR), list(examples[0].verifiers), args=config, train_dataset=trl_dataset(examples)
    )
    clock = time.perf_counter()
    trainer.train()
    out = Path(args.out).resolve()
    seconds = time.perf_counter() - clock
    last = next(h for h in reversed(trainer.state.log_history) if "reward" in h)
    print(
        f"\n{args.steps} steps in {seconds:.0f} s; last step: reward {last['reward']:.3f}, "
        + ", ".join(
            f"{k.split('/')[2]} relevance {v:.3f}"
            for k, v in last.items()
            if k.endswith("/mean") and k.startswith("mrtpo/relevance/")
        )
    )
    print(
        f"Per-token log: {out / 'mrtpo'}\n\nOpen the run in the app (tab Runs):\n"
        f"    MRTPO_RUNS_DIR={out.parent} python app.py\n"
        f"and type {out.name!r} into the run folder box (or upload a zip of {out})."
    )
    return out


if __name__ == "__main__":
    main()
