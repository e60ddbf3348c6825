"""The batched teacher-forced pass behind :func:`mrtpo_viz.relevance.engine.replay`: token ids and logits of B branches.

A replay compares B contexts (no information, one per verifier, control branches) that all end with the SAME
response ids. Their rendered chat texts share a prefix (system prompt, most of the user message), so:

1. ids are built from separately tokenized pieces: the shared text prefix, each branch's rest of the prompt, and
   the response ids (tokenized once, special tokens' text split as plain text), so the response ids are identical
   in every branch;
2. the prefix runs once, its KV cache is expanded (views, no copy) to the B branches, and the B suffixes (rest of
   prompt + response, right-padded) run in one forward with an attention mask over cache + suffix and explicit
   position ids;
3. only the positions that predict response tokens reach the LM head (``logits_to_keep``): the logits that predict
   response token ``t`` sit at the position just before it, suffix index ``S_b - 1 + t``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from collections.abc import Iterator, Sequence

import torch

from ..serving import turns
from ..policy.kvcache import cropped_cache, expand_cache, forward
from ..guards import unpaired_surrogate
from ..policy.specials import encode
from ..policy.padding import right_pad


@dataclass(frozen=True)
class Branches:
    """Token ids of B replay branches: ``prefix_ids + suffix_ids[b] + response_ids``."""

    prefix_ids: list[int]
    """The shared prompt prefix, run once."""
    suffix_ids: list[list[int]]
    """Per branch, the rest of its prompt (never empty)."""
    response_ids: list[int]
    """The response, identical in every branch."""

    @property
    def B(self) -> int:
        return len(self.suffix_ids)

    def full_ids(self, b: int) -> list[int]:
        """Branch ``b`` as one sequence (for checks and the no-cache reference)."""
        return self.prefix_ids + self.suffix_ids[b] + self.response_ids


def tokenize_response(tokenizer, response: str) -> list[int]:
    """Response ids, tokenized on their own; text like ``"<|im_end|>"`` is tokenized as text, not as a special."""
    bad = unpaired_surrogate(response)
    if bad >= 0:
        raise ValueError(
            f"the response holds an unpaired surrogate (\\u{ord(response[bad]):04x} at character "
            f"{bad}), which is not valid Unicode: remove it"
        )
    return tokenizer(response, add_special_tokens=False, split_special_tokens=True)["input_ids"]


def _encode(tokenizer, text: str) -> list[int]:
    """Ids of a piece of a rendered prompt: typed specials (marked by :mod:`mrtpo_viz.policy.specials`) as text."""
    return encode(tokenizer, text) if text else []


def _cut_candidates(common: str, limit: int, specials: Sequence[str]) -> list[int]:
    """Safe places to split a text for separate tokenization, up to ``limit``.

    The start of a special token is always safe. So is a single space between two non-space characters for
    byte-level BPE (its pre-tokenizer starts a new word there); other tokenizers are checked by the caller.
    """
    cuts = [0]
    for sp in specials:
        start = common.find(sp)
        while 0 <= start <= limit:
            cuts.append(start)
            start = common.find(sp, start + 1)
    for i in range(1, min(limit, len(common) - 1) + 1):
        if common[i] == " " and not common[i - 1].isspace() and not common[i + 1].isspace():
            cuts.append(i)
    return sorted(set(cuts))


def split_branches(tokenizer, texts: Sequence[str], response_ids: list[int]) -> Branches:
    """Ids of B branches from their rendered prompt texts and the response ids.

    The shared prefix is the longest common text prefix of ``texts`` cut at a safe boundary, leaving at least one
    character of prompt in every branch (the logit that predicts the first response token comes from it). A cut
    is kept only if tokenizing prefix and rest separately gives the same ids as tokenizing the first text whole;
    otherwise the next earlier candidate is tried (special-token boundaries always pass).
    """
    common = os.path.commonprefix(list(texts))
    limit = min(len(common), min(len(t) for t in texts) - 1)
    whole = _encode(tokenizer, texts[0])
    cut, prefix_ids, first = 0, [], whole
    for c in reversed(_cut_candidates(common, limit, tokenizer.all_special_tokens)):
        head, rest = _encode(tokenizer, texts[0][:c]), _encode(tokenizer, texts[0][c:])
        if head + rest == whole:
            cut, prefix_ids, first = c, head, rest  # texts[0][:c] is the common prefix: its ids are kept
            break
    suffixes = [first] + [_encode(tokenizer, t[cut:]) for t in texts[1:]]
    if any(not s for s in suffixes):
        raise ValueError("a replay branch has an empty prompt: nothing predicts the first response token")
    return Branches(prefix_ids, suffixes, list(response_ids))


def shared_branches(prompts: Sequence[list[int]], response_ids: list[int]) -> Branches:
    """Branches from each branch's whole prompt ids (already cut and joined by :func:`split_branches`): the longest
    common id prefix runs once, and each suffix keeps at least one id (the one predicting response token 0)."""
    n = min(len(p) for p in prompts) - 1
    common = next((i for i in range(n) if len({p[i] for p in prompts}) > 1), n)
    return Branches(list(prompts[0][:common]), [list(p[common:]) for p in prompts], list(response_ids))


def _suffix_batch(br: Branches, pad_id: int, device) -> tuple[torch.Tensor, ...]:
    """Right-padded suffix ids (B, L), attention mask (B, P + L), position ids (B, L), kept positions (B, T)."""
    P, T = len(br.prefix_ids), len(br.response_ids)
    ids, row_mask = right_pad([s + br.response_ids for s in br.suffix_ids], pad_id)  # (B, L)
    L = ids.shape[1]
    mask = torch.cat([torch.ones((br.B, P), dtype=torch.long), row_mask], dim=1)  # (B, P + L): cache + suffix
    positions = (P + torch.arange(L)).expand(br.B, L)  # (B, L)
    starts = torch.tensor([len(s) - 1 for s in br.suffix_ids])  # (B,) position predicting response token 0
    keep = starts[:, None] + torch.arange(T)  # (B, T)
    return tuple(x.to(device) for x in (ids, mask, positions, keep))


@torch.no_grad()
def prefix_cache(model, prefix_ids: list[int], device):
    """Run the shared prefix once; returns its cache (None for an empty prefix). Never give it to a forward."""
    if not prefix_ids:
        return None
    _, cache = forward(model, torch.tensor([prefix_ids], device=device), logits_to_keep=1)
    return cache


@torch.no_grad()
def suffix_logits(model, br: Branches, cache, pad_id: int, device) -> torch.Tensor:
    """One batched forward of the B suffixes over the (expanded) prefix cache; in the app (turns on), a batch of
    more than ``turns.CHUNK_TOKENS`` positions runs in chunks of branches, so that other sessions get turns between
    them.

    Returns:
        (B, T, V) logits in the model dtype; ``[b, t]`` predicts response token ``t`` in branch ``b``.
    """
    ids, mask, positions, keep = _suffix_batch(br, pad_id, device)
    rows = br.B
    if turns.enabled():
        rows = max(1, turns.CHUNK_TOKENS // max(ids.shape[1] + len(br.prefix_ids), 1))
    parts = []
    for r in range(0, br.B, rows):
        n = min(rows, br.B - r)
        batch_cache = None if cache is None else expand_cache(cache, n)
        logits, _ = forward(
            model,
            ids[r : r + n],
            cache=batch_cache,
            attention_mask=mask[r : r + n],
            position_ids=positions[r : r + n],
            logits_to_keep=keep[r : r + n],
        )
        parts.append(logits)
    logits = parts[0] if len(parts) == 1 else torch.cat(parts)
    expected = (br.B, len(br.response_ids))
    if tuple(logits.shape[:2]) != expected:
        raise RuntimeError(
            f"{type(model).__name__} ignored logits_to_keep: got logits {tuple(logits.shape)}, "
            f"expected {expected} positions"
        )
    return logits


def branch_logits(model, br: Branches, pad_id: int, device) -> torch.Tensor:
    """Prefix once + suffixes in one batch: (B, T, V) logits predicting the response tokens (one model job)."""
    with turns.model_job():
        return suffix_logits(model, br, prefix_cache(model, br.prefix_ids, device), pad_id, device)


def first_pass(model, br: Branches, device) -> tuple[torch.Tensor, object]:
    """Row 0 whole: its (1, T, V) logits and the cache of the shared prefix for the other rows (None: no prefix)."""
    P, T = len(br.prefix_ids), len(br.response_ids)
    first = br.prefix_ids + br.suffix_ids[0] + br.response_ids
    keep = torch.arange(T, device=device) + (P + len(br.suffix_ids[0]) - 1)  # (T,): positions predicting the response
    logits0, cache = forward(model, torch.tensor([first], device=device), logits_to_keep=keep)  # (1, T, V)
    if tuple(logits0.shape[:2]) != (1, T):
        raise RuntimeError(f"{type(model).__name__} ignored logits_to_keep: got logits {tuple(logits0.shape)}")
    if not P:
        return logits0, None
    if all(int(layer.keys.shape[-2]) == len(first) for layer in cache.layers):
        return logits0, cropped_cache(cache, P)
    return logits0, prefix_cache(model, br.prefix_ids, device)  # a sliding-window layer dropped the prefix's keys


@torch.no_grad()
def split_logits(model, br: Branches, pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The logits of :func:`branch_logits` as ``(row 0 (1, T, V), rows 1.. (B - 1, T, V))``, with fewer positions.

    Row 0 (a replay's branch without information: the shortest prompt) runs whole in the prefix pass, whose cache,
    cropped to the shared prefix, then serves the other B - 1 suffixes in one batch. Padded to the longest suffix in
    the batch, row 0 wasted the length of an information block (~40 of ~160 positions for a 100-token response);
    run whole, it wastes none, and the forward count stays two. The same numbers up to float rounding (a position's
    logits do not depend on the batch, the cached keys do not depend on what follows them).
    """
    with turns.model_job():
        logits0, prefix = first_pass(model, br, device)
        rest = Branches(br.prefix_ids, br.suffix_ids[1:], br.response_ids)
        return logits0, suffix_logits(model, rest, prefix, pad_id, device)


@torch.no_grad()
def split_logits_each(model, br: Branches, pad_id: int, device, each: int | None = None) -> Iterator[torch.Tensor]:
    """The logits of :func:`split_logits`, as they are ready: row 0's ``(1, T, V)`` first, then rows ``1..each``
    one forward each ``(1, T, V)`` (default: every row), then the rows after ``each`` in one batch ``(n, T, V)``.

    Each row's forward runs over the same cropped prefix cache (expanded views: the cache is never appended to), so
    a caller can show a row as soon as it is done (the app's progressive heatmap). A row alone needs no padding;
    on one CPU core a forward of one row of ~150 positions is as matmul-efficient as the batch. The numbers equal
    :func:`split_logits`'s up to float rounding. Each forward is its own model job: nothing is held across a yield
    (the consumer may resume this generator on another thread, or never).
    """
    each = br.B - 1 if each is None else min(each, br.B - 1)
    with turns.model_job():
        logits0, prefix = first_pass(model, br, device)
    yield logits0
    for b in range(1, each + 1):
        with turns.model_job():
            row = suffix_logits(
                model, Branches(br.prefix_ids, [br.suffix_ids[b]], br.response_ids), prefix, pad_id, device
            )
        yield row
    if each + 1 < br.B:
        with turns.model_job():
            rest = suffix_logits(
                model, Branches(br.prefix_ids, br.suffix_ids[each + 1 :], br.response_ids), prefix, pad_id, device
            )
        yield rest


@torch.no_grad()
def reference_logits(model, br: Branches, device) -> torch.Tensor:
    """The same (B, T, V) logits by full recomputation: each branch alone, whole sequence, no cache, no padding."""
    T = len(br.response_ids)
    out = []
    for b in range(br.B):
        ids = torch.tensor([br.full_ids(b)], device=device)
        logits = model(input_ids=ids, use_cache=False).logits  # (1, N, V)
        out.append(logits[0, -T - 1 : -1])  # (T, V): the position before each response token
    return torch.stack(out)
