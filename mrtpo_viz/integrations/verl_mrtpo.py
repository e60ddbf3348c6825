"""MRTPO as a verl advantage estimator (verl 0.9.1), registered through verl's own ``register_adv_est``.

What it departs from, and why:

- **Per-reward scores as GDPO reads them.** verl's GDPO estimator (``compute_gdpo_outcome_advantage`` in
  ``verl/trainer/ppo/core_algos.py``) reads each reward's score from ``non_tensor_batch[key]`` for the keys in
  ``algorithm.gdpo_reward_keys`` (entries of the dict a reward function returns), weighted by
  ``algorithm.gdpo_reward_weights``. This estimator reads the same two settings, so switching
  ``algorithm.adv_estimator`` from ``gdpo`` to ``mrtpo`` changes nothing else; it also reads the relevance
  ``batch["mrtpo_relevance"]`` ``(B, K, T)`` (K in the order of the keys; :mod:`.verl_relevance` computes it).
- **Two sets of statistics.** ``algorithm.mrtpo_statistics = "verl"`` (default) uses verl's GDPO statistics:
  per-reward group z-scores with ``epsilon = 1e-6``, a group of one with mean 0 and std 1 (``core_algos``'
  GRPO; ``compute_advantage`` passes ``norm_adv_by_std_in_grpo`` to GRPO only, so GDPO and this estimator
  always divide by the std there), and a batch whitening over the valid
  *tokens* of GDPO's sum (``masked_whiten``: token-weighted mean, Bessel-corrected variance, ``rsqrt(var +
  1e-8)``). MRTPO moves each reward's share to its relevant tokens and keeps those statistics, so ``alpha = 0``
  is verl's GDPO exactly and, with ``normalization = "mean"``, each response's token mean is its verl GDPO
  advantage. ``"project"`` is this project's :func:`~mrtpo_viz.advantages.mrtpo_token_advantages` (TRL's
  semantics: ``eps = 1e-4``, a group of one gets 0, batch statistics over responses, not tokens).
- **verl passes the batch only to GDPO.** ``compute_advantage`` in ``verl/trainer/ppo/ray_trainer.py`` hands
  ``non_tensor_batch`` and ``batch`` to an estimator only when it is ``gdpo``. :func:`patch_compute_advantage`
  wraps that function (a monkeypatch, applied by the recipe; verl's code is not changed on disk): for
  ``mrtpo`` it calls the registered estimator with both, for every other estimator verl's own function runs.
  It refuses to patch a ``compute_advantage`` whose source differs from the one read (:data:`PATCHED_SOURCE_SHA256`).

Config keys (``algorithm.*``): ``adv_estimator=mrtpo``, ``gdpo_reward_keys``, ``gdpo_reward_weights``, and, added
with hydra's ``+``: ``mrtpo_alpha`` (1.0), ``mrtpo_gamma`` (1.0), ``mrtpo_normalization`` ("mean"),
``mrtpo_statistics`` ("verl"). docs/scale.md has the recipe.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import sys
from collections.abc import Callable
from typing import Any, Optional

import numpy as np
import torch

from ..advantages import mrtpo_token_advantages
from ..advantages.mrtpo import NORMALIZATIONS, mrtpo_token_weights

ESTIMATOR = "mrtpo"
"""The name under which the estimator is registered (``algorithm.adv_estimator=mrtpo``)."""
RELEVANCE_KEY = "mrtpo_relevance"
"""The ``DataProto.batch`` key of the relevance ``(B, K, T)``."""
STATISTICS = ("verl", "project")
"""``algorithm.mrtpo_statistics``: whose group and batch statistics (see the module docstring)."""
VERL_EPSILON = 1e-6
"""``compute_grpo_outcome_advantage``'s default ``epsilon`` (verl 0.9.1); GDPO does not pass another."""
WHITEN_EPSILON = 1e-8
"""``masked_whiten``'s ``rsqrt(var + 1e-8)`` and ``masked_mean``'s ``mask.sum() + 1e-8`` (verl 0.9.1)."""
PATCHED_SOURCE_SHA256 = "314695381c755264971a8f25865625bad4cf46c35d91901ba2a8f5e1ea980a18"
"""sha256 of ``inspect.getsource(verl.trainer.ppo.ray_trainer.compute_advantage)`` in verl 0.9.1, the code
:func:`patch_compute_advantage` wraps and whose non-GAE/GRPO branch it repeats for ``mrtpo``."""


def _group_ids(index) -> torch.Tensor:
    """``(B,)`` dense group ids from verl's ``uid`` array, in order of first appearance."""
    seen: dict[Any, int] = {}
    return torch.tensor([seen.setdefault(u, len(seen)) for u in np.asarray(index, dtype=object).tolist()])


def verl_group_advantages(
    scores: torch.Tensor, index, epsilon: float = VERL_EPSILON, norm_by_std: bool = True
) -> torch.Tensor:
    """verl's GRPO outcome advantage of each reward within its group (``compute_grpo_outcome_advantage``'s facts).

    ``(r - mean_g) / (std_g + epsilon)`` with the Bessel std of the group (``torch.std``); a group of one has mean
    0 and std 1 (so its advantage is ``r / (1 + epsilon)``, not 0); ``norm_by_std=False`` leaves out the division.

    Args:
        scores: ``(B, K)`` float scores; index: ``B`` group ids (verl's ``uid``).
    Returns:
        ``(B, K)`` per-reward advantages ``Ahat_k``.
    """
    B, K = scores.shape
    g = _group_ids(index).to(scores.device)  # (B,)
    n_groups = int(g.max()) + 1 if B else 0
    n = torch.zeros(n_groups, device=scores.device).index_add_(0, g, torch.ones(B, device=scores.device))  # (N,)
    total = torch.zeros(n_groups, K, dtype=scores.dtype, device=scores.device).index_add_(0, g, scores)  # (N, K)
    mean = total / n[:, None]
    sq = torch.zeros_like(total).index_add_(0, g, (scores - mean[g]).square())  # (N, K)
    std = (sq / (n[:, None] - 1).clamp_min(1)).sqrt()
    single = (n == 1)[:, None]
    mean, std = torch.where(single, 0.0, mean), torch.where(single, 1.0, std)
    centered = scores - mean[g]  # (B, K)
    return centered / (std[g] + epsilon) if norm_by_std else centered


def verl_mrtpo_advantages(
    scores: torch.Tensor,
    relevance: torch.Tensor,
    response_mask: torch.Tensor,
    index,
    weights=None,
    alpha: float = 1.0,
    gamma: float = 1.0,
    normalization: str = "mean",
    epsilon: float = VERL_EPSILON,
    norm_by_std: bool = True,
) -> torch.Tensor:
    """MRTPO token advantages with verl's GDPO statistics (``mrtpo_statistics = "verl"``).

    ``A[t] = (sum_k lambda_k w[k, t] Ahat_k - m) / sqrt(v + 1e-8)``, 0 on padding, where ``Ahat_k`` is
    :func:`verl_group_advantages` and ``m``, ``v`` are ``masked_whiten``'s token-weighted mean and Bessel variance
    of GDPO's ``S = sum_k lambda_k Ahat_k`` spread over the valid tokens; ``w`` is :func:`mrtpo_token_weights`.

    Args:
        scores: ``(B, K)``; relevance: ``(B, K, T)``; response_mask: ``(B, T)``; index: ``B`` group ids.
        weights: ``(K,)`` reward weights, default 1. alpha, gamma, normalization: as ``mrtpo_token_weights``.
    Returns:
        ``(B, T)`` token advantages.
    """
    B, K = scores.shape
    mask = response_mask.to(torch.float32)  # (B, T)
    lam = torch.ones(K) if weights is None else torch.as_tensor(weights, dtype=torch.float32)
    lam = lam.to(scores.device)
    ahat = verl_group_advantages(scores.float(), index, epsilon, norm_by_std)  # (B, K)
    w = mrtpo_token_weights(relevance[None].float(), mask[None], alpha, gamma, normalization)[0]  # (B, K, T)
    moved = (lam[:, None] * w * ahat[..., None]).sum(1)  # (B, T)
    S = (ahat * lam).sum(-1)[:, None] * mask  # (B, T): GDPO's sum on every valid token
    n = mask.sum()
    if n < 2:
        raise ValueError("verl's batch whitening needs at least 2 valid response tokens in the batch")
    mean = (S * mask).sum() / (n + WHITEN_EPSILON)
    var = ((S - mean).square() * mask).sum() / (n + WHITEN_EPSILON) * (n / (n - 1))
    return (moved - mean) * torch.rsqrt(var + WHITEN_EPSILON) * mask


def project_mrtpo_advantages(
    scores: torch.Tensor,
    relevance: torch.Tensor,
    response_mask: torch.Tensor,
    index,
    weights=None,
    alpha: float = 1.0,
    gamma: float = 1.0,
    normalization: str = "mean",
) -> torch.Tensor:
    """:func:`~mrtpo_viz.advantages.mrtpo_token_advantages` on verl's flat rows (``mrtpo_statistics = "project"``).

    Rows are gathered into ``(N, G_max)`` groups by ``index``; the missing rows of smaller groups are all-NaN
    rows, which the project's statistics leave out (as TRL's unscorable rows). Returns ``(B, T)``.
    """
    B, K = scores.shape
    T = response_mask.shape[-1]
    g = _group_ids(index)
    slot = torch.zeros(B, dtype=torch.long)
    counts: dict[int, int] = {}
    for b, gid in enumerate(g.tolist()):
        slot[b] = counts.get(gid, 0)
        counts[gid] = slot[b].item() + 1
    N, G = len(counts), max(counts.values())
    rewards = torch.full((N, G, K), torch.nan)
    rel = torch.zeros(N, G, K, T)
    mask = torch.zeros(N, G, T)
    rewards[g, slot], rel[g, slot], mask[g, slot] = (
        scores.float().cpu(),
        relevance.float().cpu(),
        response_mask.cpu().float(),
    )
    adv = mrtpo_token_advantages(rewards, rel, mask, weights, alpha, gamma, normalization=normalization)  # (N, G, T)
    return adv[g, slot].to(response_mask.device)  # (B, T)


def _setting(config, key: str, default):
    """``config.get(key, default)`` for verl's ``AlgoConfig`` (a Mapping) and OmegaConf's ``DictConfig`` alike."""
    if config is None:
        return default
    value = config.get(key, default)
    return default if value is None else value


def reward_scores(non_tensor_batch: dict, keys, device) -> torch.Tensor:
    """``(B, K)`` float32 scores from ``non_tensor_batch[key]`` (as GDPO reads them: ``np.float32``; None is NaN)."""
    missing = [k for k in keys if k not in non_tensor_batch]
    if missing:
        raise KeyError(
            f"MRTPO reward keys {missing} are not in the batch's non_tensor_batch (keys: {sorted(non_tensor_batch)}): "
            "the reward function must return a dict with one entry per key of algorithm.gdpo_reward_keys, and "
            "verl's v1 trainer (trainer.use_v1=True) does not carry those entries to compute_advantage"
        )
    cols = [np.asarray([np.nan if v is None else v for v in non_tensor_batch[k]], dtype=np.float32) for k in keys]
    return torch.tensor(np.stack(cols, axis=1), device=device)


def compute_mrtpo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index=None,
    epsilon: float = VERL_EPSILON,
    norm_adv_by_std_in_grpo: bool = True,
    config=None,
    non_tensor_batch: Optional[dict] = None,
    batch=None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The verl estimator (registered as ``mrtpo``): ``(advantages, returns)``, both ``(B, T)`` and equal.

    ``token_level_rewards`` is not read: the rewards are the per-reward scores. Raises when verl's dispatch did not
    pass the batch (:func:`patch_compute_advantage` not applied) or the relevance is missing or mis-shaped.
    """
    if non_tensor_batch is None or batch is None or index is None:
        raise RuntimeError(
            "verl called the mrtpo estimator without non_tensor_batch, batch and uid: apply "
            "mrtpo_viz.integrations.verl_mrtpo.patch_compute_advantage() in the trainer's process"
        )
    keys = list(_setting(config, "gdpo_reward_keys", []))
    if not keys:
        raise ValueError("MRTPO needs algorithm.gdpo_reward_keys: the reward function's per-reward entries")
    scores = reward_scores(non_tensor_batch, keys, response_mask.device)  # (B, K)
    if RELEVANCE_KEY not in batch.keys():
        raise KeyError(f"batch[{RELEVANCE_KEY!r}] (B, K, T) is missing: run the relevance step before the advantage")
    relevance = batch[RELEVANCE_KEY]
    B, T = response_mask.shape
    if tuple(relevance.shape) != (B, len(keys), T):
        raise ValueError(
            f"batch[{RELEVANCE_KEY!r}] must be (B, K, T) = {(B, len(keys), T)}, got {tuple(relevance.shape)}"
        )
    statistics = _setting(config, "mrtpo_statistics", "verl")
    normalization = _setting(config, "mrtpo_normalization", "mean")
    if statistics not in STATISTICS or normalization not in NORMALIZATIONS:
        raise ValueError(
            f"mrtpo_statistics must be one of {STATISTICS} and mrtpo_normalization one of {NORMALIZATIONS}"
        )
    common = dict(
        weights=_setting(config, "gdpo_reward_weights", None),
        alpha=float(_setting(config, "mrtpo_alpha", 1.0)),
        gamma=float(_setting(config, "mrtpo_gamma", 1.0)),
        normalization=normalization,
    )
    if statistics == "verl":
        adv = verl_mrtpo_advantages(
            scores, relevance, response_mask, index, epsilon=epsilon, norm_by_std=norm_adv_by_std_in_grpo, **common
        )
    elif not norm_adv_by_std_in_grpo:
        raise ValueError("mrtpo_statistics='project' always divides by the std: set norm_adv_by_std_in_grpo=True")
    else:
        adv = project_mrtpo_advantages(scores, relevance, response_mask, index, **common)
    return adv, adv


def register() -> None:
    """Register :func:`compute_mrtpo_advantage` as verl's ``mrtpo`` estimator (again is a no-op)."""
    from verl.trainer.ppo import core_algos

    core_algos.register_adv_est(ESTIMATOR)(compute_mrtpo_advantage)


def source_sha256(fn: Callable) -> str:
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()


def patch_compute_advantage(relevance_step: Optional[Callable] = None) -> Callable:
    """Register the estimator and wrap verl's ``compute_advantage`` so that ``mrtpo`` gets the batch.

    The wrapper replaces ``compute_advantage`` in every loaded ``verl.*`` module that holds verl's function (the
    legacy trainer calls ``ray_trainer``'s module global). Calling it again re-wraps verl's original.

    Args:
        relevance_step: ``DataProto -> DataProto`` holding ``batch["mrtpo_relevance"]``, called for an ``mrtpo``
            batch that has no relevance yet (the recipe passes its actor worker group's ``compute_mrtpo_relevance``).
    Returns:
        verl's original ``compute_advantage``.
    Raises:
        RuntimeError: verl's ``compute_advantage`` is not the code this wrapper was written against.
    """
    from verl.trainer.ppo import core_algos, ray_trainer

    current = ray_trainer.compute_advantage
    original = getattr(current, "__mrtpo_original__", current)
    digest = source_sha256(original)
    if digest != PATCHED_SOURCE_SHA256:
        raise RuntimeError(
            f"verl's ray_trainer.compute_advantage changed (sha256 {digest[:12]}, expected "
            f"{PATCHED_SOURCE_SHA256[:12]} from verl 0.9.1): re-read it before patching its dispatch"
        )
    register()
    signature = inspect.signature(original)

    @functools.wraps(original)
    def compute_advantage(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        name = getattr(a["adv_estimator"], "value", a["adv_estimator"])
        if name != ESTIMATOR:
            return original(*args, **kwargs)
        data = a["data"]
        if "response_mask" not in data.batch.keys():  # as verl's own function does
            data.batch["response_mask"] = ray_trainer.compute_response_mask(data)
        if RELEVANCE_KEY not in data.batch.keys() and relevance_step is not None:
            data = data.union(relevance_step(data))
        fn = core_algos.get_adv_estimator_fn(ESTIMATOR)  # verl's registry: unregistered raises verl's ValueError
        advantages, returns = fn(
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=data.batch["response_mask"],
            index=data.non_tensor_batch.get("uid"),
            config=a["config"],  # no norm_adv_by_std_in_grpo: verl's own branch passes it to no estimator but GRPO
            non_tensor_batch=data.non_tensor_batch,
            batch=data.batch,
        )
        data.batch["advantages"] = advantages
        data.batch["returns"] = returns
        return data

    compute_advantage.__mrtpo_original__ = original
    _replace(original, current, compute_advantage)
    return original


def unpatch_compute_advantage() -> None:
    """Put verl's own ``compute_advantage`` back where :func:`patch_compute_advantage` replaced it."""
    from verl.trainer.ppo import ray_trainer

    current = ray_trainer.compute_advantage
    original = getattr(current, "__mrtpo_original__", None)
    if original is not None:
        _replace(original, current, original)


def _replace(original: Callable, current: Callable, new: Callable) -> None:
    """Set ``compute_advantage`` to ``new`` in every loaded ``verl.*`` module holding ``original`` or ``current``."""
    for module in list(sys.modules.values()):
        held = getattr(module, "compute_advantage", None)
        if getattr(module, "__name__", "").startswith("verl.") and (held is original or held is current):
            module.compute_advantage = new
