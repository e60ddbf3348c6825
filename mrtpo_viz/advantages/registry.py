"""The advantage registry: every method behind one call form, with the two study baselines (the oracle's span
relevance, entropy weighting). Keyed by :data:`mrtpo_viz.names.METHODS`."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

import torch

from .. import names
from .core import EPS, ZERO_RELEVANCE, _check_mask, gdpo_advantages, grpo_advantages
from .mrtpo import mrtpo_token_advantages


def _over_tokens(adv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Broadcast a sequence advantage ``(N, G)`` over the valid tokens: ``(N, G, T)``, 0 on padding."""
    valid = _check_mask(mask, *adv.shape, adv.dtype) > 0
    return torch.where(valid, adv[..., None], 0.0)  # (N, G, T)


def span_relevance(in_span: torch.Tensor) -> torch.Tensor:
    """The oracle's relevance: a verifier's relevant-span mask ``(N, G, K, T)`` as 0/1 floats. Through
    :func:`mrtpo_token_weights` it becomes the mask normalized to mean 1 over the response (uniform where a verifier
    has no span token), which is how the oracle weights each reward's advantage."""
    return torch.as_tensor(in_span).float()


def placebo_spans(in_span: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """The placebo's relevance: for every (completion, verifier) row, as many tokens as its relevant spans cover,
    drawn uniformly at random among the response's valid tokens (a credit assignment of the oracle's size and
    sharpness that knows nothing of the verdict; for one-token spans, one random token).

    Args:
        in_span: ``(N, G, K, T)`` 0/1 span masks (:func:`span_relevance`); mask: ``(N, G, T)``.
        generator: seeds the draw.
    Returns:
        ``(N, G, K, T)`` 0/1 floats with the same count per row as ``in_span`` (capped by the row's valid tokens).
    """
    in_span = torch.as_tensor(in_span).float()
    N, G, K, T = in_span.shape
    valid = (_check_mask(mask, N, G, in_span.dtype) > 0)[:, :, None, :].expand(N, G, K, T)  # (N, G, K, T)
    count = (in_span * valid).sum(-1, keepdim=True)  # (N, G, K, 1)
    score = torch.where(valid, torch.rand(N, G, K, T, generator=generator), -1.0)  # invalid tokens rank last
    rank = score.argsort(-1, descending=True).argsort(-1)  # (N, G, K, T): 0 = highest score
    return ((rank < count) & valid).float()


def shuffle_relevance(
    relevance: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """MRTPO's matched placebo: each (completion, verifier) row's relevance permuted at random among the response's
    valid tokens. The row keeps its own values (so the same sum, sharpness and normalization as MRTPO's weights); only
    *where* the weight goes is random. Each row draws its own permutation, as the span placebo draws its own tokens.

    Args:
        relevance: ``(N, G, K, T)`` the replay's relevance; mask: ``(N, G, T)``.
        generator: seeds the draw.
    Returns:
        ``(N, G, K, T)``: on every row, the valid tokens' values in a random order; 0 on padding.
    """
    rel = torch.as_tensor(relevance).float()
    N, G, K, T = rel.shape
    valid = (_check_mask(mask, N, G, rel.dtype) > 0)[:, :, None, :].expand(N, G, K, T)  # (N, G, K, T)
    ar = torch.arange(T).expand(N, G, K, T)  # (N, G, K, T)
    targets = torch.where(valid, torch.rand(N, G, K, T, generator=generator), 2.0).argsort(-1)  # valid, random order
    sources = torch.where(valid, ar, T + ar).argsort(-1)  # valid positions in order, then padding
    vals = torch.gather(torch.where(valid, rel, 0.0), -1, sources)  # (N, G, K, T): the row's valid values first
    return torch.zeros_like(rel).scatter(-1, targets, vals) * valid


def entropy_token_advantages(
    rewards: torch.Tensor, entropy: torch.Tensor, mask: torch.Tensor, weights=None, beta: float = 1.0, eps: float = EPS
) -> torch.Tensor:
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


def _mrtpo_mask_tokens(rewards, mask, relevance=None, entropy=None, weights=None, alpha=1.0, gamma=1.0, eps=EPS):
    return mrtpo_token_advantages(rewards, relevance, mask, weights, alpha, gamma, eps, normalization="mask")


def _entropy_tokens(rewards, mask, relevance=None, entropy=None, weights=None, alpha=1.0, gamma=1.0, eps=EPS):
    return entropy_token_advantages(rewards, entropy, mask, weights, beta=alpha, eps=eps)


NEEDS = ("", "relevance", "spans", "entropy", "placebo", "shuffled")
"""What a method reads per token: nothing, the replay's relevance, the verifiers' relevant spans, the entropy, random
spans of the same sizes as the relevant spans (:func:`placebo_spans`), the replay's relevance shuffled within each
response (:func:`shuffle_relevance`)."""


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
        return self.needs in ("relevance", "spans", "placebo", "shuffled")

    def __call__(
        self,
        rewards: torch.Tensor,
        mask: torch.Tensor,
        relevance: torch.Tensor | None = None,
        weights=None,
        alpha: float = 1.0,
        gamma: float = 1.0,
        eps: float = EPS,
        entropy: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Token-level advantages ``(N, G, T)``, 0 on padding."""
        if self.needs_relevance and relevance is None:
            what = {
                "relevance": "the replay's relevance",
                "spans": "the relevant-span masks",
                "placebo": "the placebo span masks",
                "shuffled": "the replay's relevance, shuffled",
            }[self.needs]
            raise ValueError(f"method {self.name!r} needs {what} (N, G, K, T)")
        if self.needs == "entropy" and entropy is None:
            raise ValueError(f"method {self.name!r} needs the sampling entropy (N, G, T)")
        return self.fn(rewards, mask, relevance, entropy, weights, alpha, gamma, eps)


ADVANTAGE_METHODS: dict[str, AdvantageMethod] = {
    m.name: m
    for m in (
        AdvantageMethod("grpo", "GRPO (sum, then normalize)", "", _grpo_tokens),
        AdvantageMethod("gdpo", "GDPO (normalize each reward, then sum)", "", _gdpo_tokens),
        AdvantageMethod("mrtpo", "MRTPO (each reward's advantage to its relevant tokens)", "relevance", _mrtpo_tokens),
        AdvantageMethod(
            "mrtpo:oracle", "MRTPO with oracle weights (each reward's relevant spans)", "spans", _mrtpo_tokens
        ),
        AdvantageMethod("entropy", "Entropy weighting (GTPO-style; knows no verifier)", "entropy", _entropy_tokens),
        AdvantageMethod(
            "mrtpo-mask",
            "MRTPO, mask normalization (relevance in [0, 1], no T/|S| rescaling)",
            "relevance",
            _mrtpo_mask_tokens,
        ),
        AdvantageMethod(
            "mrtpo:oracle-mask",
            "Oracle, mask only (each reward's advantage on its span tokens only)",
            "spans",
            _mrtpo_mask_tokens,
        ),
        AdvantageMethod(
            "mrtpo:placebo",
            "Placebo (random spans of the oracle's sizes, mean normalization)",
            "placebo",
            _mrtpo_tokens,
        ),
        AdvantageMethod(
            "mrtpo:placebo-mask",
            "Placebo, mask only (random spans of the oracle's sizes)",
            "placebo",
            _mrtpo_mask_tokens,
        ),
        AdvantageMethod(
            "mrtpo:shuffle",
            "MRTPO's placebo (its own relevance shuffled within each response, mean normalization)",
            "shuffled",
            _mrtpo_tokens,
        ),
    )
}
"""Method name (:data:`mrtpo_viz.names.METHODS`) -> ``AdvantageMethod``."""
assert tuple(ADVANTAGE_METHODS) == names.METHODS, "names.METHODS and the methods defined here differ"


def get_method(name: str) -> AdvantageMethod:
    """An advantage method by registry name, with a clear error for unknown names."""
    return ADVANTAGE_METHODS[names.check_choice("advantage method", name, names.METHODS)]
