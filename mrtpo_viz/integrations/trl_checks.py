"""MRTPOTrainer's checks that need no TRL objects: its config fields, the aggregation it splits, and how a model name
resolves (:mod:`.trl` calls them before anything loads)."""

from __future__ import annotations

import math
from pathlib import Path

from ..names import BUNDLED_POLICY, KNOWN_MODELS
from ..tasks.bundled_data import BUNDLED_POLICY_DIR
from ..training.config import MAX_GAMMA

ZERO3_REFUSAL = (
    "MRTPOTrainer does not support DeepSpeed ZeRO-3: its replay would run K + 1 forwards through "
    "ZeRO-3's partitioned parameters, which no test here has run (deepspeed 0.19.8 installs on the "
    "CPU-only test machines, but accelerate 1.15 does not start a multi-process DeepSpeed run on CPU; "
    "docs/scale.md). Use FSDP2 (fsdp_version: 2): it is tested"
)


def _real(value) -> bool:
    """A finite real number (a bool is not one: ``True`` would pass as 1)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_fields(c) -> None:
    """MRTPO's own fields and the GRPOConfig fields its math reads: types, finiteness, ranges, each named."""
    for name, low, high in (("alpha", 0.0, 1.0), ("gamma", 0.0, MAX_GAMMA)):
        value = getattr(c, name)
        if not _real(value) or not low <= value <= high:
            raise ValueError(f"{name} must be a finite number in [{low:g}, {high:g}], got {value!r}")
    if not isinstance(c.log_tokens, bool):
        raise ValueError(f"log_tokens must be True or False, got {c.log_tokens!r}")
    if c.reward_weights is not None:
        weights = c.reward_weights if isinstance(c.reward_weights, (list, tuple)) else [c.reward_weights]
        bad = [w for w in weights if not _real(w)]
        if bad or not isinstance(c.reward_weights, (list, tuple)):
            raise ValueError(f"reward_weights must be a list of finite numbers, got {c.reward_weights!r}")
    for name, least in (("num_generations", 2), ("num_generations_eval", 1)):
        value = getattr(c, name)
        if value is None and name == "num_generations_eval":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(
                f"{name} must be an integer >= {least} (completions sampled per prompt; group advantages "
                f"need at least 2 in training), got {value!r}"
            )


def check_aggregation(config) -> None:
    if config.multi_objective_aggregation != "normalize_then_sum":
        raise ValueError(
            "MRTPO needs multi_objective_aggregation='normalize_then_sum' (GDPO): it gives each "
            "reward's group-normalized advantage to the tokens relevant to it, which "
            f"{config.multi_objective_aggregation!r} never computes"
        )


def trainer_model(model):
    """``model`` as GRPOTrainer takes it: the bundled policy's and the known real models' names
    (``names.KNOWN_MODELS``) resolve to their local folders as in :func:`mrtpo_viz.load_policy` (a local folder of
    that name wins); a known model not downloaded yet is refused with the command that fetches it, not sent to the
    hub. Anything else (a folder, a hub id, a model) is passed on unchanged."""
    if not isinstance(model, str) or Path(model).expanduser().exists():
        return model
    if model == BUNDLED_POLICY:
        return str(BUNDLED_POLICY_DIR)
    if model in KNOWN_MODELS:
        from ..policy.loading import _known_folder  # load_policy's own resolution and message

        return str(_known_folder(model))
    return model


TRL_NEEDS = ("", "relevance", "shuffled", "one_context")
"""The per-token inputs MRTPOTrainer provides: the replay's (its relevance, shuffled, the one-context branch)."""


def check_credit(name) -> None:
    """A registered credit method whose input the trainer has; the others are refused with what to use instead."""
    from ..advantages import get_method

    if name == "grpo":
        raise ValueError("credit='grpo' is not a credit method: use GRPOTrainer (sum_then_normalize) for GRPO")
    method = get_method(name)
    if method.needs == "entropy":
        raise ValueError(
            f"credit={name!r} reads the sampling entropy, which MRTPOTrainer does not compute: for entropy_top use "
            "TRL's own top_entropy_quantile=0.2 with credit='gdpo' (the same mask, tests/test_credit_methods.py)"
        )
    if method.needs not in TRL_NEEDS:
        raise ValueError(
            f"credit={name!r} reads the verifiers' labelled spans ({method.needs}), a study baseline that only the "
            "project's training loop provides (python -m mrtpo_viz train --method ...)"
        )
