"""Display text of response tokens and of top predictions (no model: the tokenizer only)."""

from __future__ import annotations

import threading
import weakref

import torch

_VOCAB_TEXT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""tokenizer -> {token id: its text decoded alone}, filled as ids are seen (or all at once by :func:`warm_vocab`)."""
_VOCAB_LOCK = threading.Lock()


def _decode_prefixes(tokenizer, ids: list[int]) -> list[str]:
    """``decode(ids[:t + 1])`` for every t (one call to the fast backend where there is one)."""
    prefixes = [ids[: t + 1] for t in range(len(ids))]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return backend.decode_batch(prefixes, skip_special_tokens=False)
    return [tokenizer.decode(p) for p in prefixes]


def _stream_pieces(tokenizer, ids: list[int]) -> list[str] | None:
    """Each token's new text from the fast backend's incremental decoder (linear in T; the prefixes are quadratic),
    or None where there is no such decoder or its pieces do not join to the whole decoded text."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    try:
        from tokenizers.decoders import DecodeStream
    except ImportError:
        return None
    if backend is None:
        return None
    stream = DecodeStream(skip_special_tokens=False)
    try:
        pieces = [stream.step(backend, i) or "" for i in ids]
    except Exception:  # noqa: BLE001 -- any refusal of the incremental decoder means: use the prefixes
        return None
    whole = backend.decode(ids, skip_special_tokens=False)
    return pieces if "".join(pieces) == whole and not whole.endswith("\ufffd") else None


def display_tokens(tokenizer, ids: list[int]) -> tuple[list[str], list[tuple[int, int]], str]:
    """Display text per token that joins back to the decoded response, their character offsets, and that text.

    A token that ends inside a multi-byte character shows as ``""``; the token that completes it shows it.
    """
    pieces = _stream_pieces(tokenizer, ids)
    if pieces is None:
        pieces, text = [], ""
        for now in _decode_prefixes(tokenizer, ids):
            piece = "" if now.endswith("\ufffd") or not now.startswith(text) else now[len(text) :]
            pieces.append(piece)
            text += piece
    offsets, end = [], 0
    for piece in pieces:
        offsets.append((end, end + len(piece)))
        end += len(piece)
    return pieces, offsets, "".join(pieces)


def _vocab_text(tokenizer) -> dict[int, str]:
    with _VOCAB_LOCK:
        try:
            return _VOCAB_TEXT.setdefault(tokenizer, {})
        except TypeError:  # a tokenizer that takes no weak reference: no cache
            return {}


def _decode_each(tokenizer, ids: list[int]) -> dict[int, str]:
    """Text of each distinct single token (through the fast backend in one call where there is one), kept per
    tokenizer: a replay's top predictions repeat the same few thousand tokens."""
    known = _vocab_text(tokenizer)
    new = sorted(set(ids) - known.keys())
    if new:
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None:
            texts = backend.decode_batch([[i] for i in new], skip_special_tokens=False)
        else:
            texts = [tokenizer.decode([i]) for i in new]
        known.update(zip(new, texts))
    return known


def warm_vocab(tokenizer) -> int:
    """Decode every token of the vocabulary once (the app does it at load, so that no replay pays for it); returns
    how many tokens are known."""
    return len(_decode_each(tokenizer, list(range(len(tokenizer)))))


def decode_top(tokenizer, top_ids: torch.Tensor, top_probs: torch.Tensor) -> list[list[list[tuple[str, float]]]]:
    """(B, T, k) ids and probs -> B x T lists of (token text, prob rounded to 6 decimals), most likely first."""
    text = _decode_each(tokenizer, top_ids.reshape(-1).tolist())
    # rounded as a tensor: Python's round() per entry was most of this function's time; k / 1e6 in float64 is the
    # float that round(p, 6) returns
    probs = (top_probs.double() * 1e6).round_().div_(1e6).tolist()
    return [
        [[(text[i], p) for i, p in zip(ids, ps)] for ids, ps in zip(row_ids, row_probs)]
        for row_ids, row_probs in zip(top_ids.tolist(), probs)
    ]
