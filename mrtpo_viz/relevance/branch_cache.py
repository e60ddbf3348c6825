"""Replayed branches kept for the next replay: the app's edit-and-replay loop reruns only what changed.

A branch's logits depend only on the model's weights and the branch's token ids (prompt with or without one verifier's
information, then the response). Debugging a verifier's information means editing one box and replaying: the branch
without information and every other verifier's branch are the same as a moment ago. With the cache on,
:mod:`.progressive` takes those from here and runs only the branches it has not seen (over a fresh prefix pass), so an
edit of one of three verifiers' information costs the prefix and one branch instead of four branches.

The key is the model (its object and storage), the weights' version (the sum of the parameters' in-place version
counters: an optimizer step or ``load_state_dict`` changes it, so a trained policy never reads its earlier logits) and a
sample of their values, their dtype and device, and the branch's full ids. Entries are ``(1, T, V)`` logits, held up to
a byte budget, least recently used first out. A hit returns the logits computed earlier, in another batch: equal to a
fresh forward up to float rounding (~1e-7 in float32), as the replay's own batching is.

Off unless :func:`enable` is called (the app does, with ``MRTPO_REPLAY_CACHE_MB``): a script that replays many different
responses would only hold memory for nothing.
"""

from __future__ import annotations

import collections
import threading
from typing import Optional

import torch

DEFAULT_MB = 256
"""The app's budget: SmolLM2-135M's branch of a 128-token response is 25 MB (49,152-entry vocabulary, float32), so
this keeps about two replays of four branches; the bundled policy's is 1 MB."""


SAMPLE = 4
"""Leading entries of each parameter that :func:`weights_key` sums: an update that bypasses the version counters
(a write through ``.data``), or a new model at a freed one's address, still changes the key."""


@torch.no_grad()
def weights_key(model) -> tuple:
    """What identifies the model's current weights: the object, its first parameter's storage, dtype and device,
    the sum of every parameter's version counter (each in-place change adds to it), and the float64 sum of the
    first :data:`SAMPLE` entries of every parameter (~1 ms for SmolLM2-135M)."""
    params = list(model.parameters())
    first = params[0]
    version = sum(p._version for p in params)
    sample = torch.cat([p.reshape(-1)[:SAMPLE] for p in params]).double().sum().item()
    return (id(model), first.data_ptr(), str(first.dtype), str(first.device), version, sample)


class BranchCache:
    """Branch logits by (weights, full ids), up to ``max_bytes``; safe across threads."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self.bytes = 0
        self.hits = self.misses = 0
        self._items: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, weights: tuple, ids: list[int]) -> Optional[torch.Tensor]:
        key = (weights, tuple(ids))
        with self._lock:
            got = self._items.get(key)
            if got is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return got

    def holds(self, weights: tuple, ids: list[int]) -> bool:
        """Whether :meth:`get` would return the branch (counts neither a hit nor a miss, keeps the order)."""
        with self._lock:
            return (weights, tuple(ids)) in self._items

    def put(self, weights: tuple, ids: list[int], logits: torch.Tensor) -> None:
        """Keep ``logits`` (1, T, V); a view into a larger batch is copied, so that the entry holds only its own
        memory (and the budget counts what is held)."""
        if logits.untyped_storage().nbytes() > logits.nbytes:
            logits = logits.clone()
        size = logits.nbytes
        if size > self.max_bytes:
            return
        key = (weights, tuple(ids))
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old.nbytes
            self._items[key] = logits
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, out = self._items.popitem(last=False)
                self.bytes -= out.nbytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0

    def __len__(self) -> int:
        return len(self._items)


_ACTIVE: list[Optional[BranchCache]] = [None]


def enable(max_mb: float = DEFAULT_MB) -> Optional[BranchCache]:
    """Switch the cache on with a budget of ``max_mb`` MiB (0: off); returns it (None when off)."""
    _ACTIVE[0] = BranchCache(int(max_mb * 2**20)) if max_mb > 0 else None
    return _ACTIVE[0]


def active() -> Optional[BranchCache]:
    """The cache in use, or None (off: the default)."""
    return _ACTIVE[0]
