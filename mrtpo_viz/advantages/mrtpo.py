"""MRTPO: token weights from relevance, token advantages with their per-reward parts, and the per-token shift that
the TRL integration adds to TRL's own GDPO advantage (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .core import EPS, ZERO_RELEVANCE, _check_mask, _check_rewards, _gdpo_parts

NORMALIZATIONS: tuple[str, ...] = ("mean", "mask")
"""How relevance becomes token weights ``what``: ``mean`` rescales to mean 1 over the response (the paper reading,
``T_i * dg / sum_t dg``; a one-token span gets ``T_i`` times the reward's advantage), ``mask`` keeps the
peak-normalized relevance ``dg = (d / max_t d)^gamma`` in ``[0, 1]`` as it is (no ``T/|S|`` factor; a hard 0/1
span mask stays that mask, so each reward's group advantage lands on its span tokens only, at its own size).
``mask`` separates credit (where the advantage goes) from scale (how large it gets)."""


def mrtpo_token_weights(
    relevance: torch.Tensor, mask: torch.Tensor, alpha: float = 1.0, gamma: float = 1.0, normalization: str = "mean"
) -> torch.Tensor:
    """MRTPO's ``w[k, t] = (1 - alpha) + alpha * what[k, t]`` on valid tokens, 0 on padding.

    ``normalization="mean"``: ``what = T_i * d^gamma / sum_t(mask * d^gamma)`` has mean 1 over each response's valid
    tokens, so ``w`` does too. ``what`` does not change when ``d`` is scaled, so ``d`` is divided by its maximum
    first: ``d^gamma`` then lies in ``[0, 1]`` and never underflows to an all-zero sum.
    ``normalization="mask"``: ``what = (d / max_t d)^gamma``, in ``[0, 1]``, without rescaling (see
    :data:`NORMALIZATIONS`). Either way a response whose relevance to a reward is ~0 gets ``what = 1`` everywhere.

    Args:
        relevance: ``d`` ``(N, G, K, T)``, e.g. JS distances in ``[0, 1]``; negative or NaN counts as 0.
        mask: ``(N, G, T)``, 1 on response tokens.
        alpha: ``[0, 1]``, 0 gives uniform weights (GDPO). gamma: ``>= 0``, sharpening of ``d``.
        normalization: one of :data:`NORMALIZATIONS`.
    Returns:
        ``(N, G, K, T)`` weights.
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; choose one of {list(NORMALIZATIONS)}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    relevance = torch.as_tensor(relevance)
    if relevance.dim() != 4:
        raise ValueError(f"relevance must be (N, G, K, T), got shape {tuple(relevance.shape)}")
    N, G, K, T = relevance.shape
    dtype = relevance.dtype if relevance.dtype == torch.float64 else torch.float32
    mask = _check_mask(mask, N, G, dtype)
    if mask.shape[-1] != T:
        raise ValueError(f"mask has {mask.shape[-1]} tokens but relevance has {T}")
    m = mask[:, :, None, :]  # (N, G, 1, T)
    d = relevance.to(dtype).nan_to_num(nan=0.0).clamp_min(0.0) * m  # (N, G, K, T)
    peak = d.amax(-1, keepdim=True)  # (N, G, K, 1)
    informative = peak > ZERO_RELEVANCE
    dg = (d / torch.where(informative, peak, 1.0)).pow(gamma) * m  # in [0, 1]; its max is 1 where informative
    if normalization == "mask":
        what = torch.where(informative, dg, m)  # (N, G, K, T): a 0/1 span mask stays itself
    else:
        length = m.sum(-1, keepdim=True)  # (N, G, 1, 1): T_i
        what = torch.where(informative, length * dg / dg.sum(-1, keepdim=True).clamp_min(1.0), m)  # (N, G, K, T)
    return m * ((1.0 - alpha) + alpha * what)


@dataclass(frozen=True)
class MRTPOParts:
    """MRTPO's token advantages and the pieces they are made of (what the app's advantage panel stacks).

    ``parts.sum(2) + baseline == token_advantages`` (up to rounding) on valid tokens; all four are 0 on padding.
    """

    per_reward: torch.Tensor
    """``(N, G, K)`` GDPO's per-reward group advantages ``Ahat_k`` (0 where the reward is NaN)."""
    gdpo: torch.Tensor
    """``(N, G)`` the GDPO sequence advantage (the token mean of ``token_advantages``)."""
    weights: torch.Tensor
    """``(N, G, K, T)`` MRTPO's token weights ``w`` (mean 1 over each response's valid tokens)."""
    parts: torch.Tensor
    """``(N, G, K, T)`` each reward's share ``lambda_k w[k, t] Ahat_k / (std_batch S + eps)``."""
    baseline: torch.Tensor
    """``(N, G, T)`` what the batch centering adds to every token: ``-mean_batch S / (std_batch S + eps)``."""
    token_advantages: torch.Tensor
    """``(N, G, T)`` MRTPO token advantages."""


def mrtpo_token_parts(
    rewards: torch.Tensor,
    relevance: torch.Tensor,
    mask: torch.Tensor,
    weights=None,
    alpha: float = 1.0,
    gamma: float = 1.0,
    eps: float = EPS,
    normalization: str = "mean",
) -> MRTPOParts:
    """MRTPO: each reward's GDPO advantage ``Ahat_k`` goes to the tokens relevant to it; with the per-reward parts.

    ``A[t] = (sum_k lambda_k w[k, t] Ahat_k - mean_batch S) / (std_batch S + eps)``, 0 on padding.

    Args:
        rewards: ``(N, G, K)``; relevance: ``(N, G, K, T)``; mask: ``(N, G, T)`` 1 on response tokens.
        weights: ``(K,)``, default 1. alpha, gamma, normalization: see ``mrtpo_token_weights``.
    Returns:
        :class:`MRTPOParts`; with ``normalization="mean"`` its ``token_advantages`` have, over a response's valid
        tokens, the mean of its GDPO advantage (with ``"mask"`` they do not: each reward's share stays on its tokens).
    """
    checked, _ = _check_rewards(rewards, weights)  # (N, G, K) as float32 or float64
    N, G, K = checked.shape
    relevance = torch.as_tensor(relevance)
    if relevance.dim() != 4 or tuple(relevance.shape[:3]) != (N, G, K):
        raise ValueError(f"relevance must be (N, G, K, T) with N, G, K = {N}, {G}, {K}, got {tuple(relevance.shape)}")
    w = mrtpo_token_weights(relevance.to(checked.dtype), mask, alpha, gamma, normalization)  # (N, G, K, T)
    return weighted_token_parts(rewards, w, mask, weights, eps)


def weighted_token_parts(rewards: torch.Tensor, w: torch.Tensor, mask: torch.Tensor, weights=None, eps: float = EPS):
    """Token advantages from any per-reward token weights ``w`` (a credit method's, :mod:`.credit`):
    ``A[t] = (sum_k lambda_k w[k, t] Ahat_k - mean_batch S) / (std_batch S + eps)``, 0 on padding.

    Args:
        rewards: ``(N, G, K)``; w: ``(N, G, K, T)`` token weights (0 on padding); mask: ``(N, G, T)``.
    Returns:
        :class:`MRTPOParts`. ``w = 1`` on valid tokens gives GDPO's advantage on every token; weights with mean 1
        over a response keep its token mean at GDPO's advantage.
    """
    ahat, weights, S, mean_b, std_b, unscorable = _gdpo_parts(rewards, weights, eps)
    N, G, K = ahat.shape
    w = torch.as_tensor(w).to(ahat.dtype)
    if w.dim() != 4 or tuple(w.shape[:3]) != (N, G, K):
        raise ValueError(f"token weights must be (N, G, K, T) with N, G, K = {N}, {G}, {K}, got {tuple(w.shape)}")
    per_token = weights[:, None] * w * ahat[..., None]  # (N, G, K, T)
    valid = (_check_mask(mask, N, G, ahat.dtype) > 0) & ~unscorable[..., None]  # (N, G, T)
    scale = torch.where(std_b > 0, std_b + eps, 1.0)  # a degenerate batch: unscaled, not divided by eps alone
    adv = torch.where(valid, (per_token.sum(2) - mean_b) / scale, 0.0)  # (N, G, T)
    parts = torch.where(valid[:, :, None], per_token / scale, 0.0)  # (N, G, K, T), 0 on padding
    baseline = torch.where(valid, adv - parts.sum(2), 0.0)  # (N, G, T)
    gdpo = ((S - mean_b) / (std_b + eps)).nan_to_num(nan=0.0)  # (N, G): GDPO's own advantage (0 when degenerate)
    return MRTPOParts(ahat, gdpo, w, parts, baseline, adv)


def mrtpo_token_advantages(
    rewards: torch.Tensor,
    relevance: torch.Tensor,
    mask: torch.Tensor,
    weights=None,
    alpha: float = 1.0,
    gamma: float = 1.0,
    eps: float = EPS,
    normalization: str = "mean",
) -> torch.Tensor:
    """MRTPO token advantages ``(N, G, T)``: :func:`mrtpo_token_parts` without the parts (same arguments)."""
    return mrtpo_token_parts(rewards, relevance, mask, weights, alpha, gamma, eps, normalization).token_advantages


@dataclass(frozen=True)
class MRTPOShift:
    """What MRTPO changes on each token of some rows of a batch, relative to their GDPO sequence advantage."""

    shift: torch.Tensor
    """``(B, T)`` ``sum_k lambda_k (w[k, t] - 1) Ahat_k / scale``: MRTPO's token advantage minus GDPO's ``A``.
    Exactly 0 when ``alpha = 0``; its mean over a response's valid tokens is 0; 0 on padding and unscorable rows."""
    parts: torch.Tensor
    """``(B, K, T)`` each reward's share ``lambda_k w[k, t] Ahat_k / scale`` (as :attr:`MRTPOParts.parts`)."""


def mrtpo_token_shift(
    rewards: torch.Tensor,
    relevance: torch.Tensor,
    mask: torch.Tensor,
    rows=None,
    weights=None,
    alpha: float = 1.0,
    gamma: float = 1.0,
    eps: float = EPS,
    normalization: str = "mean",
    token_weights: torch.Tensor | None = None,
) -> MRTPOShift:
    """MRTPO for some rows of a batch whose other rows live elsewhere (another process of a data-parallel run).

    The group and batch statistics come from the whole batch's ``rewards``; the token weights only from the rows'
    own relevance. Adding ``shift`` to GDPO's sequence advantage of those rows gives MRTPO's token advantages
    (:func:`mrtpo_token_advantages` of the whole batch, on those rows), because
    ``(sum_k lambda_k w Ahat_k - mean S) / scale = (S - mean S) / scale + sum_k lambda_k (w - 1) Ahat_k / scale``.
    ``scale`` is ``std_batch S + eps`` (1 for a degenerate batch, as in :func:`mrtpo_token_parts`).

    Args:
        rewards: ``(N, G, K)`` the whole batch (e.g. gathered from every process).
        relevance: ``(B, K, T)`` and mask ``(B, T)`` of the rows.
        rows: ``B`` flat indices into the ``N * G`` rows (a slice or index tensor); default all rows.
        weights, alpha, gamma, eps, normalization: as :func:`mrtpo_token_parts`.
        token_weights: ``(B, K, T)`` a credit method's own weights ``w`` (:mod:`.credit`), used instead of MRTPO's
            from ``relevance`` (which then only fixes the shapes).
    """
    ahat, weights, _, _, std_b, unscorable = _gdpo_parts(rewards, weights, eps)
    N, G, K = ahat.shape
    rows = slice(None) if rows is None else rows
    ahat, unscorable = ahat.reshape(N * G, K)[rows], unscorable.reshape(N * G)[rows]  # (B, K), (B,)
    relevance = torch.as_tensor(relevance)
    if relevance.dim() != 3 or tuple(relevance.shape[:2]) != (ahat.shape[0], K):
        raise ValueError(f"relevance must be (B, K, T) with B, K = {ahat.shape[0]}, {K}, got {tuple(relevance.shape)}")
    if token_weights is None:
        w = mrtpo_token_weights(
            relevance.to(ahat.dtype)[None], torch.as_tensor(mask)[None], alpha, gamma, normalization
        )[0]  # (B, K, T)
    else:
        w = torch.as_tensor(token_weights).to(ahat.dtype)  # (B, K, T)
    valid = (torch.as_tensor(mask, device=w.device) > 0) & ~unscorable[:, None]  # (B, T)
    scale = torch.where(std_b > 0, std_b + eps, 1.0)
    per_reward = weights[:, None] * ahat[..., None] / scale  # (B, K, 1)
    parts = torch.where(valid[:, None], per_reward * w, 0.0)  # (B, K, T)
    shift = torch.where(valid, (per_reward * (w - 1.0)).sum(1), 0.0)  # (B, T)
    return MRTPOShift(shift, parts)
