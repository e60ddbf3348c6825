"""MRTPOTrainer on the bundled policy for 2 steps, either sharded by FSDP2 over the processes that ``torchrun``
started (gloo, CPU) or in one process on the completions the sharded run sampled; writes what the test compares.

    python -m torch.distributed.run --nproc_per_node 2 tests/integrations/fsdp_driver.py OUT fsdp2
    python tests/integrations/fsdp_driver.py OUT single     # after the above: replays OUT/fsdp2/completions.json

Sampling draws from each process's RNG, so one process cannot sample what two did; the one-process run instead
takes the sharded run's sampled completion ids (everything after sampling is computed afresh: rewards, the
replay, advantages, loss, update). Writes ``OUT/<mode>/result.json``: the token advantages and TRL's sequence
advantages of every generation batch (gathered rows, in TRL's global order), the logged losses, and the full
parameters after the steps (``OUT/<mode>/params.pt``).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import torch

warnings.simplefilter("ignore")
torch.set_num_threads(1)

from accelerate.utils import gather_object  # noqa: E402

from mrtpo_viz.integrations.trl import MRTPOConfig, MRTPOTrainer  # noqa: E402
from mrtpo_viz.integrations.trl_fsdp import allow_cpu_fsdp, is_fsdp2  # noqa: E402
from mrtpo_viz.tasks import Verifier  # noqa: E402
from tests.integrations.test_trl import POLICY, config, dataset  # noqa: E402

FSDP2 = dict(
    fsdp="full_shard",
    fsdp_config={
        "fsdp_version": 2,
        "transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"],
        "reshard_after_forward": True,
        "state_dict_type": "FULL_STATE_DICT",
    },
)


# Rewards that vary between the tiny policy's completions (its 8-token answers are often alike), on a dyadic grid
# (exact in float32, so both runs score them identically).
def _texts(completions):
    return [c if isinstance(c, str) else c[-1]["content"] for c in completions]


def ords(completions, **kwargs):
    return [(sum(map(ord, c)) % 8) / 8 for c in _texts(completions)]


def distinct(completions, **kwargs):
    return [(len(set(c)) % 4) / 4 for c in _texts(completions)]


VERIFIERS = [
    Verifier.from_trl(
        fn, name=fn.__name__, info=lambda ex, _n=fn.__name__: f"{_n} of the answer to: {ex.messages()[-1]['content']}"
    )
    for fn in (ords, distinct)
]
GLOBAL_BATCH = 8  # 2 prompts x 4 generations per step, in both runs
SEED = int(os.environ.get("MRTPO_FSDP_SEED", "1234"))


class Recorded(MRTPOTrainer):
    """Records each generation batch's sampled ids (sharded run) or replays them (one-process run)."""

    replay_ids: list | None = None

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        if self.replay_ids is not None:
            ids = self.replay_ids[len(self.sampled)]
            self.sampled.append(ids)
            return ids, None
        ids, logprobs = super()._generate_single_turn(
            prompt_ids, images, multimodal_fields, num_generations, has_tool_images
        )
        self.sampled.append([list(map(int, r)) for r in gather_object([list(map(int, r)) for r in ids])])
        return ids, logprobs

    def _relevance(self, examples, output, lengths, applies):
        """Whether the model the replay runs is the FSDP2-sharded one (not an unsharded copy)."""
        self.sharded_replays.append(is_fsdp2(self.accelerator.unwrap_model(self.model)))
        return super()._relevance(examples, output, lengths, applies)

    def _log_batch(self, mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s):
        mask = output["completion_mask"].cpu()
        local = [
            (row[: int(m.sum())].tolist(), float(a))
            for row, m, a in zip(token_adv.cpu().double(), mask, output["advantages"].cpu().double())
        ]
        self.batches.append(gather_object(local))
        return super()._log_batch(
            mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s
        )


def full_params(model) -> dict[str, torch.Tensor]:
    """Every parameter whole (an FSDP2 DTensor is all-gathered: every rank must call this)."""
    return {
        n: (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().clone().double()
        for n, p in model.named_parameters()
    }


def main(out: Path, mode: str) -> None:
    sharded = mode == "fsdp2"
    if sharded:
        allow_cpu_fsdp()
    world = int(os.environ.get("WORLD_SIZE", "1")) if sharded else 1
    extra = FSDP2 if sharded else {}
    args = config(
        out,
        mode,
        MRTPOConfig,
        per_device_train_batch_size=GLOBAL_BATCH // world,
        alpha=1.0,
        seed=SEED,
        data_seed=SEED,
        reward_weights=[1.0, 0.5],
        **extra,
    )
    trainer = Recorded(model=POLICY, reward_funcs=VERIFIERS, train_dataset=dataset(), args=args)
    trainer.sampled, trainer.batches, trainer.sharded_replays = [], [], []
    if not sharded:
        trainer.replay_ids = json.loads((out / "fsdp2" / "completions.json").read_text())
    if sharded and not trainer.is_fsdp_enabled:
        raise SystemExit("FSDP did not turn on")
    trainer.train()
    params = full_params(trainer.model)
    if trainer.accelerator.is_main_process:
        here = out / mode
        here.mkdir(parents=True, exist_ok=True)
        if sharded:
            (here / "completions.json").write_text(json.dumps(trainer.sampled))
        logged = [h for h in trainer.state.log_history if "loss" in h]
        plugin = getattr(trainer.accelerator.state, "fsdp_plugin", None)
        (here / "result.json").write_text(
            json.dumps(
                {
                    "world": world,
                    "fsdp_version": getattr(plugin, "fsdp_version", None),
                    "dtensor": any(hasattr(p, "full_tensor") for p in trainer.model.parameters()),
                    "sharded_replays": trainer.sharded_replays,
                    "losses": [h["loss"] for h in logged],
                    "grad_norms": [h["grad_norm"] for h in logged],
                    "batches": trainer.batches,
                }
            )
        )
        torch.save(params, here / "params.pt")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
