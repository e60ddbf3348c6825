"""Advantages for several verifiable rewards: GRPO, GDPO and MRTPO (token level).

Shapes: ``N`` prompts, ``G`` completions per prompt, ``K`` rewards, ``T`` response tokens.
``rewards`` ``(N, G, K)`` (NaN where a verifier does not apply), ``weights`` ``lambda_k`` ``(K,)`` default 1,
``relevance`` ``d`` ``(N, G, K, T)``, ``mask`` ``(N, G, T)`` 1 on response tokens. ``std`` is Bessel-corrected and
``eps = 1e-4``, as in TRL.

- GRPO (TRL ``sum_then_normalize``): ``r = sum_k lambda_k r_k``; ``A = (r - mean_G r) / (std_G r + eps)``.
- GDPO (TRL ``normalize_then_sum``): ``Ahat_k = (r_k - mean_G r_k) / (std_G r_k + eps)``;
  ``S = sum_k lambda_k Ahat_k``; ``A = (S - mean_batch S) / (std_batch S + eps)``.
- MRTPO: ``what[k, t] = T_i * mask * d^gamma / sum_t(mask * d^gamma)``; ``w = (1 - alpha) + alpha * what``;
  ``A[t] = (sum_k lambda_k w[k, t] Ahat_k - mean_batch S) / (std_batch S + eps)``.

Our reading of the paper (its exact weighting is not in the public abstract):

- Sum-to-length normalization of ``what`` (its mean over a response's valid tokens is 1), so ``alpha = 0`` reduces
  to GDPO exactly and, for any ``alpha`` and ``gamma``, the token mean of ``A[t]`` equals the GDPO advantage.
- The batch statistics of ``S`` are reused for the token advantages (not recomputed over tokens); that is what
  makes the token mean equal GDPO's ``A``.
- Negative relevance (a control that subtracts a baseline) counts as 0. A response whose relevance to a reward
  never exceeds ``ZERO_RELEVANCE`` gets uniform weights for that reward (plain GDPO credit).

Edge cases, all without NaN (TRL >= 1.8's semantics, checked against TRL's own code in tests/test_advantages.py):

- a NaN reward is left out of its group's mean and std, as TRL leaves out ``None``, and contributes 0 for that
  sample; in GRPO a row with some rewards keeps the (weighted) sum of the others (TRL's ``nansum``);
- an *unscorable* row (every reward NaN) is left out of the group statistics (GRPO) and the batch statistics
  (GDPO, MRTPO), and gets advantage 0 on every token, as TRL does;
- a group of size 1 has std 0 and advantage 0 (torch's Bessel std of one value is NaN);
- a reward equal across its group contributes exactly 0. Here we differ from TRL on purpose: TRL's plain z-score
  leaves float32 rounding noise (~1 ulp) divided by ``eps`` (up to ~1e-3 in GRPO, and O(1) in GDPO when every
  group of the batch is constant); we return exact zeros;
- padding gets advantage exactly 0; a batch of one element has batch std 0;
- a *degenerate* batch, whose ``S`` is equal on every scorable row (batch std 0): GDPO's advantages are all 0, as
  TRL's; MRTPO's token terms are then not divided by ``eps`` alone (which gave +-15,000 for rewards
  ``[[[1, 0], [0, 1]]]``) but left unscaled, ``A[t] = sum_k lambda_k w[k, t] Ahat_k - mean_batch S``: the per-reward
  advantages are already group-normalized, the token mean stays GDPO's 0, and the size is that of a normal batch's
  token terms times its ``std_batch S + eps``.

Two baselines make MRTPO's effect readable (ours, for the convergence study):

- ``mrtpo:oracle``: MRTPO's weights from each verifier's relevant spans (a hard 0/1 mask, normalized to mean 1;
  uniform where a verifier has none). It uses labels no real run has: the upper bound of token credit on a task.
- ``entropy``: GTPO-style ``A_t = A * (1 + beta * (H_t / mean_t H - 1))`` with GDPO's ``A`` and the sampling
  entropy; it knows nothing of the verifiers (``alpha`` is its ``beta``). Same invariants: token mean = GDPO's ``A``.

Registry: ``ADVANTAGE_METHODS[name]`` is an ``AdvantageMethod`` with one call form for every method::

    adv = ADVANTAGE_METHODS[name](rewards, mask, relevance=None, weights=None, alpha=1.0, gamma=1.0, eps=1e-4,
                                  entropy=None)
    # adv: (N, G, T) token-level advantages, 0 on padding

GRPO and GDPO broadcast their sequence advantage over the valid tokens and ignore the per-token inputs;
``method.needs`` tells the training loop which per-token input to provide (the replay's relevance, the span masks,
the entropy).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from . import names

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


def mrtpo_token_weights(relevance: torch.Tensor, mask: torch.Tensor, alpha: float = 1.0,
                        gamma: float = 1.0) -> torch.Tensor:
    """MRTPO's ``w[k, t] = (1 - alpha) + alpha * what[k, t]`` on valid tokens, 0 on padding.

    ``what = T_i * d^gamma / sum_t(mask * d^gamma)`` has mean 1 over each response's valid tokens, so ``w`` does too.
    ``what`` does not change when ``d`` is scaled, so ``d`` is divided by its maximum first: ``d^gamma`` then lies in
    ``[0, 1]`` and never underflows to an all-zero sum.

    Args:
        relevance: ``d`` ``(N, G, K, T)``, e.g. JS distances in ``[0, 1]``; negative or NaN counts as 0.
        mask: ``(N, G, T)``, 1 on response tokens.
        alpha: ``[0, 1]``, 0 gives uniform weights (GDPO). gamma: ``>= 0``, sharpening of ``d``.
    Returns:
        ``(N, G, K, T)`` weights.
    """
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


def mrtpo_token_parts(rewards: torch.Tensor, relevance: torch.Tensor, mask: torch.Tensor, weights=None,
                      alpha: float = 1.0, gamma: float = 1.0, eps: float = EPS) -> MRTPOParts:
    """MRTPO: each reward's GDPO advantage ``Ahat_k`` goes to the tokens relevant to it; with the per-reward parts.

    ``A[t] = (sum_k lambda_k w[k, t] Ahat_k - mean_batch S) / (std_batch S + eps)``, 0 on padding.

    Args:
        rewards: ``(N, G, K)``; relevance: ``(N, G, K, T)``; mask: ``(N, G, T)`` 1 on response tokens.
        weights: ``(K,)``, default 1. alpha, gamma: see ``mrtpo_token_weights``.
    Returns:
        :class:`MRTPOParts`; its ``token_advantages`` have, over a response's valid tokens, the mean of its GDPO
        advantage.
    """
    ahat, weights, S, mean_b, std_b, unscorable = _gdpo_parts(rewards, weights, eps)
    N, G, K = ahat.shape
    relevance = torch.as_tensor(relevance)
    if relevance.dim() != 4 or tuple(relevance.shape[:3]) != (N, G, K):
        raise ValueError(f"relevance must be (N, G, K, T) with N, G, K = {N}, {G}, {K}, got {tuple(relevance.shape)}")
    w = mrtpo_token_weights(relevance.to(ahat.dtype), mask, alpha, gamma)  # (N, G, K, T)
    per_token = weights[:, None] * w * ahat[..., None]  # (N, G, K, T)
    valid = (_check_mask(mask, N, G, ahat.dtype) > 0) & ~unscorable[..., None]  # (N, G, T)
    scale = torch.where(std_b > 0, std_b + eps, 1.0)  # a degenerate batch: unscaled, not divided by eps alone
    adv = torch.where(valid, (per_token.sum(2) - mean_b) / scale, 0.0)  # (N, G, T)
    parts = torch.where(valid[:, :, None], per_token / scale, 0.0)  # (N, G, K, T), 0 on padding
    baseline = torch.where(valid, adv - parts.sum(2), 0.0)  # (N, G, T)
    gdpo = ((S - mean_b) / (std_b + eps)).nan_to_num(nan=0.0)  # (N, G): GDPO's own advantage (0 when degenerate)
    return MRTPOParts(ahat, gdpo, w, parts, baseline, adv)


def mrtpo_token_advantages(rewards: torch.Tensor, relevance: torch.Tensor, mask: torch.Tensor, weights=None,
                           alpha: float = 1.0, gamma: float = 1.0, eps: float = EPS) -> torch.Tensor:
    """MRTPO token advantages ``(N, G, T)``: :func:`mrtpo_token_parts` without the parts (same arguments)."""
    return mrtpo_token_parts(rewards, relevance, mask, weights, alpha, gamma, eps).token_advantages


@dataclass(frozen=True)
class MRTPOShift:
    """What MRTPO changes on each token of some rows of a batch, relative to their GDPO sequence advantage."""

    shift: torch.Tensor
    """``(B, T)`` ``sum_k lambda_k (w[k, t] - 1) Ahat_k / scale``: MRTPO's token advantage minus GDPO's ``A``.
    Exactly 0 when ``alpha = 0``; its mean over a response's valid tokens is 0; 0 on padding and unscorable rows."""
    parts: torch.Tensor
    """``(B, K, T)`` each reward's share ``lambda_k w[k, t] Ahat_k / scale`` (as :attr:`MRTPOParts.parts`)."""


def mrtpo_token_shift(rewards: torch.Tensor, relevance: torch.Tensor, mask: torch.Tensor, rows=None, weights=None,
                      alpha: float = 1.0, gamma: float = 1.0, eps: float = EPS) -> MRTPOShift:
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
        weights, alpha, gamma, eps: as :func:`mrtpo_token_parts`.
    """
    ahat, weights, _, _, std_b, unscorable = _gdpo_parts(rewards, weights, eps)
    N, G, K = ahat.shape
    rows = slice(None) if rows is None else rows
    ahat, unscorable = ahat.reshape(N * G, K)[rows], unscorable.reshape(N * G)[rows]  # (B, K), (B,)
    relevance = torch.as_tensor(relevance)
    if relevance.dim() != 3 or tuple(relevance.shape[:2]) != (ahat.shape[0], K):
        raise ValueError(f"relevance must be (B, K, T) with B, K = {ahat.shape[0]}, {K}, got {tuple(relevance.shape)}")
    w = mrtpo_token_weights(relevance.to(ahat.dtype)[None], torch.as_tensor(mask)[None], alpha, gamma)[0]  # (B, K, T)
    valid = (torch.as_tensor(mask, device=w.device) > 0) & ~unscorable[:, None]  # (B, T)
    scale = torch.where(std_b > 0, std_b + eps, 1.0)
    per_reward = weights[:, None] * ahat[..., None] / scale  # (B, K, 1)
    parts = torch.where(valid[:, None], per_reward * w, 0.0)  # (B, K, T)
    shift = torch.where(valid, (per_reward * (w - 1.0)).sum(1), 0.0)  # (B, T)
    return MRTPOShift(shift, parts)


# ----------------------------------------------------------------------------------------------- registry

def _over_tokens(adv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Broadcast a sequence advantage ``(N, G)`` over the valid tokens: ``(N, G, T)``, 0 on padding."""
    valid = _check_mask(mask, *adv.shape, adv.dtype) > 0
    return torch.where(valid, adv[..., None], 0.0)  # (N, G, T)


def span_relevance(in_span: torch.Tensor) -> torch.Tensor:
    """The oracle's relevance: a verifier's relevant-span mask ``(N, G, K, T)`` as 0/1 floats. Through
    :func:`mrtpo_token_weights` it becomes the mask normalized to mean 1 over the response (uniform where a verifier
    has no span token), which is how the oracle weights each reward's advantage."""
    return torch.as_tensor(in_span).float()


def entropy_token_advantages(rewards: torch.Tensor, entropy: torch.Tensor, mask: torch.Tensor, weights=None,
                             beta: float = 1.0, eps: float = EPS) -> torch.Tensor:
    """An uncertainty-only baseline (GTPO-style entropy weighting) that knows nothing of the verifiers.

    ``A_t = A * (1 + beta * (H_t / mean_t H - 1))`` with ``A`` the GDPO advantage and ``H_t`` the sampling policy's
    next-token entropy; the weight has mean 1 over a response's valid tokens (uniform where ``mean_t H`` is ~0), so,
    as for MRTPO, the token mean is GDPO's ``A`` and ``beta = 0`` is GDPO.

    Args:
        rewards: ``(N, G, K)``; entropy: ``(N, G, T)`` nats; mask: ``(N, G, T)``. beta: in ``[0, 1]``.
    Returns:
        ``(N, G, T)`` token advantages, 0 on padding.
    """
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must lie in [0, 1], got {beta}")
    adv = gdpo_advantages(rewards, weights, eps)[1]  # (N, G)
    N, G = adv.shape
    m = _check_mask(mask, N, G, adv.dtype)  # (N, G, T)
    H = torch.as_tensor(entropy, dtype=adv.dtype).nan_to_num(nan=0.0).clamp_min(0.0) * m  # (N, G, T)
    if H.shape != m.shape:
        raise ValueError(f"entropy must be (N, G, T) = {tuple(m.shape)}, got {tuple(H.shape)}")
    mean_h = H.sum(-1, keepdim=True) / m.sum(-1, keepdim=True).clamp_min(1.0)  # (N, G, 1)
    ratio = torch.where(mean_h > ZERO_RELEVANCE, H / mean_h.clamp_min(ZERO_RELEVANCE), 1.0)  # (N, G, T)
    return m * adv[..., None] * (1.0 + beta * (ratio - 1.0))


def _grpo_tokens(rewards, mask, relevance=None, entropy=None, weights=None, alpha=1.0, gamma=1.0, eps=EPS):
    return _over_tokens(grpo_advantages(rewards, weights, eps), mask)


def _gdpo_tokens(rewards, mask, relevance=None, entropy=None, weights=None, alpha=1.0, gamma=1.0, eps=EPS):
    return _over_tokens(gdpo_advantages(rewards, weights, eps)[1], mask)


def _mrtpo_tokens(rewards, mask, relevance=None, entropy=None, weights=None, alpha=1.0, gamma=1.0, eps=EPS):
    return mrtpo_token_advantages(rewards, relevance, mask, weights, alpha, gamma, eps)


def _entropy_tokens(rewards, mask, relevance=None, entropy=None, weights=None, alpha=1.0, gamma=1.0, eps=EPS):
    return entropy_token_advantages(rewards, entropy, mask, weights, beta=alpha, eps=eps)


NEEDS = ("", "relevance", "spans", "entropy")
"""What a method reads per token: nothing, the replay's relevance, the verifiers' relevant spans, the entropy."""


@dataclass(frozen=True)
class AdvantageMethod:
    """One advantage method behind the common call form (see the module docstring)."""

    name: str
    """Registry key, e.g. ``"mrtpo"``."""
    title: str
    """Human-readable name for the UI and plots."""
    needs: str
    """One of :data:`NEEDS`: the per-token input the training loop must provide (``relevance`` runs the replay;
    ``spans`` gives the verifiers' relevant-span masks as ``relevance``; ``entropy`` the sampling entropy)."""
    fn: Callable[..., torch.Tensor]
    """``fn(rewards, mask, relevance, entropy, weights, alpha, gamma, eps) -> (N, G, T)``."""

    @property
    def needs_relevance(self) -> bool:
        """Whether the method reads a relevance tensor (the replay's, or the oracle's span masks)."""
        return self.needs in ("relevance", "spans")

    def __call__(self, rewards: torch.Tensor, mask: torch.Tensor, relevance: torch.Tensor | None = None,
                 weights=None, alpha: float = 1.0, gamma: float = 1.0, eps: float = EPS,
                 entropy: torch.Tensor | None = None) -> torch.Tensor:
        """Token-level advantages ``(N, G, T)``, 0 on padding."""
        if self.needs_relevance and relevance is None:
            what = "the replay's relevance" if self.needs == "relevance" else "the relevant-span masks"
            raise ValueError(f"method {self.name!r} needs {what} (N, G, K, T)")
        if self.needs == "entropy" and entropy is None:
            raise ValueError(f"method {self.name!r} needs the sampling entropy (N, G, T)")
        return self.fn(rewards, mask, relevance, entropy, weights, alpha, gamma, eps)


ADVANTAGE_METHODS: dict[str, AdvantageMethod] = {
    m.name: m for m in (
        AdvantageMethod("grpo", "GRPO (sum, then normalize)", "", _grpo_tokens),
        AdvantageMethod("gdpo", "GDPO (normalize each reward, then sum)", "", _gdpo_tokens),
        AdvantageMethod("mrtpo", "MRTPO (each reward's advantage to its relevant tokens)", "relevance", _mrtpo_tokens),
        AdvantageMethod("mrtpo:oracle", "MRTPO with oracle weights (each reward's relevant spans)", "spans",
                        _mrtpo_tokens),
        AdvantageMethod("entropy", "Entropy weighting (GTPO-style; knows no verifier)", "entropy", _entropy_tokens),
    )
}
"""Method name (:data:`mrtpo_viz.names.METHODS`) -> ``AdvantageMethod``."""
assert tuple(ADVANTAGE_METHODS) == names.METHODS, "names.METHODS and the methods defined here differ"


def get_method(name: str) -> AdvantageMethod:
    """An advantage method by registry name, with a clear error for unknown names."""
    return ADVANTAGE_METHODS[names.check_choice("advantage method", name, names.METHODS)]
