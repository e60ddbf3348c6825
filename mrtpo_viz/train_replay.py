"""Relevance for a whole group of completions in one forward: the replay of :mod:`mrtpo_viz.replay`, batched.

A training step needs ``d[k, t]`` for all G completions of a prompt. Their replay branches (no information, one
per verifier, a control's extra branches) have the same prompt texts; only the response differs. So the shared
prompt prefix runs once for the group, and the ``G x B`` suffix rows (rest of prompt + response, right-padded)
run in one batched forward over its expanded cache. The scores are the same as ``replay(...)`` per completion
(the control combination is the replay module's own), without the display columns (top-k, entropy) that
training does not need.
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch

from .divergence import chunked_metric
from .kvcache import expand_cache, forward
from .replay import CONTROLS, plan_replay
from .replay_batch import prefix_cache
from .tasks import Example


def _group_suffix_batch(prefix_len: int, suffixes: list[list[int]], responses: list[list[int]], pad_id: int,
                        device) -> tuple[torch.Tensor, ...]:
    """Rows ``suffix_b + response_g`` for g in G, b in B (row ``g * B + b``), right-padded.

    Returns:
        ids (G*B, L), attention mask (G*B, P + L) over cache + suffix, position ids (G*B, L), kept positions
        (G*B, T) where ``[row, t]`` predicts response token t (clamped inside the row for padding).
    """
    rows = [(s, r) for r in responses for s in suffixes]
    L = max(len(s) + len(r) for s, r in rows)
    T = max(len(r) for r in responses)
    R = len(rows)
    ids = torch.full((R, L), pad_id, dtype=torch.long)
    mask = torch.zeros((R, prefix_len + L), dtype=torch.long)
    for j, (s, r) in enumerate(rows):
        ids[j, :len(s) + len(r)] = torch.tensor(s + r)
        mask[j, :prefix_len + len(s) + len(r)] = 1
    positions = (prefix_len + torch.arange(L)).expand(R, L)  # (R, L)
    starts = torch.tensor([len(s) - 1 for s, _ in rows])  # (R,)
    keep = (starts[:, None] + torch.arange(T)).clamp(max=L - 1)  # (R, T)
    return tuple(x.to(device) for x in (ids, mask, positions, keep))


@torch.no_grad()
def group_relevance(policy, example: Example, responses: Sequence[Sequence[int]], verifiers: Sequence[str], *,
                    metric: str = "js", control: str = "none", info_position: str = "user_end",
                    pool: Optional[Sequence[Example]] = None) -> torch.Tensor:
    """Relevance of G responses (exact token ids) to K verifiers of one prompt.

    Args:
        responses: G lists of response token ids (non-empty).
        verifiers: K verifier names.
        pool: examples the ``corrupted`` control borrows information from.
    Returns:
        (G, K, T) scores after the control, T the longest response; 0 on padding.
    """
    plan = plan_replay(policy, example, list(responses[0]), verifiers, info_position=info_position,
                       control=control, pool=pool)
    br, ctrl = plan.branches, CONTROLS[control]
    G, K, B = len(responses), len(plan.verifiers), plan.branches.B
    pad = next(i for i in (policy.tokenizer.pad_token_id, policy.tokenizer.eos_token_id, 0) if i is not None)
    cache = prefix_cache(policy.model, br.prefix_ids, policy.device)
    ids, mask, positions, keep = _group_suffix_batch(len(br.prefix_ids), br.suffix_ids,
                                                     [list(r) for r in responses], pad, policy.device)
    rows_cache = None if cache is None else expand_cache(cache, G * B)
    logits, _ = forward(policy.model, ids, cache=rows_cache, attention_mask=mask, position_ids=positions,
                        logits_to_keep=keep)
    logits = logits.reshape(G, B, keep.shape[-1], -1)  # (G, B, T, V): [without, with_1..K, extra_1..K]
    without, with_k = logits[:, :1], logits[:, 1:K + 1]  # (G, 1, T, V), (G, K, T, V)
    raw = chunked_metric(with_k, without, metric)  # (G, K, T)
    if B > K + 1:
        extra_k = logits[:, K + 1:]  # (G, K, T, V)
        scores = torch.stack([ctrl.combine(raw[g], chunked_metric(with_k[g], extra_k[g], metric),
                                           chunked_metric(extra_k[g], without[g], metric)) for g in range(G)])
    else:
        scores = torch.stack([ctrl.combine(raw[g], None, None) for g in range(G)])  # (G, K, T)
    lengths = torch.tensor([len(r) for r in responses], device=scores.device)
    valid = torch.arange(scores.shape[-1], device=scores.device) < lengths[:, None]  # (G, T)
    return torch.where(valid[:, None, :], scores, 0.0).float().cpu()
