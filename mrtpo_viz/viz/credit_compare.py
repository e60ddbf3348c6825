"""Credit methods side by side on one replayed response: each method's token weights for a pinned reward, on one
colour scale, with the share of each method's weight on the verifier's decision spans. The weights come from the
registry (:mod:`mrtpo_viz.advantages.credit`); this module only picks what one :class:`~mrtpo_viz.Relevance` can feed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from collections.abc import Sequence

import plotly.graph_objects as go
import torch

from ..advantages import ADVANTAGE_METHODS, get_method
from .figures import _layout, token_axis

APP_NEEDS = ("", "relevance", "spans", "entropy")
"""The per-token inputs one replayed response provides (its relevance, its verifiers' spans, its entropy); methods
that fix another control or metric, or need the one-context branch or a random draw, need a replay of their own."""


def app_credits() -> list[str]:
    """The registered credit methods the app computes from one replay (registry order; no copied names)."""
    return [
        name for name, m in ADVANTAGE_METHODS.items() if m.combine != "grpo" and m.needs in APP_NEEDS and not m.replay
    ]


def _spans(rel) -> torch.Tensor:
    """(K, T) 1 on the tokens inside each verifier's decision spans (0 where the spans are unknown)."""
    rows = [rel.token_in_span(v) or [False] * rel.T for v in rel.verifiers]
    return torch.tensor(rows, dtype=torch.float32)


def response_weights(rel, method: str, alpha: float = 1.0, gamma: float = 1.0, raw: bool = False) -> torch.Tensor:
    """One method's per-reward token weights ``(K, T)`` on the replayed response (N = G = 1).

    Args:
        rel: a Relevance. method: one of :func:`app_credits`. raw: use the raw relevance, not the controlled one.
    """
    m = get_method(method)
    if m.needs not in APP_NEEDS or m.replay:
        raise ValueError(f"credit method {method!r} needs its own replay; the app compares {app_credits()}")
    K, T = len(rel.verifiers), rel.T
    mask = torch.ones(1, 1, T)  # (N, G, T)
    scores = rel.raw_scores if raw else rel.scores
    relevance = _spans(rel) if m.needs == "spans" else torch.as_tensor(scores, dtype=torch.float32)
    if m.needs == "entropy" and rel.entropy is None:
        raise ValueError(f"credit method {method!r} needs the replay's entropy, which this response lacks")
    entropy = None if rel.entropy is None else torch.as_tensor(rel.entropy, dtype=torch.float32)[None, None]
    w = m.token_weights(K, mask, relevance=relevance[None, None], entropy=entropy, alpha=alpha, gamma=gamma)
    return w[0, 0]  # (K, T)


@dataclass(frozen=True)
class CreditComparison:
    """Each method's weights for one reward of one response."""

    methods: list[str]
    verifier: str
    weights: torch.Tensor
    """``(M, T)`` the pinned reward's token weights under each method."""
    span_share: list[Optional[float]]
    """Per method, the share of its weight on the verifier's decision spans (None where the spans are unknown)."""
    uniform_share: Optional[float]
    """The share a uniform weight would put there (the span tokens' share of the response)."""


def compare_credits(
    rel, verifier: str, methods: Optional[Sequence[str]] = None, alpha: float = 1.0, gamma: float = 1.0
) -> CreditComparison:
    """Every method's weights for ``verifier`` on the replayed response, and their shares on its decision spans."""
    if verifier not in rel.verifiers:
        raise ValueError(f"{verifier!r} is not one of the replayed verifiers {rel.verifiers}")
    k = rel.verifiers.index(verifier)
    methods = list(methods or app_credits())
    w = torch.stack([response_weights(rel, m, alpha, gamma)[k] for m in methods])  # (M, T)
    flags = rel.token_in_span(verifier)
    if flags is None or not any(flags):
        return CreditComparison(methods, verifier, w, [None] * len(methods), None)
    inside = torch.tensor(flags, dtype=torch.float32)  # (T,)
    total = w.sum(-1).clamp_min(1e-12)  # (M,)
    shares = ((w * inside).sum(-1) / total).tolist()
    return CreditComparison(methods, verifier, w, shares, float(inside.mean()))


def credit_heatmap(tokens: Sequence[str], comp: CreditComparison) -> go.Figure:
    """One row per method, the pinned reward's token weights on one colour scale (0 to the largest weight)."""
    labels = [
        f"{m} ({share:.0%} on spans)" if share is not None else m for m, share in zip(comp.methods, comp.span_share)
    ]
    fig = go.Figure(
        go.Heatmap(
            z=comp.weights.tolist(),
            x=token_axis(tokens),
            y=labels,
            zmin=0.0,
            zmax=max(float(comp.weights.max()), 1e-9),
            colorscale="Viridis",
            colorbar=dict(title="weight"),
            hovertemplate="%{y}<br>token %{x}<br>weight %{z:.3g}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, f"Token weights for {comp.verifier}, one row per credit method", 120 + 34 * len(labels))


def credit_markdown(comp: CreditComparison) -> str:
    """The share of each method's weight on the verifier's decision spans, against uniform."""
    if comp.uniform_share is None:
        return f"No decision spans are known for {comp.verifier} on this response: no shares to compare."
    rows = [f"| {m} | {s:.1%} | {s / comp.uniform_share:.2f}x |" for m, s in zip(comp.methods, comp.span_share)]
    head = (
        f"Share of each method's weight for **{comp.verifier}** on its decision spans "
        f"(uniform: {comp.uniform_share:.1%} of the tokens).\n\n| method | share on spans | vs uniform |\n|---|---|---|"
    )
    return "\n".join([head, *rows])
