"""Validation, NaN-aware group and batch statistics, GRPO and GDPO (TRL's semantics; see the package docstring)."""

from __future__ import annotations

import torch

EPS = 1e-4
ZERO_RELEVANCE = 1e-6
"""A response whose largest relevance to a reward is at most this gets uniform weights for that reward."""


# ----------------------------------------------------------------------------------------------- validation


def _check_rewards(rewards: torch.Tensor, weights) -> tuple[torch.Tensor, torch.Tensor]:
    """Float rewards ``(N, G, K)`` and weights ``(K,)`` (default ones)."""
    rewards = torch.as_tensor(rewards)
    if rewards.dim() != 3:
        raise ValueError(f"rewards must be (N, G, K), got shape {tuple(rewards.shape)}")
    rewards = rewards if rewards.dtype == torch.float64 else rewards.float()
    K = rewards.shape[-1]
    if weights is None:
        return rewards, torch.ones(K, dtype=rewards.dtype, device=rewards.device)
    weights = torch.as_tensor(weights, dtype=rewards.dtype, device=rewards.device)
    if weights.shape != (K,):
        raise ValueError(f"weights must be (K,) = ({K},), got shape {tuple(weights.shape)}")
    return rewards, weights


def _check_mask(mask: torch.Tensor, N: int, G: int, dtype: torch.dtype) -> torch.Tensor:
    """A 0/1 mask ``(N, G, T)`` as ``dtype``."""
    mask = torch.as_tensor(mask)
    if mask.dim() != 3 or tuple(mask.shape[:2]) != (N, G):
        raise ValueError(f"mask must be (N, G, T) with N, G = {N}, {G}, got shape {tuple(mask.shape)}")
    mask = mask.to(dtype)
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError("mask must hold only 0 and 1 (1 on response tokens)")
    return mask


# ----------------------------------------------------------------------------------------------- statistics


def _nan_stats(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and Bessel std of ``x`` along ``dim`` (keepdim), ignoring NaN.

    std is 0 with fewer than 2 values. Where all valid values are equal the mean is that value exactly, so the
    centered values are exactly 0 (no rounding noise for the division by ``std + eps`` to blow up).
    """
    valid = ~x.isnan()
    n = valid.sum(dim, keepdim=True)
    mean = torch.where(valid, x, 0).sum(dim, keepdim=True) / n.clamp_min(1)
    sq = torch.where(valid, x - mean, 0).square().sum(dim, keepdim=True)
    std = torch.where(n > 1, (sq / (n - 1).clamp_min(1)).sqrt(), 0)
    hi = torch.where(valid, x, -torch.inf).amax(dim, keepdim=True)
    lo = torch.where(valid, x, torch.inf).amin(dim, keepdim=True)
    constant = (hi == lo) & (n > 0)
    return torch.where(constant, hi, mean), torch.where(constant, 0, std)


def _zscore(x: torch.Tensor, dim: int, eps: float) -> torch.Tensor:
    """``(x - mean) / (std + eps)`` along ``dim``; NaN entries stay NaN."""
    mean, std = _nan_stats(x, dim)
    return (x - mean) / (std + eps)


def unscorable_rows(rewards: torch.Tensor) -> torch.Tensor:
    """``(N, G)`` True where every reward of a row is NaN (TRL's "unscorable" rows, advantage 0)."""
    return rewards.isnan().all(-1)


def _gdpo_parts(rewards, weights, eps):
    """``Ahat`` ``(N, G, K)`` (0 where NaN), weights ``(K,)``, ``S`` ``(N, G)`` (NaN on unscorable rows), batch mean
    and std of ``S`` over the scorable rows, and the ``(N, G)`` unscorable mask."""
    rewards, weights = _check_rewards(rewards, weights)
    unscorable = unscorable_rows(rewards)  # (N, G)
    ahat = _zscore(rewards, dim=1, eps=eps).nan_to_num(nan=0.0)  # (N, G, K): a missing reward contributes 0
    S = torch.where(unscorable, torch.nan, (ahat * weights).sum(-1))  # (N, G): unscorable rows leave the statistics
    mean_b, std_b = _nan_stats(S.reshape(-1), dim=0)  # (1,), (1,)
    return ahat, weights, S, mean_b, std_b, unscorable


# ----------------------------------------------------------------------------------------------- methods


def grpo_advantages(rewards: torch.Tensor, weights=None, eps: float = EPS) -> torch.Tensor:
    """GRPO (TRL ``sum_then_normalize``): group z-score of the weighted reward sum.

    Args:
        rewards: ``(N, G, K)``; a NaN reward counts as 0 in its row's sum (TRL's ``nansum``); a row whose rewards are
            all NaN is left out of its group's statistics and gets 0.
        weights: ``(K,)`` reward weights, default 1.
    Returns:
        ``(N, G)`` advantages.
    """
    rewards, weights = _check_rewards(rewards, weights)
    r = torch.where(unscorable_rows(rewards), torch.nan, (rewards * weights).nansum(-1))  # (N, G)
    return _zscore(r, dim=1, eps=eps).nan_to_num(nan=0.0)


def gdpo_advantages(rewards: torch.Tensor, weights=None, eps: float = EPS) -> tuple[torch.Tensor, torch.Tensor]:
    """GDPO (TRL ``normalize_then_sum``): per-reward group z-score, weighted sum, batch z-score.

    Args:
        rewards: ``(N, G, K)``; NaN rewards are left out of their group's statistics.
        weights: ``(K,)`` reward weights, default 1.
    Returns:
        ``(per_reward, final)``: ``Ahat_k`` ``(N, G, K)`` (0 where the reward is NaN) and the GDPO advantage ``(N, G)``.
    """
    ahat, _, S, mean_b, std_b, _ = _gdpo_parts(rewards, weights, eps)
    return ahat, ((S - mean_b) / (std_b + eps)).nan_to_num(nan=0.0)
