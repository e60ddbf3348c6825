"""Display text of response tokens and of top predictions (no model: the tokenizer only)."""

from __future__ import annotations

import torch


def _decode_prefixes(tokenizer, ids: list[int]) -> list[str]:
    """``decode(ids[:t + 1])`` for every t (one call to the fast backend where there is one)."""
    prefixes = [ids[: t + 1] for t in range(len(ids))]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return backend.decode_batch(prefixes, skip_special_tokens=False)
    return [tokenizer.decode(p) for p in prefixes]


def display_tokens(tokenizer, ids: list[int]) -> tuple[list[str], list[tuple[int, int]], str]:
    """Display text per token that joins back to the decoded response, their character offsets, and that text.

    A token that ends inside a multi-byte character shows as ``""``; the token that completes it shows it.
    """
    tokens, offsets, text = [], [], ""
    for now in _decode_prefixes(tokenizer, ids):
        piece = "" if now.endswith("\ufffd") or not now.startswith(text) else now[len(text) :]
        tokens.append(piece)
        offsets.append((len(text), len(text) + len(piece)))
        text += piece
    return tokens, offsets, text


def _decode_each(tokenizer, ids: list[int]) -> dict[int, str]:
    """Text of each distinct single token (through the fast backend in one call where there is one)."""
    uniq = sorted(set(ids))
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return dict(zip(uniq, backend.decode_batch([[i] for i in uniq], skip_special_tokens=False)))
    return {i: tokenizer.decode([i]) for i in uniq}


def decode_top(tokenizer, top_ids: torch.Tensor, top_probs: torch.Tensor) -> list[list[list[tuple[str, float]]]]:
    """(B, T, k) ids and probs -> B x T lists of (token text, prob), most likely first."""
    text = _decode_each(tokenizer, top_ids.reshape(-1).tolist())
    return [
        [[(text[i], round(p, 6)) for i, p in zip(ids, probs)] for ids, probs in zip(row_ids, row_probs)]
        for row_ids, row_probs in zip(top_ids.tolist(), top_probs.tolist())
    ]
