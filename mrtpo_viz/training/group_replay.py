"""Relevance for a whole group of completions at once: the replay of :mod:`mrtpo_viz.relevance.engine`, batched.

A training step needs ``d[k, t]`` for all G completions of a prompt. Their replay branches (no information, one
per verifier, a control's extra branches) have the same prompt texts; only the response differs. So the shared
prompt prefix runs once, each branch's rest of prompt (with its information) runs once for the group, and only
the ``G x B`` response rows run over that branch cache. The information blocks are often longer than the
responses, so this is about half the work of one replay per completion. The scores equal ``replay(...)`` per
completion (the control combination is the replay module's own), without the display columns (top-k, entropy)
that training does not need.
"""

from __future__ import annotations

from typing import Optional
from collections.abc import Sequence

import torch

from ..divergence import chunked_metric
from ..policy.kvcache import cache_length, cropped_cache, expand_cache, forward, map_cache
from ..policy.padding import right_pad
from ..relevance.branches import Branches, prefix_cache
from ..relevance.controls import CONTROL_SPECS
from ..relevance.engine import plan_replay
from ..tasks.base import Example


def _tile_cache(cache, G: int):
    """A new cache whose layers hold ``G`` copies of the B rows: row ``g * B + b`` is branch ``b``."""
    return map_cache(cache, lambda t: t.repeat(G, 1, 1, 1))


def branch_logits_for_group(
    model, br: Branches, responses: list[list[int]], pad_id: int, device, prefix=None
) -> torch.Tensor:
    """Logits predicting each of G responses in each of B branches, in three passes of growing batch.

    1. the shared prefix, once (1 row); 2. the B branch suffixes (rest of prompt with its information), right-
    padded, over the prefix cache (B rows; the last real position predicts response token 0); 3. the G
    responses over that branch cache tiled G times (G * B rows of response tokens only). Information tokens thus
    run once per branch, not once per completion. ``prefix``: the prefix's cache if already computed (step 1 is
    then skipped).

    Returns:
        Two position pieces of the (G, B, T, V) logits, kept apart (joining them would copy every logit):
        ``(G, B, 1, V)`` predicting response token 0, and ``(G, B, T - 1, V)`` predicting tokens 1.. (``None``
        when T = 1); ``[g, b, t]`` predicts token t of response g in branch b (T = longest response).
    """
    P, B, G = len(br.prefix_ids), br.B, len(responses)
    if prefix is None:
        prefix = prefix_cache(model, br.prefix_ids, device)
    sfx, sfx_mask = right_pad(br.suffix_ids, pad_id)  # (B, Ls)
    lengths = sfx_mask.sum(-1)  # (B,)
    attn = torch.cat([torch.ones((B, P), dtype=torch.long), sfx_mask], dim=1)  # (B, P + Ls)
    positions = (P + torch.arange(sfx.shape[1])).expand(B, -1)  # (B, Ls)
    first, branch_cache = forward(
        model,
        sfx.to(device),
        cache=None if prefix is None else expand_cache(prefix, B),
        attention_mask=attn.to(device),
        position_ids=positions.to(device),
        logits_to_keep=(lengths - 1)[:, None].to(device),
    )  # (B, 1, V)
    T = max(len(r) for r in responses)
    first = first[None].expand(G, -1, -1, -1)  # (G, B, 1, V)
    if T == 1:
        return first, None
    resp, resp_mask = right_pad([list(r[:-1]) or [pad_id] for r in responses], pad_id)  # (G, T - 1)
    resp, resp_mask = resp[:, : T - 1], resp_mask[:, : T - 1]
    attn = torch.cat([attn.repeat(G, 1), resp_mask.repeat_interleave(B, 0)], dim=1)  # (G * B, P + Ls + T - 1)
    positions = P + lengths.repeat(G)[:, None] + torch.arange(T - 1)  # (G * B, T - 1)
    rest, _ = forward(
        model,
        resp.repeat_interleave(B, 0).to(device),
        cache=_tile_cache(branch_cache, G),
        attention_mask=attn.to(device),
        position_ids=positions.to(device),
    )  # (G * B, T - 1, V)
    return first, rest.reshape(G, B, T - 1, -1)  # (G, B, 1, V), (G, B, T - 1, V)


@torch.no_grad()
def group_relevance(
    policy,
    example: Example,
    responses: Sequence[Sequence[int]],
    verifiers: Sequence[str],
    *,
    metric: str = "js",
    control: str = "none",
    info_position: str = "user_end",
    pool: Optional[Sequence[Example]] = None,
    without: Optional[tuple[Sequence[int], torch.Tensor]] = None,
    prompt_cache: Optional[tuple[Sequence[int], object]] = None,
    one_context: bool = False,
):
    """Relevance of G responses (exact token ids) to K verifiers of one prompt.

    Args:
        responses: G lists of response token ids (non-empty).
        verifiers: K verifier names.
        pool: examples the ``corrupted`` control borrows information from.
        without: ``(prompt ids, (G, T', V) logits)`` of the no-information branch already computed elsewhere (the
            training forward, same policy, same ids; ``T' >= T``): used instead of running that branch again, if
            the prompt ids are exactly the replay's no-information context. Saves 1 of the K + 1 branches.
        prompt_cache: ``(prompt ids, KV cache of those ids)``, e.g. sampling's prompt pass (same policy): its first
            positions serve the shared prefix before the information, if the ids begin with it.
        one_context: also replay one branch with every verifier's information (last in the same batch).
    Returns:
        (G, K, T) scores after the control, T the longest response; 0 on padding. With ``one_context``, a pair:
        those scores and the ``(G, T)`` metric of the one-context branch against no information.
    """
    plan = plan_replay(
        policy,
        example,
        list(responses[0]),
        verifiers,
        info_position=info_position,
        control=control,
        pool=pool,
        one_context=one_context,
    )
    br, ctrl = plan.branches, CONTROL_SPECS[control]
    G, K, B = len(responses), len(plan.verifiers), plan.branches.B - int(one_context)  # B: without, with, extra
    T = max(len(r) for r in responses)
    pad = policy.pad_id
    rows = [list(r) for r in responses]
    known = None
    if without is not None and list(without[0]) == br.prefix_ids + br.suffix_ids[0]:
        known = without[1][:, None, :T].to(policy.device, torch.float32)  # (G, 1, T, V)
        br = Branches(br.prefix_ids, br.suffix_ids[1:], br.response_ids)
    prefix = None
    if (
        prompt_cache is not None
        and br.prefix_ids
        and list(prompt_cache[0][: len(br.prefix_ids)]) == br.prefix_ids
        and cache_length(prompt_cache[1]) >= len(br.prefix_ids)
    ):
        prefix = cropped_cache(prompt_cache[1], len(br.prefix_ids))
    pieces = branch_logits_for_group(policy.model, br, rows, pad, policy.device, prefix=prefix)
    # each piece (G, B', T_piece, V), branches [without (unless known), with_1..K, extra_1..K]
    w = 0 if known is not None else 1  # index of with_1

    def over_positions(fn) -> torch.Tensor:
        """``fn(piece, no-information piece)`` per position piece, joined along T: (G, K, T)."""
        out, t0 = [], 0
        for piece in (p for p in pieces if p is not None):
            t1 = t0 + piece.shape[2]
            out.append(fn(piece, known[:, :, t0:t1] if known is not None else piece[:, :1]))
            t0 = t1
        return torch.cat(out, dim=-1)

    raw = over_positions(lambda lg, wo: chunked_metric(lg[:, w : w + K], wo, metric))  # (G, K, T)
    if B > K + 1:
        x = slice(w + K, w + 2 * K)  # the extra branches (a one-context branch comes after them)
        with_extra = over_positions(lambda lg, wo: chunked_metric(lg[:, w : w + K], lg[:, x], metric))
        extra_without = over_positions(lambda lg, wo: chunked_metric(lg[:, x], wo, metric))
        scores = torch.stack([ctrl.combine(raw[g], with_extra[g], extra_without[g]) for g in range(G)])
    else:
        scores = torch.stack([ctrl.combine(raw[g], None, None) for g in range(G)])  # (G, K, T)
    lengths = torch.tensor([len(r) for r in responses], device=scores.device)
    valid = torch.arange(scores.shape[-1], device=scores.device) < lengths[:, None]  # (G, T)
    scores = torch.where(valid[:, None, :], scores, 0.0).float().cpu()
    if not one_context:
        return scores
    one = over_positions(lambda lg, wo: chunked_metric(lg[:, -1:], wo, metric))[:, 0]  # (G, T)
    return scores, torch.where(valid, one, 0.0).float().cpu()
