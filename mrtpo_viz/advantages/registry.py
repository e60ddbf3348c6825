"""The advantage registry: every method behind one call form, with the two study baselines (the oracle's span
relevance, entropy weighting). Keyed by :data:`mrtpo_viz.names.METHODS`."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

import torch

from .. import names
from .core import EPS, ZERO_RELEVANCE, _check_mask, gdpo_advantages, grpo_advantages
from . import credit


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
    H = torch.as_tensor(entropy, dtype=adv.dtype)
    if H.shape != m.shape:  # checked before the product, which would broadcast a (N, G, 1) entropy silently
        raise ValueError(f"entropy must be (N, G, T) = {tuple(m.shape)}, got {tuple(H.shape)}")
    H = H.nan_to_num(nan=0.0).clamp_min(0.0) * m  # (N, G, T)
    mean_h = H.sum(-1, keepdim=True) / m.sum(-1, keepdim=True).clamp_min(1.0)  # (N, G, 1)
    ratio = torch.where(mean_h > ZERO_RELEVANCE, H / mean_h.clamp_min(ZERO_RELEVANCE), 1.0)  # (N, G, T)
    return m * adv[..., None] * (1.0 + beta * (ratio - 1.0))


def _grpo_tokens(rewards, mask, w, weights=None, eps=EPS):
    return _over_tokens(grpo_advantages(rewards, weights, eps), mask)


NEEDS = ("", "relevance", "spans", "entropy", "placebo", "shuffled", "one_context")
"""What a method reads per token (its caller provides it; the training loop's providers are keyed by these): nothing,
the replay's relevance, the verifiers' relevant spans, the entropy, random spans of the same sizes as the relevant
spans (:func:`placebo_spans`), the replay's relevance shuffled within each response (:func:`shuffle_relevance`), the
one all-information branch's divergence (``one_context``)."""
NEEDS_RELEVANCE = ("relevance", "spans", "placebo", "shuffled", "one_context")
"""The inputs that arrive as the ``relevance`` argument ``(N, G, K, T)``."""
_WHAT = {
    "relevance": "the replay's relevance",
    "spans": "the relevant-span masks",
    "placebo": "the placebo span masks",
    "shuffled": "the replay's relevance, shuffled",
    "one_context": "the one-context branch's relevance",
}


@dataclass(frozen=True)
class AdvantageMethod:
    """One advantage method: a credit method's token weights and how they become token advantages."""

    name: str
    """Registry key, e.g. ``"mrtpo"``."""
    title: str
    """Human-readable name for the UI and plots."""
    needs: str
    """One of :data:`NEEDS`: the per-token input the caller must provide (``relevance`` runs the replay;
    ``spans`` gives the verifiers' relevant-span masks as ``relevance``; ``entropy`` the sampling entropy)."""
    weights: Callable[..., torch.Tensor] = credit.uniform_weights
    """``weights(K, mask, relevance=, entropy=, alpha=, gamma=) -> (N, G, K, T)`` token weights (:mod:`.credit`)."""
    combine: str = "per_reward"
    """How the weights become advantages: a key of :data:`.credit.COMBINES` (``grpo``: GRPO, weights unused)."""
    replay: tuple[tuple[str, str], ...] = ()
    """Replay settings the method fixes, e.g. ``(("control", "others"),)``: the run's own are used otherwise."""
    mean_preserving: bool = True
    """Whether a response's token mean of the advantages is its GDPO advantage (weights of mean 1)."""

    @property
    def needs_relevance(self) -> bool:
        """Whether the method reads a relevance tensor (the replay's, the oracle's span masks, ...)."""
        return self.needs in NEEDS_RELEVANCE

    def token_weights(self, K: int, mask, relevance=None, entropy=None, alpha: float = 1.0, gamma: float = 1.0):
        """The method's per-reward token weights ``(N, G, K, T)`` (0 on padding)."""
        self._check_inputs(relevance, entropy)
        return self.weights(K, mask, relevance=relevance, entropy=entropy, alpha=alpha, gamma=gamma)

    def _check_inputs(self, relevance, entropy) -> None:
        if self.needs_relevance and relevance is None:
            raise ValueError(f"method {self.name!r} needs {_WHAT[self.needs]} (N, G, K, T)")
        if self.needs == "entropy" and entropy is None:
            raise ValueError(f"method {self.name!r} needs the sampling entropy (N, G, T)")

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
        self._check_inputs(relevance, entropy)
        if self.combine == "grpo":
            return _grpo_tokens(rewards, mask, None, weights, eps)
        r = torch.as_tensor(rewards)
        dtype = torch.float64 if r.dtype == torch.float64 else torch.float32
        if r.dim() != 3:
            raise ValueError(f"rewards must be (N, G, K), got shape {tuple(r.shape)}")
        relevance = None if relevance is None else torch.as_tensor(relevance).to(dtype)
        entropy = None if entropy is None else torch.as_tensor(entropy).to(dtype)
        w = self.weights(r.shape[-1], mask, relevance=relevance, entropy=entropy, alpha=alpha, gamma=gamma)
        return credit.COMBINES[self.combine](rewards, w, mask, weights, eps)


def _mask_weights(K, mask, relevance=None, alpha=1.0, gamma=1.0, **_):
    return credit.relevance_weights(K, mask, relevance, alpha, gamma, normalization="mask")


_M = credit.relevance_weights
_BUILT_IN = (
    AdvantageMethod("grpo", "GRPO (sum, then normalize)", "", combine="grpo"),
    AdvantageMethod("gdpo", "GDPO (normalize each reward, then sum)", "", combine="sequence"),
    AdvantageMethod("mrtpo", "MRTPO (each reward's advantage to its relevant tokens)", "relevance", _M),
    AdvantageMethod("mrtpo:oracle", "MRTPO with oracle weights (each reward's relevant spans)", "spans", _M),
    AdvantageMethod(
        "entropy", "Entropy weighting (GTPO-style; knows no verifier)", "entropy", credit.entropy_weights, "sequence"
    ),
    AdvantageMethod(
        "mrtpo-mask",
        "MRTPO, mask normalization (relevance in [0, 1], no T/|S| rescaling)",
        "relevance",
        _mask_weights,
        mean_preserving=False,
    ),
    AdvantageMethod(
        "mrtpo:oracle-mask",
        "Oracle, mask only (each reward's advantage on its span tokens only)",
        "spans",
        _mask_weights,
        mean_preserving=False,
    ),
    AdvantageMethod("mrtpo:placebo", "Placebo (random spans of the oracle's sizes, mean normalization)", "placebo", _M),
    AdvantageMethod(
        "mrtpo:placebo-mask",
        "Placebo, mask only (random spans of the oracle's sizes)",
        "placebo",
        _mask_weights,
        mean_preserving=False,
    ),
    AdvantageMethod(
        "mrtpo:shuffle",
        "MRTPO's placebo (its own relevance shuffled within each response, mean normalization)",
        "shuffled",
        _M,
    ),
    AdvantageMethod(
        "mrtpo@others",
        "MRTPO, each branch held against the other verifiers' information (control 'others')",
        "relevance",
        _M,
        replay=(("control", "others"),),
    ),
    AdvantageMethod(
        "mrtpo@kl", "MRTPO with KL instead of JS (metric 'kl')", "relevance", _M, replay=(("metric", "kl"),)
    ),
    AdvantageMethod(
        "wrong_hint",
        "Wrong-hint contrast: JS(right, none) - JS(wrong, none), clipped at 0 (RLCSD-style)",
        "relevance",
        _M,
        replay=(("control", "wrong_hint"),),
    ),
    AdvantageMethod(
        "one_context",
        "One context: every verifier's information in one branch, one weight row for all rewards",
        "one_context",
        credit.one_context_weights,
    ),
    AdvantageMethod(
        "entropy_top",
        f"Top {credit.ENTROPY_TOP_Q:.0%} entropy tokens only (TRL's top_entropy_quantile)",
        "entropy",
        credit.entropy_top_weights,
        "sequence",
        mean_preserving=False,
    ),
)

ADVANTAGE_METHODS: dict[str, AdvantageMethod] = {m.name: m for m in _BUILT_IN}
"""Method name (:data:`mrtpo_viz.names.METHODS`, then any :func:`register_credit` adds) -> ``AdvantageMethod``."""
assert tuple(ADVANTAGE_METHODS) == names.METHODS, "names.METHODS and the methods defined here differ"


def register_credit(
    name: str,
    weights: Callable[..., torch.Tensor],
    *,
    title: str = "",
    needs: str = "relevance",
    combine: str = "per_reward",
    replay: dict[str, str] | None = None,
    mean_preserving: bool = True,
) -> AdvantageMethod:
    """Add a credit method (as verl's ``register_adv_est``): the app, the CLI, the training loop and MRTPOTrainer
    then run it by ``name``.

    Args:
        name: a new registry key.
        weights: ``weights(K, mask, relevance=, entropy=, alpha=, gamma=) -> (N, G, K, T)`` token weights, a pure
            function of its inputs; it should give ``w = 1`` on valid tokens when ``alpha = 0`` (GDPO).
        needs: the per-token input it reads (:data:`NEEDS`); combine: a key of :data:`.credit.COMBINES`.
        replay: replay settings it fixes (``{"control": ..., "metric": ...}``).
    Returns:
        The registered :class:`AdvantageMethod`.
    """
    if not isinstance(name, str) or not name or name in ADVANTAGE_METHODS:
        raise ValueError(f"a credit method needs a new name; {name!r} is taken or empty")
    names.check_choice("input", needs, NEEDS)
    names.check_choice("combination", combine, tuple(credit.COMBINES))
    settings = dict(replay or {})
    unknown = set(settings) - {"control", "metric"}
    if unknown:
        raise ValueError(f"replay settings are control and metric, got {sorted(unknown)}")
    names.check_choice("control", settings.get("control", "none"), names.CONTROLS)
    names.check_choice("metric", settings.get("metric", "js"), names.METRICS)
    method = AdvantageMethod(
        name, title or name, needs, weights, combine, tuple(sorted(settings.items())), mean_preserving
    )
    ADVANTAGE_METHODS[name] = method
    return method


def method_names() -> tuple[str, ...]:
    """Every registered method: :data:`mrtpo_viz.names.METHODS`, then those :func:`register_credit` added."""
    return tuple(ADVANTAGE_METHODS)


def get_method(name: str) -> AdvantageMethod:
    """An advantage method by registry name, with a clear error for unknown names."""
    return ADVANTAGE_METHODS[names.check_choice("advantage method", name, method_names())]
