"""Credit methods: where each reward's advantage goes inside a response. Each is a pure function from what the replay
(or the sampling forward) gives per token to per-reward token weights ``w`` ``(N, G, K, T)`` (one response: ``N = G =
1``, i.e. ``(K, T)``), and one of two ways to turn weights into token advantages (:data:`COMBINES`):

- ``per_reward`` (MRTPO's): ``A[t] = (sum_k lambda_k w[k, t] Ahat_k - mean_batch S) / (std_batch S + eps)``;
- ``sequence`` (a weight on GDPO's sequence advantage, shared by every reward): ``A[t] = A_GDPO * w[0, t]``.

``w = 1`` on valid tokens is GDPO for both, and every weight function here is ``(1 - alpha) + alpha * what``, so
``alpha = 0`` gives GDPO exactly. Where ``what`` has mean 1 over a response (``mean`` normalization, entropy
weighting), the token mean of ``A[t]`` is GDPO's advantage; where it is a 0/1 or peak-normalized mask (``mask``
normalization, ``entropy_top``) it is not, by design (the advantage keeps its size on the tokens it reaches).

The methods (:data:`mrtpo_viz.names.METHODS`, registered in :mod:`.registry`):

- ``gdpo``: uniform; ``mrtpo`` / ``mrtpo-mask``: the replay's relevance, ``mean`` / ``mask`` normalization;
  ``mrtpo@others``, ``mrtpo@kl``, ``wrong_hint``: the same weights from a replay with another control or metric
  (the method fixes it, :attr:`.registry.AdvantageMethod.replay`).
- ``one_context``: one extra replay branch holding every verifier's information at once; its per-token divergence
  from the no-information branch is one weight row shared by every reward (SDPO/RLSD's single teacher context; the
  ablation of MRTPO's separate per-reward branches). The divergence is the run's metric (JS by default), not the
  sampled token's teacher-student log-prob gap: the ablation should change one thing (one context instead of K)
  and keep MRTPO's signal and normalization; the log-prob gap is signed and unbounded (RLSD uses it as an update
  size with the reward's sign), so it would change the weighting as well.
- ``entropy``: GTPO-style ``1 + (H_t / mean_t H - 1)``; ``entropy_top``: TRL's ``top_entropy_quantile`` mask (the
  tokens whose sampling entropy is at least the batch's ``1 - q`` quantile, :func:`entropy_top_mask`).
- ``mrtpo:oracle*``, ``mrtpo:placebo*``, ``mrtpo:shuffle``: the credit study's baselines (their inputs are span
  masks or shuffled relevance, drawn by the caller, :mod:`.registry`).
"""

from __future__ import annotations

import torch

from .core import EPS, ZERO_RELEVANCE, _check_mask, gdpo_advantages
from .mrtpo import mrtpo_token_weights, weighted_token_parts

ENTROPY_TOP_Q = 0.2
"""``entropy_top``'s share of tokens kept (TRL's ``top_entropy_quantile``; arXiv 2506.01939 keeps the top 20%)."""


def _mask4(mask: torch.Tensor, K: int, dtype=torch.float32) -> torch.Tensor:
    m = torch.as_tensor(mask).to(dtype)
    if m.dim() != 3:
        raise ValueError(f"mask must be (N, G, T), got shape {tuple(m.shape)}")
    return m[:, :, None, :].expand(-1, -1, K, -1)  # (N, G, K, T)


def uniform_weights(K: int, mask: torch.Tensor, **_) -> torch.Tensor:
    """GDPO's credit: ``w = 1`` on every valid token for every reward. Returns ``(N, G, K, T)``."""
    return _mask4(mask, K).clone()


def relevance_weights(
    K: int, mask, relevance=None, alpha: float = 1.0, gamma: float = 1.0, normalization: str = "mean", **_
) -> torch.Tensor:
    """MRTPO's weights from relevance ``(N, G, K, T)`` (:func:`.mrtpo.mrtpo_token_weights`): ``(N, G, K, T)``."""
    return mrtpo_token_weights(relevance, mask, alpha, gamma, normalization)


def entropy_weights(K: int, mask, entropy=None, alpha: float = 1.0, **_) -> torch.Tensor:
    """GTPO-style ``w = 1 + alpha * (H_t / mean_t H - 1)`` (mean 1 over a response; uniform where ``mean_t H`` ~ 0),
    the same row for every reward. Args: entropy ``(N, G, T)`` nats; mask ``(N, G, T)``. Returns ``(N, G, K, T)``."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    H = torch.as_tensor(entropy)
    dtype = H.dtype if H.dtype == torch.float64 else torch.float32
    m = _check_mask(mask, *torch.as_tensor(mask).shape[:2], dtype)  # (N, G, T)
    if H.shape != m.shape:  # checked before the product, which would broadcast a (N, G, 1) entropy silently
        raise ValueError(f"entropy must be (N, G, T) = {tuple(m.shape)}, got {tuple(H.shape)}")
    H = H.to(dtype).nan_to_num(nan=0.0).clamp_min(0.0) * m  # (N, G, T)
    mean_h = H.sum(-1, keepdim=True) / m.sum(-1, keepdim=True).clamp_min(1.0)  # (N, G, 1)
    ratio = torch.where(mean_h > ZERO_RELEVANCE, H / mean_h.clamp_min(ZERO_RELEVANCE), 1.0)  # (N, G, T)
    return (m * (1.0 + alpha * (ratio - 1.0)))[:, :, None, :].expand(-1, -1, K, -1)  # (N, G, K, T)


def entropy_top_mask(entropy: torch.Tensor, mask: torch.Tensor, q: float = ENTROPY_TOP_Q) -> torch.Tensor:
    """TRL's high-entropy mask (``GRPOTrainer.get_high_entropy_mask(entropies, mask, 1 - q)``, trl 1.16): the
    threshold is the ``1 - q`` quantile (torch's linear interpolation) of the entropies of every valid token of the
    batch, and a valid token is kept when its entropy is at least that. No valid token: nothing is kept.

    Args:
        entropy: ``(..., T)`` per-token entropy; mask: same shape, 1 on valid tokens. q: in ``(0, 1]``.
    Returns:
        bool, the shape of ``entropy``.
    """
    if not 0.0 < q <= 1.0:
        raise ValueError(f"q must lie in (0, 1], got {q}")
    entropy, valid = torch.as_tensor(entropy), torch.as_tensor(mask).bool()
    values = entropy[valid].float()
    if values.numel() == 0:
        return torch.zeros_like(entropy, dtype=torch.bool)
    threshold = torch.quantile(values, 1.0 - q)
    return ((entropy * valid.float()) >= threshold) & valid


def entropy_top_weights(K: int, mask, entropy=None, alpha: float = 1.0, q: float = ENTROPY_TOP_Q, **_):
    """``w = (1 - alpha) + alpha * top`` with ``top`` :func:`entropy_top_mask` over the batch, every reward alike.
    Under the ``sequence`` combination this is TRL's ``top_entropy_quantile`` loss (its per-token loss times the
    mask, normalized over all valid tokens). Args: entropy, mask ``(N, G, T)``. Returns ``(N, G, K, T)``."""
    m = _check_mask(mask, *torch.as_tensor(mask).shape[:2], torch.float32)  # (N, G, T)
    top = entropy_top_mask(entropy, m, q).float()  # (N, G, T)
    return (m * ((1.0 - alpha) + alpha * top))[:, :, None, :].expand(-1, -1, K, -1)  # (N, G, K, T)


def one_context_weights(K: int, mask, relevance=None, alpha: float = 1.0, gamma: float = 1.0, **_):
    """``one_context``'s weights: the one all-information branch's divergence ``(N, G, T)`` (or ``(N, G, K, T)``
    whose K rows are that same row) through MRTPO's ``mean`` normalization, the same row for every reward.
    Returns ``(N, G, K, T)``."""
    d = torch.as_tensor(relevance)
    row = d if d.dim() == 3 else d[:, :, 0]  # (N, G, T)
    return mrtpo_token_weights(row[:, :, None, :], mask, alpha, gamma)[:, :, :1].expand(-1, -1, K, -1)


def combine_per_reward(rewards, w, mask, weights=None, eps: float = EPS) -> torch.Tensor:
    """MRTPO's combination (:func:`.mrtpo.weighted_token_parts`): ``(N, G, T)`` token advantages."""
    return weighted_token_parts(rewards, w, mask, weights, eps).token_advantages


def combine_sequence(rewards, w, mask, weights=None, eps: float = EPS) -> torch.Tensor:
    """GDPO's sequence advantage times the first reward's weight row (methods whose rows are all equal):
    ``(N, G, T)``, 0 on padding."""
    adv = gdpo_advantages(rewards, weights, eps)[1]  # (N, G)
    m = _check_mask(mask, *adv.shape, adv.dtype)  # (N, G, T)
    return m * adv[..., None] * torch.as_tensor(w).to(adv.dtype)[:, :, 0]


COMBINES = {"per_reward": combine_per_reward, "sequence": combine_sequence}
"""How a method's weights become token advantages (see the module docstring)."""
