"""Divergences between next-token distributions: the relevance signal of MRTPO.

All metrics take log-probabilities over the last dimension and return one number per leading index:
``(..., V), (..., V) -> (...)``. They compute in float32 at least (bfloat16 / float16 inputs are cast up; float64
stays float64), treat ``-inf`` log-probs (masked vocabulary entries) as probability 0 with ``0 * log 0 = 0``, and
clamp rounding noise so results stay in their ranges.

- ``js_distance``: Jensen-Shannon *distance* (square root of the divergence), base 2, in ``[0, 1]``. The paper's
  relevance ``d[k, t]``.
- ``kl``: ``KL(p || q)`` in nats, in ``[0, inf]``.
- ``tvd``: total variation distance, in ``[0, 1]``.

``chunked_metric`` applies one of them to two logits tensors position chunk by position chunk, so that a
150k-token vocabulary never needs more than one chunk of log-softmax in memory. ``token_stats`` gives per-position
log-prob of a token, entropy and top-k in the same chunked way. ``js_topk`` is a fast lower bound on JS for large
vocabularies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable

import torch

from . import names

LN2 = math.log(2.0)
CHUNK_ELEMENTS = 1 << 18
"""Default elements of one ``(rows, V)`` chunk: 2**18 float32 values = 1 MiB per temporary. A metric makes ~12
elementwise passes over its chunk; chunks that stay in the CPU's cache make the JS over a 49,152-entry vocabulary
about 1.9x faster than 32 MiB chunks (benchmarks/results/replay_columns.md), and memory stays bounded."""
_BIG = 1e4  # stands for an infinite log-ratio; any value above ~40 works (exp(-40) vanishes next to 1 in float64)

Metric = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _as_float(x: torch.Tensor) -> torch.Tensor:
    """float32 for half precisions and integers; float32 / float64 unchanged."""
    return x if x.dtype in (torch.float32, torch.float64) else x.float()


def _check_pair(a: torch.Tensor, b: torch.Tensor) -> None:
    if a.shape[-1:] != b.shape[-1:]:
        raise ValueError(f"the two distributions need the same vocabulary size, got {tuple(a.shape)}, {tuple(b.shape)}")
    try:
        torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError as err:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} do not broadcast") from err


def _kl_sum(logp: torch.Tensor, logr: torch.Tensor) -> torch.Tensor:
    """``sum_v p_v (log p_v - log r_v)`` over the last dim, with terms where ``p = 0`` set to 0.  (..., V) -> (...)"""
    diff = torch.where(torch.isneginf(logp), 0.0, logp - logr)  # also removes -inf - (-inf) = nan
    return (logp.exp() * diff).sum(-1)


def js_divergence(logp_p: torch.Tensor, logp_q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence in bits, in ``[0, 1]``.  (..., V), (..., V) -> (...)

    With ``x = log q - log p``, ``m = (p + q) / 2`` and ``g = log((1 + exp(-|x|)) / 2)`` in ``[-log 2, 0]``:
    ``log p - log m = -(relu(x) + g)`` and ``log q - log m = -(relu(-x) + g)``, so
    ``2 JS ln 2 = -(sum_v [p relu(x) + q relu(-x)] + sum_v (p + q) g)``. This form is exactly 0 for equal inputs
    (``expm1``/``log1p`` are exact at 0: no square root of rounding noise), has no ``log m`` to underflow, and
    gives ``log 2`` per unit of mass that the other distribution lacks. Infinite ``x`` (one side ``-inf``) is
    replaced by a large finite value so that ``0 * inf`` never appears.
    """
    _check_pair(logp_p, logp_q)
    logp_p, logp_q = _as_float(logp_p), _as_float(logp_q)
    return js_bits(logp_p, logp_p.exp(), logp_q, logp_q.exp())


def js_bits(logp_p: torch.Tensor, p: torch.Tensor, logp_q: torch.Tensor, q: torch.Tensor, out=None) -> torch.Tensor:
    """:func:`js_divergence` from float log-probs AND their probabilities (a caller that has both skips two exps).

    ``p relu(x) + q relu(-x) = min(p, q) |x|`` (the smaller side is the one whose log-prob is lower), so
    ``2 JS ln 2 = -sum_v [min(p, q) |x| + (p + q) g]``: one pass fewer per term than the relu form. ``out``: three
    work tensors of the broadcast shape (overwritten), so that a caller that runs many chunks allocates nothing per
    chunk (fresh pages cost more than the arithmetic). Returns ``(...)``.
    """
    shape, dtype = torch.broadcast_shapes(logp_p.shape, logp_q.shape), torch.promote_types(p.dtype, q.dtype)
    x, g, m = out if out is not None else (torch.empty(shape, dtype=dtype, device=p.device) for _ in range(3))
    torch.sub(logp_q, logp_p, out=x).nan_to_num_(nan=0.0, posinf=_BIG, neginf=-_BIG).abs_()  # |x|
    torch.neg(x, out=g).expm1_().mul_(0.5).log1p_()  # g: exactly 0 where x = 0
    js = torch.minimum(p, q, out=m).mul_(x).sum(-1)  # (...)
    js += torch.add(p, q, out=m).mul_(g).sum(-1)
    return js.div_(-2 * LN2).clamp_(0.0, 1.0)


def js_distance(logp_p: torch.Tensor, logp_q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon distance, base 2, in ``[0, 1]``: ``sqrt(JS divergence in bits)``.

    Args:
        logp_p, logp_q: log-probabilities ``(..., V)`` (broadcastable leading dims), ``-inf`` allowed.
    Returns:
        ``(...)``: 0 for equal distributions, 1 for disjoint supports; symmetric.
    """
    return js_divergence(logp_p, logp_q).sqrt()  # clamped at 0 first: no sqrt of -1e-8


def kl(logp_p: torch.Tensor, logp_q: torch.Tensor) -> torch.Tensor:
    """``KL(p || q)`` in nats.  (..., V), (..., V) -> (...); ``inf`` where ``q = 0 < p``."""
    _check_pair(logp_p, logp_q)
    return _kl_sum(_as_float(logp_p), _as_float(logp_q)).clamp_min(0.0)


def tvd(logp_p: torch.Tensor, logp_q: torch.Tensor) -> torch.Tensor:
    """Total variation distance ``sum_v |p_v - q_v| / 2``, in ``[0, 1]``.  (..., V), (..., V) -> (...)"""
    _check_pair(logp_p, logp_q)
    p, q = _as_float(logp_p).exp(), _as_float(logp_q).exp()
    return (0.5 * (p - q).abs().sum(-1)).clamp(0.0, 1.0)


METRIC_FUNCTIONS: dict[str, Metric] = dict(zip(names.METRICS, (js_distance, kl, tvd), strict=True))
"""Metric name (:data:`mrtpo_viz.names.METRICS`) -> function of two log-prob tensors."""


def get_metric(metric: str | Metric) -> Metric:
    """A metric by registry name (or a callable, returned as is)."""
    if callable(metric):
        return metric
    return METRIC_FUNCTIONS[names.check_choice("metric", metric, names.METRICS)]


def _rows_per_chunk(vocab: int, chunk_size: int | None) -> int:
    if chunk_size is None:
        return max(1, CHUNK_ELEMENTS // max(vocab, 1))
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    return chunk_size


def chunked_metric(
    logits_p: torch.Tensor, logits_q: torch.Tensor, metric: str | Metric = "js", chunk_size: int | None = None
) -> torch.Tensor:
    """A metric between ``softmax(logits_p)`` and ``softmax(logits_q)`` at every position, chunk by chunk.

    Chunks run along the position axis (dim -2); leading dims broadcast, so one "without" branch ``(1, T, V)``
    can be compared with K "with" branches ``(K, T, V)`` without copying it K times. The log-softmax is taken in
    float32 per chunk, so memory holds about ``chunk_size`` rows of ``V`` floats per temporary, not ``B * T * V``.

    Args:
        logits_p, logits_q: ``(..., T, V)`` or positions-flattened ``(T, V)``; leading dims broadcast.
        metric: a name in ``names.METRICS`` or a function of two log-prob tensors.
        chunk_size: rows of ``V`` per chunk, counted over the broadcast leading dims (default: 32 MiB worth).
    Returns:
        ``(..., T)`` float32 (float64 for float64 input).
    """
    fn = get_metric(metric)
    _check_pair(logits_p, logits_q)
    if logits_p.dim() < 2 or logits_q.dim() < 2:
        shapes = f"{tuple(logits_p.shape)}, {tuple(logits_q.shape)}"
        raise ValueError(f"logits need a position and a vocabulary dim, got {shapes}")
    shape = torch.broadcast_shapes(logits_p.shape, logits_q.shape)  # (..., T, V)
    *lead, T, V = shape
    positions = max(1, _rows_per_chunk(V, chunk_size) // max(math.prod(lead), 1))
    parts = []
    for s in range(0, T, positions):
        logp = torch.log_softmax(_as_float(logits_p[..., s : s + positions, :]), dim=-1)
        logq = torch.log_softmax(_as_float(logits_q[..., s : s + positions, :]), dim=-1)
        parts.append(fn(logp, logq))  # (..., chunk)
        del logp, logq
    if not parts:
        dtype = torch.float64 if torch.float64 in (logits_p.dtype, logits_q.dtype) else torch.float32
        return torch.zeros(*lead, 0, dtype=dtype, device=logits_p.device)
    return torch.cat(parts, dim=-1)  # (..., T)


def entropy(logits: torch.Tensor, chunk_size: int | None = None) -> torch.Tensor:
    """Entropy (nats) of ``softmax(logits)`` at every position, chunked like :func:`chunked_metric`.

    Args:
        logits: ``(..., V)``.
    Returns:
        ``(...)`` float32 (float64 for float64 input), ``>= 0``.
    """
    V = logits.shape[-1]
    flat = logits.reshape(-1, V)  # (R, V)
    rows = _rows_per_chunk(V, chunk_size)
    parts = []
    for s in range(0, flat.shape[0], rows):
        logp = torch.log_softmax(_as_float(flat[s : s + rows]), dim=-1)
        parts.append(_kl_sum(logp, torch.zeros_like(logp)).neg().clamp_min(0.0))  # -sum p log p
    out = torch.cat(parts) if parts else torch.zeros(0, dtype=_as_float(flat).dtype)
    return out.reshape(logits.shape[:-1])


@dataclass(frozen=True)
class TokenStats:
    """Per-position statistics of one next-token distribution (shapes for logits ``(..., T, V)``)."""

    logprob: torch.Tensor
    """``(..., T)`` log-probability (nats) of the given token at each position."""
    entropy: torch.Tensor
    """``(..., T)`` entropy of the distribution, nats."""
    top_ids: torch.Tensor
    """``(..., T, k)`` the k most likely token ids, most likely first."""
    top_probs: torch.Tensor
    """``(..., T, k)`` their probabilities."""


def _chunk_stats(logits: torch.Tensor, ids: torch.Tensor, k: int) -> tuple[torch.Tensor, ...]:
    """Stats of rows ``(R, V)`` with token ids ``(R,)``: logprob, entropy, top ids, top probs."""
    logp = torch.log_softmax(_as_float(logits), dim=-1)  # (R, V)
    logprob = logp.gather(-1, ids[:, None]).squeeze(-1)  # (R,)
    entropy = _kl_sum(logp, torch.zeros_like(logp)).neg().clamp_min(0.0)  # -sum p log p
    top_logp, top_ids = logp.topk(k, dim=-1)  # (R, k)
    return logprob, entropy, top_ids, top_logp.exp()


def token_stats(
    logits: torch.Tensor, token_ids: torch.Tensor, topk: int = 5, chunk_size: int | None = None
) -> TokenStats:
    """Log-prob of given tokens, entropy and top-k of ``softmax(logits)``, chunked over positions.

    Args:
        logits: ``(..., T, V)``; token_ids: ``(..., T)`` integer ids in ``[0, V)``.
        topk: how many top tokens to keep (capped at ``V``).
        chunk_size: rows per chunk (default: 32 MiB worth of float32).
    """
    if token_ids.shape != logits.shape[:-1]:
        raise ValueError(f"token_ids {tuple(token_ids.shape)} must be logits {tuple(logits.shape)} minus its last dim")
    V = logits.shape[-1]
    if token_ids.numel() and (int(token_ids.min()) < 0 or int(token_ids.max()) >= V):
        raise ValueError(f"token ids must lie in [0, {V})")
    k = min(topk, V)
    flat, ids = logits.reshape(-1, V), token_ids.reshape(-1).long()  # (R, V), (R,)
    rows = _rows_per_chunk(V, chunk_size)
    parts = [_chunk_stats(flat[s : s + rows], ids[s : s + rows], k) for s in range(0, flat.shape[0], rows)]
    lead = tuple(token_ids.shape)
    if not parts:
        empty = torch.zeros(0)
        return TokenStats(
            empty.reshape(lead), empty.reshape(lead), empty.long().reshape(*lead, k), empty.reshape(*lead, k)
        )
    logprob, entropy, top_ids, top_probs = (torch.cat(xs) for xs in zip(*parts))
    return TokenStats(
        logprob.reshape(lead), entropy.reshape(lead), top_ids.reshape(*lead, k), top_probs.reshape(*lead, k)
    )


def _union_topk(logits_p: torch.Tensor, logits_q: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Ids of the union of both top-k sets ``(..., 2k)`` (sorted) and a mask ``(..., 2k)`` that drops repeats."""
    ids = torch.cat([logits_p.topk(k, dim=-1).indices, logits_q.topk(k, dim=-1).indices], dim=-1)
    ids = ids.sort(dim=-1).values  # (..., 2k)
    first = torch.ones_like(ids, dtype=torch.bool)
    first[..., 1:] = ids[..., 1:] != ids[..., :-1]
    return ids, first


def _lumped_logp(logits: torch.Tensor, ids: torch.Tensor, first: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs of the union tokens plus one tail bucket ``(..., 2k + 1)``, and the tail mass ``(...)``."""
    logits = _as_float(logits)
    logp = logits.gather(-1, ids) - logits.logsumexp(-1, keepdim=True)  # (..., 2k)
    logp = logp.masked_fill(~first, -math.inf)
    tail = (1.0 - logp.exp().sum(-1)).clamp(0.0, 1.0)  # (...)
    return torch.cat([logp, tail.log()[..., None]], dim=-1), tail


def js_topk(logits_p: torch.Tensor, logits_q: torch.Tensor, k: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """Fast lower bound on the JS distance for large vocabularies.

    Keeps the union of both distributions' top-``k`` tokens and lumps all other tokens into one bucket. Lumping
    (a coarser partition) can only lower a divergence, so the result is ``<= js_distance``, and equal when
    ``k >= V``. The missing part is bounded: exact JS divergence ``<= js**2 + tail_mass``, since each tail token
    adds at most ``(p_v + q_v) / 2`` bits.

    Args:
        logits_p, logits_q: ``(..., V)`` logits (not log-probs), same shape.
        k: tokens kept from each distribution (capped at ``V``).
    Returns:
        ``(js, tail_mass)``, both ``(...)``: the lumped JS distance and ``(tail_p + tail_q) / 2``, the mean mass
        outside the kept tokens (computed as 1 minus the kept mass: absolute accuracy ~1e-6 in float32).
    """
    if logits_p.shape != logits_q.shape:
        raise ValueError(f"js_topk needs equal shapes, got {tuple(logits_p.shape)} and {tuple(logits_q.shape)}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    ids, first = _union_topk(logits_p, logits_q, min(k, logits_p.shape[-1]))
    logp, tail_p = _lumped_logp(logits_p, ids, first)
    logq, tail_q = _lumped_logp(logits_q, ids, first)
    return js_distance(logp, logq), (tail_p + tail_q) / 2
