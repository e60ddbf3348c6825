"""The one owner of padding: which id fills padded positions, and right-padding a batch of id rows.

Sampling, the replay, the group replay of training and the training forward all pad with :func:`pad_id` and
:func:`right_pad`, so a padded position means the same everywhere (its value never matters: every padded position is
masked out of attention and out of the loss, but one rule keeps the ids reproducible).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def pad_id(tokenizer) -> int:
    """The tokenizer's pad id, else its end-of-sequence id, else 0."""
    return next(i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0) if i is not None)


def right_pad(rows: Sequence[Sequence[int]], pad: int, length: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids ``(R, L)`` and their 0/1 mask ``(R, L)``; ``L`` is the longest row unless ``length`` is given
    (rows longer than ``length`` are cut)."""
    L = max((len(r) for r in rows), default=0) if length is None else length
    ids = torch.full((len(rows), L), pad, dtype=torch.long)  # (R, L)
    mask = torch.zeros((len(rows), L), dtype=torch.long)  # (R, L)
    for j, row in enumerate(rows):
        n = min(len(row), L)
        if n:
            ids[j, :n] = torch.as_tensor(list(row[:n]), dtype=torch.long)
            mask[j, :n] = 1
    return ids, mask
