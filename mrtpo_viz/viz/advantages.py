"""One response's per-token advantages under GDPO and MRTPO, split per reward for display. The numbers come from
:func:`mrtpo_viz.advantages.mrtpo_token_parts`; this module only picks the response's row."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..advantages import mrtpo_token_parts, weighted_token_parts


@dataclass(frozen=True)
class AdvantageBreakdown:
    """Per-token advantages of one response (row ``row`` of its group) under GDPO and MRTPO.

    ``parts[k].sum(0) + baseline == mrtpo`` holds (up to rounding): ``parts[k, t] = lambda_k w[k, t] Ahat_k / (std S +
    eps)`` and ``baseline`` is the rest (``-mean_batch S / (std S + eps)``, 0 for a single group up to rounding).
    """

    gdpo: float
    """The response's GDPO advantage, the same on every token."""
    mrtpo: torch.Tensor
    """(T,) MRTPO token advantages."""
    parts: torch.Tensor
    """(K, T) each reward's share of the MRTPO advantage."""
    baseline: torch.Tensor
    """(T,) what the batch centering adds to every token."""
    per_reward: torch.Tensor
    """(G, K) the group's per-reward advantages ``Ahat``."""
    group_gdpo: torch.Tensor
    """(G,) the group's GDPO advantages."""


MAX_GROUP = 256
"""Most responses in a displayed group: the breakdown holds a (G, K, T) relevance tensor (a typed table of
1,000,000 rows took 27 s and 950 MB)."""


def advantage_breakdown(
    rewards, relevance, alpha: float = 1.0, gamma: float = 1.0, weights=None, row: int = 0, token_weights=None
) -> AdvantageBreakdown:
    """Split row ``row``'s MRTPO token advantages into one stack per reward, for display.

    Args:
        rewards: (G, K) the group's rewards; row ``row`` is the replayed response.
        relevance: (K, T) that response's relevance (other rows' relevance does not change its advantages).
        alpha, gamma: MRTPO's weighting (see :func:`mrtpo_viz.advantages.mrtpo_token_weights`).
        weights: (K,) reward weights, default 1.
        token_weights: (K, T) another credit method's weights for the response
            (``viz.credit_compare.response_weights``), used instead of MRTPO's from ``relevance``; stacked per
            reward the same way. For a method that weights GDPO's sequence advantage (entropy, entropy_top) this is
            its advantage exactly when the group's batch centering is 0, as for one group.
    """
    if len(rewards) > MAX_GROUP:
        raise ValueError(f"the group has {len(rewards):,} responses; at most {MAX_GROUP} are shown")
    rewards = torch.as_tensor(rewards, dtype=torch.float32)
    relevance = torch.as_tensor(relevance, dtype=torch.float32)
    G, K = rewards.shape
    T = relevance.shape[-1]
    if relevance.shape != (K, T):
        raise ValueError(f"relevance must be (K={K}, T), got {tuple(relevance.shape)}")
    if not 0 <= row < G:
        raise ValueError(f"row {row} is outside the group of {G}")
    d = torch.ones(1, G, K, T)  # (N=1, G, K, T): other rows' relevance does not enter row `row`'s advantages
    d[0, row] = relevance
    if token_weights is None:
        parts = mrtpo_token_parts(rewards[None], d, torch.ones(1, G, T), weights, alpha, gamma)  # N = 1
    else:
        w = torch.ones(1, G, K, T)  # other rows: uniform (they do not enter row `row`'s advantages)
        w[0, row] = torch.as_tensor(token_weights, dtype=torch.float32)
        parts = weighted_token_parts(rewards[None], w, torch.ones(1, G, T), weights)
    return AdvantageBreakdown(
        float(parts.gdpo[0, row]),
        parts.token_advantages[0, row],
        parts.parts[0, row],
        parts.baseline[0, row],
        parts.per_reward[0],
        parts.gdpo[0],
    )
