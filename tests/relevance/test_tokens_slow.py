"""Display tokens and top predictions from a tokenizer without the fast backend (a slow, pure-Python tokenizer or
a wrapper that takes no weak reference): the same texts as through the backend, by the per-prefix fallback, and
nothing cached against an object that cannot be a weak key."""

import torch

from mrtpo_viz.relevance.tokens import decode_top, display_tokens


class Slow:
    """Decodes through a real tokenizer but has no ``backend_tokenizer`` and, through ``__slots__`` without
    ``__weakref__``, takes no weak reference (so the vocabulary cache cannot key on it)."""

    __slots__ = ("_inner",)

    def __init__(self, inner):
        self._inner = inner

    def decode(self, ids, **kw):
        return self._inner.decode(ids, **kw)

    def __len__(self):
        return len(self._inner)


def test_display_tokens_without_the_backend_equal_the_fast_path(tiny_policy):
    tok = tiny_policy.tokenizer
    ids = tok.encode("Hello, wörld! 12 + 30 = 42.", add_special_tokens=False)
    fast = display_tokens(tok, ids)
    slow = display_tokens(Slow(tok), ids)
    assert slow == fast
    assert slow[2] == "Hello, wörld! 12 + 30 = 42."
    assert "".join(slow[0]) == slow[2] and slow[1][-1][1] == len(slow[2])


def test_decode_top_without_the_backend_and_without_a_cache(tiny_policy):
    tok = tiny_policy.tokenizer
    ids = tok.encode("abc xyz", add_special_tokens=False)[:3]
    top_ids = torch.tensor([[ids]])  # (1 row, 1 position, k)
    top_probs = torch.tensor([[[0.5, 0.3, 0.2]]])
    want = decode_top(tok, top_ids, top_probs)
    got = decode_top(Slow(tok), top_ids, top_probs)
    assert got == want
    assert [p for _, p in got[0][0]] == [0.5, 0.3, 0.2]
    assert [t for t, _ in got[0][0]] == [tok.decode([i]) for i in ids]
