"""What a replay reads from its logits, in one chunked pass: :func:`replay_columns`.

A replay's ``(B, T, V)`` logits (rows ``[without, with_1..K]``) give the metric of every with-row against the
without-row and, per row and position, the log-prob of the response token, the top-k tokens, and the entropy of the
without-row. Computed separately (:func:`mrtpo_viz.divergence.chunked_metric` and
:func:`~mrtpo_viz.divergence.token_stats`) these take the float32 log-softmax twice, exponentiate it twice more, and
allocate fresh temporaries per chunk; here each chunk of positions takes one softmax (one exp per logit gives both
the probabilities and the log-probs), reuses work buffers sized once per call, and finds the top-k through block
maxima. Same numbers up to float rounding; on SmolLM2-135M's vocabulary (49,152 entries) 1.4x less time than the two
functions today (benchmarks/results/replay_columns.md; against the code before them, ~3x in the profile that
docs/performance.md describes).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from ..divergence import _as_float, _rows_per_chunk, get_metric, js_bits, js_distance

TOPK_BLOCK = 64
"""Vocabulary entries per block when finding the top-k: a max per block is one cheap vectorized pass, and the k
largest entries lie in the k blocks with the largest maxima (torch's ``topk`` over 49,152 entries took 5x as long)."""
TOPK_BLOCKS_FROM = 8192
"""Vocabularies from this size take the block maxima; smaller ones torch's ``topk`` (as fast there: measured on a
2,000-entry vocabulary)."""


@dataclass(frozen=True)
class ReplayColumns:
    """The columns of one replay, from logits rows ``[reference, compared_1..K]`` (B = K + 1)."""

    metrics: dict[str, torch.Tensor]
    """Metric name -> ``(K, T)``: ``metric(row k + 1, row 0)`` at every position."""
    logprob: torch.Tensor
    """``(B, T)`` log-probability of the given token in every row."""
    entropy: torch.Tensor
    """``(T,)`` entropy (nats) of row 0 (the only row a replay shows it for)."""
    top_ids: torch.Tensor
    """``(B, T, k)`` the k most likely token ids per row, most likely first."""
    top_probs: torch.Tensor
    """``(B, T, k)`` their probabilities."""


def topk_last(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``x.topk(k, dim=-1)`` (values, indices; largest first) of a ``(R, V)`` tensor through block maxima.

    Ties between equal values may pick another of the tied indices than ``torch.topk`` (which promises no order
    among ties either)."""
    R, V = x.shape
    nb = V // TOPK_BLOCK
    if V < TOPK_BLOCKS_FROM or nb <= 4 * k:
        return x.topk(k, dim=-1)
    main = x[:, : nb * TOPK_BLOCK].unflatten(-1, (nb, TOPK_BLOCK))  # (R, nb, block)
    blocks = main.amax(-1).topk(k, dim=-1).indices  # (R, k)
    cand = main.gather(1, blocks[..., None].expand(R, k, TOPK_BLOCK)).flatten(1)  # (R, k * block)
    ids = (blocks[..., None] * TOPK_BLOCK + torch.arange(TOPK_BLOCK, device=x.device)).flatten(1)  # (R, k * block)
    if V > nb * TOPK_BLOCK:  # the tail that fills no block: its entries are candidates as they are
        cand = torch.cat([cand, x[:, nb * TOPK_BLOCK :]], dim=1)
        ids = torch.cat([ids, torch.arange(nb * TOPK_BLOCK, V, device=x.device).expand(R, -1)], dim=1)
    values, where = cand.topk(k, dim=-1)
    return values, ids.gather(1, where)


def replay_columns(
    without: torch.Tensor,
    with_k: torch.Tensor,
    token_ids: torch.Tensor,
    metrics: tuple[str, ...] = ("js",),
    topk: int = 5,
    chunk_size: int | None = None,
) -> ReplayColumns:
    """Every metric of the K rows of ``with_k`` against ``without``, and each row's token log-prob and top-k (rows
    ``[without, with_1..K]``), the entropy of ``without``.

    Args:
        without: ``(1, T, V)`` logits of the reference (a replay's branch without information).
        with_k: ``(K, T, V)`` logits of the rows compared with it (the two come from separate forwards: no copy
            into one tensor).
        token_ids: ``(T,)`` the token at each position (the same in every row), ids in ``[0, V)``.
        metrics: names in ``names.METRICS`` (``js`` has its own pass here; the others go through their function).
        topk: top tokens kept per position (capped at ``V``).
        chunk_size: rows of ``V`` per chunk, counted over the B rows (default:
            :data:`mrtpo_viz.divergence.CHUNK_ELEMENTS` worth).
    Returns:
        :class:`ReplayColumns`, equal to ``chunked_metric(with_k, without, m)`` and ``token_stats`` of each row up to
        float rounding.
    """
    (_, T, V), K = without.shape, with_k.shape[0]
    B = K + 1
    if with_k.shape[1:] != (T, V) or without.shape[0] != 1:
        raise ValueError(f"logits (1, T, V) and (K, T, V) needed, got {tuple(without.shape)}, {tuple(with_k.shape)}")
    if token_ids.shape != (T,):
        raise ValueError(f"token_ids {tuple(token_ids.shape)} must be ({T},) for logits {tuple(without.shape)}")
    if T and (int(token_ids.min()) < 0 or int(token_ids.max()) >= V):
        raise ValueError(f"token ids must lie in [0, {V})")
    fns = {m: get_metric(m) for m in metrics}
    k, ids = min(topk, V), token_ids.long()
    c = max(1, min(T, _rows_per_chunk(V, chunk_size) // B))  # positions per chunk
    double = torch.float64 in (without.dtype, with_k.dtype)
    new = functools.partial(torch.empty, dtype=torch.float64 if double else torch.float32, device=without.device)
    work = new(5, B, c, V)  # allocated once: no fresh pages per chunk
    out = {m: new(B - 1, T) for m in fns}
    logprob, entropy, top_probs = new(B, T), new(T), new(B, T, k)
    top_ids = torch.empty(B, T, k, dtype=torch.long, device=without.device)
    for s in range(0, T, c):
        n = min(c, T - s)
        logp, p, x, g, m = (w[:, :n] for w in work)  # (B, n, V) each
        _softmax_(_as_float(without[:, s : s + n]), logp[:1], p[:1])
        _softmax_(_as_float(with_k[:, s : s + n]), logp[1:], p[1:])
        for name, fn in fns.items():
            if fn is js_distance:
                js = js_bits(logp[1:], p[1:], logp[:1], p[:1], out=(x[1:], g[1:], m[1:]))  # (K, n)
                out[name][:, s : s + n] = js.sqrt_()
            else:
                out[name][:, s : s + n] = fn(logp[1:], logp[:1])
        logprob[:, s : s + n] = logp.gather(-1, ids[s : s + n].expand(B, n)[..., None]).squeeze(-1)
        h = torch.mul(p[0], logp[0], out=x[0]).nan_to_num_(nan=0.0).sum(-1)  # 0 * -inf -> 0
        entropy[s : s + n] = h.neg_().clamp_min_(0.0)
        top_logp, top_id = topk_last(logp.reshape(B * n, V), k)  # (B n, k)
        top_ids[:, s : s + n], top_probs[:, s : s + n] = top_id.view(B, n, k), top_logp.exp().view(B, n, k)
    return ReplayColumns(out, logprob, entropy, top_ids, top_probs)


def _softmax_(logits: torch.Tensor, logp: torch.Tensor, p: torch.Tensor) -> None:
    """Write ``log_softmax(logits)`` into ``logp`` and ``softmax(logits)`` into ``p`` (float), with one exp."""
    torch.sub(logits, logits.amax(-1, keepdim=True), out=logp)  # shifted: the largest entry is 0
    torch.exp(logp, out=p)
    total = p.sum(-1, keepdim=True)
    p.div_(total)
    logp.sub_(total.log_())


def stack_columns(parts: list[ReplayColumns]) -> ReplayColumns:
    """One replay's columns from per-row ones: ``parts[k]`` are :func:`replay_columns` of the same reference row
    against row k + 1 alone (K = 1 each), as a progressive replay computes them row by row. The reference row's
    columns (its log-prob, top-k, entropy) come from ``parts[0]``: every part computed the same ones."""
    if not parts:
        raise ValueError("give the columns of at least one row")
    first = parts[0]

    def rows(get) -> torch.Tensor:
        return torch.cat([get(first)[:1]] + [get(p)[1:] for p in parts])

    return ReplayColumns(
        {m: torch.cat([p.metrics[m] for p in parts]) for m in first.metrics},
        rows(lambda c: c.logprob),
        first.entropy,
        rows(lambda c: c.top_ids),
        rows(lambda c: c.top_probs),
    )
