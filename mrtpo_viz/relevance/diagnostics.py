"""Diagnostics of one replayed response: how concentrated each verifier's relevance is (:func:`relevance_summary`,
the numbers the A/B tab compares), and how concentrated MRTPO's token weights are and how much of them lands on the
tokens that decide the verifier's verdict (:func:`weight_diagnostics`).

For verifier ``k`` with token weights ``w[k, t]`` (:func:`mrtpo_viz.advantages.mrtpo_token_weights`: mean 1 over the
response, so ``sum_t w = T``):

- **weight Gini** ``G_k = sum_i (2 i - T - 1) w_(i) / (T sum_t w)`` over the weights sorted ascending ``w_(1..T)``
  (the usual Gini coefficient, equal to the mean absolute difference over twice the mean): 0 when every token gets
  the same credit (GDPO), ``(T - 1) / T`` when one token gets it all;
- **effective-token ratio** ``(sum_t w)^2 / (T sum_t w^2)`` (Kish's effective sample size over ``T``): the share of
  the tokens that effectively carry the credit, 1 for uniform weights, ``1 / T`` for a single token;
- **span share** ``sum_{t in spans} w / sum_t w``: the share of the credit on the tokens inside the verifier's
  relevant spans (None where the spans are unknown), shown beside **span tokens**, the share of the tokens inside
  them (what uniform weights would put there). A span share above the span-token share means MRTPO moves credit
  towards the tokens that decide the verdict.

These are ours (the paper reports none); they summarize what the advantage panel shows token by token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from collections.abc import Sequence

import torch

from ..advantages import mrtpo_token_weights
from .results import Relevance


def gini(x: torch.Tensor) -> torch.Tensor:
    """Gini coefficient of non-negative values over the last axis: ``(..., T) -> (...)``; 0 where all are 0."""
    x = torch.as_tensor(x, dtype=torch.float64).clamp_min(0.0)
    T = x.shape[-1]
    ranks = torch.arange(1, T + 1, dtype=x.dtype)  # (T,)
    total = x.sum(-1)  # (...)
    num = ((2 * ranks - T - 1) * x.sort(-1).values).sum(-1)  # (...)
    return torch.where(total > 0, num / (T * total).clamp_min(1e-300), 0.0)


def effective_token_ratio(w: torch.Tensor) -> torch.Tensor:
    """``(sum w)^2 / (T sum w^2)`` over the last axis, in ``[1/T, 1]``: ``(..., T) -> (...)``; 1 where all are 0."""
    w = torch.as_tensor(w, dtype=torch.float64).clamp_min(0.0)
    T = w.shape[-1]
    sq = (w * w).sum(-1)  # (...)
    return torch.where(sq > 0, w.sum(-1) ** 2 / (T * sq).clamp_min(1e-300), 1.0)


def span_share(w: torch.Tensor, in_span: Sequence[bool]) -> Optional[float]:
    """Share of the weights ``(T,)`` on the tokens flagged ``in_span`` (``(T,)`` bools); None when nothing is
    flagged (a verdict with no deciding tokens) or the weights are all 0."""
    flags = torch.as_tensor(list(in_span), dtype=torch.bool)
    w = torch.as_tensor(w, dtype=torch.float64).clamp_min(0.0)
    if flags.shape != w.shape:
        raise ValueError(f"in_span has {tuple(flags.shape)} flags for {tuple(w.shape)} weights")
    total = float(w.sum())
    return None if not bool(flags.any()) or total <= 0 else float(w[flags].sum()) / total


@dataclass(frozen=True)
class WeightDiagnostics:
    """Per verifier (in order), the diagnostics of its MRTPO token weights on one response."""

    verifiers: tuple[str, ...]
    weights: torch.Tensor
    """``(K, T)`` the token weights ``w`` the diagnostics describe."""
    gini: torch.Tensor
    """``(K,)`` weight Gini."""
    effective_ratio: torch.Tensor
    """``(K,)`` effective-token ratio."""
    span_share: tuple[Optional[float], ...]
    """Share of the weight on the verifier's relevant spans (None: spans unknown or empty)."""
    span_tokens: tuple[Optional[float], ...]
    """Share of the tokens inside those spans (None likewise)."""


def weight_diagnostics(
    relevance,
    verifiers: Sequence[str],
    in_span: Sequence[Optional[Sequence[bool]]],
    alpha: float = 1.0,
    gamma: float = 1.0,
) -> WeightDiagnostics:
    """The diagnostics of MRTPO's weights for one response.

    Args:
        relevance: ``(K, T)`` the response's relevance ``d``.
        verifiers: the K names. in_span: per verifier, T flags (inside a relevant span) or None (unknown).
        alpha, gamma: MRTPO's weighting (see :func:`mrtpo_viz.advantages.mrtpo_token_weights`).
    """
    d = torch.as_tensor(relevance, dtype=torch.float32)
    K, T = d.shape
    if len(verifiers) != K or len(in_span) != K:
        raise ValueError(f"need {K} verifier names and {K} span flags, got {len(verifiers)} and {len(in_span)}")
    w = mrtpo_token_weights(d[None, None], torch.ones(1, 1, T), alpha, gamma)[0, 0]  # (K, T); N = G = 1
    shares = tuple(None if flags is None else span_share(w[k], flags) for k, flags in enumerate(in_span))
    tokens = tuple(None if flags is None or not any(flags) else sum(map(bool, flags)) / T for flags in in_span)
    return WeightDiagnostics(tuple(verifiers), w, gini(w).float(), effective_token_ratio(w).float(), shares, tokens)


def relevance_weight_diagnostics(
    rel: Relevance, alpha: float = 1.0, gamma: float = 1.0, raw: bool = False
) -> WeightDiagnostics:
    """:func:`weight_diagnostics` of a replay: its (raw or controlled) relevance and its verifiers' spans."""
    scores = rel.raw_scores if raw else rel.scores
    return weight_diagnostics(scores, rel.verifiers, [rel.token_in_span(v) for v in rel.verifiers], alpha, gamma)


def relevance_summary(rel: Relevance, verifier: str, top: int = 5) -> dict:
    """Numbers that compare information texts: span mass, concentration, top tokens of one verifier's relevance.

    ``span_mass``: share of the relevance on tokens inside the verifier's relevant spans (None where unknown);
    ``top10_mass``: share on the top 10% of tokens; ``effective_tokens``: ``exp`` of the entropy of the normalized
    relevance (T when uniform, 1 when all on one token).
    """
    d = rel.scores[rel.verifiers.index(verifier)].clamp_min(0.0)  # (T,)
    total = float(d.sum())
    p = d / total if total > 0 else torch.full_like(d, 1.0 / max(len(d), 1))
    n_top = max(1, round(0.1 * len(d)))
    in_span = rel.token_in_span(verifier)
    span_mass = None if in_span is None or total <= 0 else float(p[torch.tensor(in_span, dtype=torch.bool)].sum())
    order = torch.argsort(d, descending=True)[:top].tolist()
    entropy = float(-(p[p > 0] * p[p > 0].log()).sum())
    return {
        "mean": float(d.mean()) if len(d) else 0.0,
        "max": float(d.max()) if len(d) else 0.0,
        "span_mass": span_mass,
        "top10_mass": float(p.sort(descending=True).values[:n_top].sum()),
        "effective_tokens": float(torch.tensor(entropy).exp()),
        "top_tokens": [(rel.tokens[t], float(d[t])) for t in order],
    }
