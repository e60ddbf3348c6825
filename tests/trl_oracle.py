"""TRL's own advantage computation as a test oracle (used by tests/test_advantages_trl.py; needs ``trl``).

``trl_advantages(rewards, weights, aggregation, scale_rewards)`` runs the advantage code of
``trl.GRPOTrainer._generate_and_score_completions`` (TRL 1.16) *unchanged*: a real ``GRPOTrainer`` is built once per
number of rewards ``K`` on the bundled tiny policy, with ``K`` reward functions that return prepared values (``None``
where the value is NaN). Only generation is patched (``_generate_single_turn`` returns a fixed completion), so no
model forward runs (``beta=0`` and aligned generation/accumulation: TRL computes no old/ref log-probs). The
``"advantages"`` of its output dict are returned.

The per-case knobs are set on the trainer attributes that ``GRPOTrainer.__init__`` copies verbatim from the config
(``reward_weights`` as a float32 tensor, ``multi_objective_aggregation``, ``scale_rewards``, ``num_generations``), so
one trainer serves every case of a ``K``; ``test_advantages_trl.py`` checks that against freshly built trainers.

G = 1: ``GRPOConfig`` refuses ``num_generations < 2`` for training, but TRL's advantage code has a branch for a group
of one (``num_generations_eval = 1`` in evaluation). ``trl_advantages`` runs that branch for G = 1 by putting the
model in eval mode and setting ``num_generations_eval = 1`` (the eval path of the same method).

Single process: TRL gathers the rewards of every process before normalizing and each process then takes its slice;
the advantages of the gathered batch are exactly what this single-process call returns for the whole batch.

Usage::

    from tests.trl_oracle import trl_advantages
    adv = trl_advantages(rewards)                       # (N, G, K) NaN = None -> (N, G), GRPO
    adv = trl_advantages(rewards, weights=[1, .5], aggregation="normalize_then_sum")   # GDPO
"""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from pathlib import Path  # noqa: F401

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch

from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

POLICY = BUNDLED_POLICY_DIR

AGGREGATIONS = ("sum_then_normalize", "normalize_then_sum")
SCALE_REWARDS = ("group", "batch", "none")


class _PreparedRewards:
    """Holds the (B, K) reward matrix that the K dummy reward functions hand back to TRL."""

    def __init__(self):
        self.values: np.ndarray | None = None

    def func(self, k: int):
        def reward(prompts, completions, **kwargs):
            col = self.values[:, k]
            if len(col) != len(prompts):
                raise RuntimeError(f"prepared {len(col)} rewards for {len(prompts)} completions")
            return [None if np.isnan(v) else float(v) for v in col]

        reward.__name__ = reward.__qualname__ = f"r{k}"
        return reward


class TRLAdvantageOracle:
    """One real ``GRPOTrainer`` per K, reused across cases (building one takes ~1 s)."""

    def __init__(self, policy: str | Path = POLICY):
        self.policy = str(policy)
        self._trainers: dict[int, tuple] = {}
        self._tmp = tempfile.TemporaryDirectory(prefix="trl_oracle_")

    # -------------------------------------------------------------------------------------------------- build
    def build(self, K: int, **config):
        """A fresh ``GRPOTrainer`` with K dummy reward functions (config overrides go into ``GRPOConfig``)."""
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer

        holder = _PreparedRewards()
        args = dict(
            output_dir=os.path.join(self._tmp.name, f"K{K}"),
            use_cpu=True,
            bf16=False,
            fp16=False,
            report_to=[],
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=4,
            gradient_checkpointing=False,
            logging_steps=1,
            save_strategy="no",
            seed=0,
            dataloader_num_workers=0,
            disable_tqdm=True,
        )
        args.update(config)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer = GRPOTrainer(
                model=self.policy,
                reward_funcs=[holder.func(k) for k in range(K)],
                args=GRPOConfig(**args),
                train_dataset=Dataset.from_dict({"prompt": ["a", "b"]}),
            )
        eos = trainer.eos_token_ids[0]
        fixed = [11, 12, eos]  # any in-vocabulary ids ending in EOS

        def _fixed_generation(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
            return [list(fixed) for _ in prompt_ids], None

        trainer._generate_single_turn = _fixed_generation  # the only patch: no sampling
        return trainer, holder

    def _trainer(self, K: int):
        if K not in self._trainers:
            self._trainers[K] = self.build(K)
        return self._trainers[K]

    # -------------------------------------------------------------------------------------------------- run
    @staticmethod
    def run_trainer(
        trainer,
        holder,
        rewards: np.ndarray,
        weights=None,
        aggregation="sum_then_normalize",
        scale_rewards="group",
        set_attributes=True,
    ) -> np.ndarray:
        """TRL's advantages for ``rewards`` (N, G, K) on ``trainer`` -> (N, G) float32."""
        rewards = np.asarray(rewards, dtype=np.float64)
        N, G, K = rewards.shape
        if set_attributes:
            trainer.reward_weights = (
                torch.ones(K, dtype=torch.float32)
                if weights is None
                else torch.tensor(list(map(float, weights)), dtype=torch.float32)
            )
            trainer.multi_objective_aggregation = aggregation
            trainer.scale_rewards = scale_rewards
        if G == 1:  # GRPOConfig refuses num_generations < 2; TRL's own G = 1 branch is the eval path
            trainer.model.eval()
            trainer.num_generations_eval = 1
        else:
            trainer.model.train()
            if set_attributes:
                trainer.num_generations = G
        holder.values = rewards.reshape(N * G, K)
        inputs = [{"prompt": f"prompt {n}"} for n in range(N) for _ in range(G)]  # the sampler's layout
        logger = logging.getLogger("trl.trainer.grpo_trainer")
        level = logger.level
        logger.setLevel(logging.ERROR)  # TRL warns about every all-None row
        try:
            with torch.no_grad():
                out = trainer._generate_and_score_completions(inputs)
        finally:
            logger.setLevel(level)
            trainer.model.train()
            for mode in ("train", "eval"):
                trainer._metrics[mode].clear()
        return out["advantages"].detach().cpu().numpy().reshape(N, G)

    def __call__(self, rewards, weights=None, aggregation="sum_then_normalize", scale_rewards="group"):
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
        if scale_rewards not in SCALE_REWARDS:
            raise ValueError(f"scale_rewards must be one of {SCALE_REWARDS}, got {scale_rewards!r}")
        rewards = np.asarray(rewards, dtype=np.float64)
        if rewards.ndim != 3:
            raise ValueError(f"rewards must be (N, G, K), got shape {rewards.shape}")
        trainer, holder = self._trainer(rewards.shape[2])
        return self.run_trainer(trainer, holder, rewards, weights, aggregation, scale_rewards)


_ORACLE: TRLAdvantageOracle | None = None


def get_oracle() -> TRLAdvantageOracle:
    global _ORACLE
    if _ORACLE is None:
        _ORACLE = TRLAdvantageOracle()
    return _ORACLE


def trl_advantages(
    rewards: np.ndarray, weights=None, aggregation: str = "sum_then_normalize", scale_rewards: str = "group"
) -> np.ndarray:
    """TRL 1.16's advantages (N, G) for rewards (N, G, K), NaN meaning a reward function returned None."""
    return get_oracle()(rewards, weights, aggregation, scale_rewards)
