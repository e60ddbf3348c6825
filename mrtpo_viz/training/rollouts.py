"""The data of one training step: N prompts x G sampled completions, their rewards, relevance and log-probs.

Shapes: ``N`` prompts (this process's share), ``G`` completions per prompt, ``K`` verifiers (the union over the
task's examples; NaN reward where one does not apply), ``T`` response tokens (the longest completion; padding
masked). A completion's training tokens are its generated ids plus the end-of-sequence token when it stopped on
its own (so the policy also learns when to stop, as in TRL); a completion cut at ``max_new_tokens`` has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from collections.abc import Sequence

import torch

from ..policy.padding import right_pad
from ..tasks import Example, get_verifier


@dataclass
class Rollouts:
    """The step's completions, padded to ``T`` response tokens."""

    examples: list[Example]
    """The N prompts."""
    texts: list[list[str]]
    """N x G decoded responses (what the verifiers read)."""
    prompt_ids: list[list[int]]
    """N prompt id lists (chat template with the assistant header)."""
    response_ids: list[list[list[int]]]
    """N x G training token ids (generated ids + end-of-sequence where the completion stopped)."""
    prompt_caches: Optional[list] = None
    """N prompt KV caches from sampling (one row each, the policy that sampled): the replay's shared prefix."""
    truncated: Optional[list[list[bool]]] = None
    """N x G: whether the completion was cut at ``max_new_tokens`` (no end-of-sequence of its own)."""

    def truncated_rate(self) -> float:
        """Share of the completions cut at ``max_new_tokens`` (0 when unknown)."""
        flags = [t for rows in (self.truncated or []) for t in rows]
        return sum(flags) / len(flags) if flags else 0.0

    @property
    def N(self) -> int:
        return len(self.examples)

    @property
    def G(self) -> int:
        return len(self.texts[0]) if self.texts else 0

    @property
    def T(self) -> int:
        return max((len(r) for rows in self.response_ids for r in rows), default=0)

    def mask(self) -> torch.Tensor:
        """(N, G, T) float, 1 on response tokens."""
        lengths = torch.tensor([[len(r) for r in rows] for rows in self.response_ids])  # (N, G)
        return (torch.arange(max(self.T, 1)) < lengths[..., None]).float()  # (N, G, T)


def union_verifiers(examples: Sequence[Example]) -> list[str]:
    """The verifier names of all examples, in order of first appearance (the K columns of the reward matrix)."""
    names = list(dict.fromkeys(n for ex in examples for n in ex.verifiers))
    if not names:
        raise ValueError("the examples list no verifiers: nothing to reward")
    for name in names:
        get_verifier(name)  # unknown names fail here, with the list of known ones
    return names


def sample_rollouts(
    policy,
    examples: Sequence[Example],
    G: int,
    *,
    seeds: Sequence[int],
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    stop_after_lines: int = 0,
) -> Rollouts:
    """G completions per prompt from ``policy`` (no grad), seeded per prompt; a completion that a line count ended
    (``stop_after_lines``) ends as one that stopped itself: end-of-sequence appended, not truncated."""
    eos = _eos_id(policy)
    texts, prompt_ids, response_ids, caches, cut = [], [], [], [], []
    for ex, seed in zip(examples, seeds):
        group, cache = policy.generate_group(
            ex,
            G,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            return_prompt_cache=True,
            stop_after_lines=stop_after_lines,
        )
        texts.append([c.text for c in group])
        prompt_ids.append(list(group[0].prompt_ids))
        flags = [was_cut(c, max_new_tokens, stop_after_lines) for c in group]
        response_ids.append([c.token_ids + ([] if f else [eos]) for c, f in zip(group, flags)])
        cut.append(flags)
        caches.append(cache)
    return Rollouts(list(examples), texts, prompt_ids, response_ids, caches, cut)


def was_cut(completion, max_new_tokens: int, stop_after_lines: int = 0) -> bool:
    """Whether ``max_new_tokens`` cut the completion: it has that many tokens and no line count ended it."""
    if len(completion.token_ids) < max_new_tokens:
        return False
    return stop_after_lines <= 0 or completion.text.count("\n") < stop_after_lines


def _eos_id(policy) -> int:
    stops = policy.stop_ids()
    eos = policy.tokenizer.eos_token_id
    if eos in stops:
        return eos
    if not stops:
        raise ValueError(f"{policy.name}: the tokenizer has no end-of-sequence token")
    return min(stops)


def rollout_rewards(rollouts: Rollouts, verifiers: Sequence[str]) -> torch.Tensor:
    """Every verifier on every completion.

    Returns:
        (N, G, K) rewards in [0, 1]; NaN where verifier k does not apply to the prompt's example.
    """
    N, G, K = rollouts.N, rollouts.G, len(verifiers)
    rewards = torch.full((N, G, K), float("nan"))
    checks = [get_verifier(name) for name in verifiers]
    for i, ex in enumerate(rollouts.examples):
        for k, v in enumerate(checks):
            if v.name in ex.verifiers:
                rewards[i, :, k] = torch.tensor([v.score(text, ex) for text in rollouts.texts[i]])
    return rewards


def rollout_relevance(
    policy,
    rollouts: Rollouts,
    verifiers: Sequence[str],
    *,
    metric: str,
    control: str,
    info_position: str,
    pool: Optional[Sequence[Example]] = None,
    without_logits: Optional[torch.Tensor] = None,
    one_context: bool = False,
):
    """Relevance of every completion's tokens to every verifier that applies to its prompt.

    Each completion is replayed on its exact training ids with the policy as it sampled them (before the
    update); the G completions of a prompt share one prefix pass and one batched forward (``group_relevance``).
    ``without_logits`` (N * G, T, V), the training forward's logits on the same ids (no information, before the
    update), serve as the no-information branch, so the replay runs only the K with-information branches; the
    prompt caches kept by sampling serve the shared prefix before the information.

    Returns:
        (N, G, K, T) relevance, 0 on padding and where a verifier does not apply. With ``one_context`` (one more
        branch holding every applicable verifier's information, in the same batch), a pair: that and the
        ``(N, G, T)`` metric of the one-context branch.
    """
    from .group_replay import group_relevance

    N, G, K, T = rollouts.N, rollouts.G, len(verifiers), rollouts.T
    relevance = torch.zeros((N, G, K, T))
    one = torch.zeros((N, G, T))
    for i, ex in enumerate(rollouts.examples):
        names = [n for n in verifiers if n in ex.verifiers]
        rows = [verifiers.index(n) for n in names]
        without = (
            None if without_logits is None else (rollouts.prompt_ids[i], without_logits[i * G : (i + 1) * G])
        )  # (G, T, V)
        cached = None if not rollouts.prompt_caches else (rollouts.prompt_ids[i], rollouts.prompt_caches[i])
        scores = group_relevance(
            policy,
            ex,
            rollouts.response_ids[i],
            names,
            metric=metric,
            control=control,
            info_position=info_position,
            pool=pool,
            without=without,
            prompt_cache=cached,
            one_context=one_context,
        )  # (G, K_i, T_i)
        if one_context:
            scores, one_i = scores  # (G, K_i, T_i), (G, T_i)
            one[i, :, : one_i.shape[-1]] = one_i[..., :T]
        relevance[i][:, rows, : scores.shape[-1]] = scores[..., :T]
    return (relevance, one) if one_context else relevance


def span_masks(rollouts: Rollouts, verifiers: Sequence[str], tokenizer) -> torch.Tensor:
    """The oracle's relevance: ``(N, G, K, T)`` 1 where token ``t`` of completion ``g`` overlaps a decision span of
    verifier ``k`` (its ``decision_spans`` on the completion's text: by default its relevant spans), 0 elsewhere,
    where the verifier does not apply or where it knows no spans (which MRTPO's weighting turns into uniform weights).

    A completion that stopped on its own ends with its end-of-sequence token, which occupies the virtual character
    ``[len(text), len(text) + 1)``: a span that reaches past the text's end marks it. A completion cut at
    ``max_new_tokens`` has no such token, and no token of its own reaches past the text, so such a span marks
    nothing there."""
    N, G, K, T = rollouts.N, rollouts.G, len(verifiers), rollouts.T
    out = torch.zeros((N, G, K, T))
    checks = [get_verifier(name) for name in verifiers]
    for i, ex in enumerate(rollouts.examples):
        for g, (ids, text) in enumerate(zip(rollouts.response_ids[i], rollouts.texts[i])):
            offsets = _token_spans(tokenizer, ids, text, _cut(rollouts, i, g))
            for k, v in enumerate(checks):
                spans = v.decision_spans(text, ex) if v.name in ex.verifiers else None
                for t, (s, e) in enumerate(offsets if spans else ()):
                    out[i, g, k, t] = float(any(a < e and s < b for a, b in spans))
    return out


def _cut(rollouts: Rollouts, i: int, g: int) -> bool:
    """Whether completion ``g`` of prompt ``i`` was cut at ``max_new_tokens`` (False when unknown)."""
    return bool(rollouts.truncated and rollouts.truncated[i][g])


def _token_spans(tokenizer, ids: list[int], text: str, cut: bool) -> list[tuple[int, int]]:
    """Character ``[start, end)`` of each training token in ``text``: the text's own tokens (clipped to the text),
    then the end-of-sequence token of a completion that stopped on its own at ``[len(text), len(text) + 1)``."""
    from ..relevance.tokens import display_tokens

    offsets = display_tokens(tokenizer, ids)[1]  # the text's own tokens first; an EOS adds a last one
    n = len(text)
    spans = [(min(s, n), min(e, n)) for s, e in offsets]
    special = set(getattr(tokenizer, "all_special_ids", None) or ()) | {tokenizer.eos_token_id}
    if spans and not cut and ids[-1] in special:
        spans[-1] = (n, n + 1)
    return spans


def padded_batch(rollouts: Rollouts, pad_id: int, device) -> tuple[torch.Tensor, ...]:
    """Rows ``prompt + response`` right-padded, for the training forward.

    Returns:
        input ids (B, L), attention mask (B, L), kept positions (B, T) where ``[b, t]`` is the position whose
        logits predict response token ``t`` (clamped inside the row for padding), response ids (B, T);
        ``B = N * G``, row ``b = i * G + g``.
    """
    rows, starts, responses = [], [], []
    for prompt, group in zip(rollouts.prompt_ids, rollouts.response_ids):
        for resp in group:
            rows.append(prompt + resp)
            starts.append(len(prompt) - 1)
            responses.append(resp)
    T = max(rollouts.T, 1)
    ids, attn = right_pad(rows, pad_id)  # (B, L)
    targets, _ = right_pad(responses, pad_id, length=T)  # (B, T)
    L = ids.shape[1]
    keep = (torch.tensor(starts)[:, None] + torch.arange(T)).clamp(max=L - 1)  # (B, T)
    return tuple(x.to(device) for x in (ids, attn, keep, targets))


def token_logprobs(
    model, rollouts: Rollouts, pad_id: int, device, temperature: float = 1.0, return_logits: bool = False
):
    """Log-probs of the response tokens under ``model`` (with grad), logits divided by the sampling temperature.

    Returns:
        (N * G, T) float32 log-probs; values on padding are meaningless (mask them). With ``return_logits``, also
        the raw (N * G, T, V) logits, detached (the replay's no-information branch).
    """
    ids, attn, keep, targets = padded_batch(rollouts, pad_id, device)
    logits = model(input_ids=ids, attention_mask=attn, logits_to_keep=keep, use_cache=False).logits  # (B, T, V)
    logp = (logits.float() / temperature).log_softmax(-1)  # float32 before log_softmax (bf16 noise)
    logp = logp.gather(-1, targets[..., None]).squeeze(-1)  # (B, T)
    return (logp, logits.detach()) if return_logits else logp


def sample_display(
    rollouts: Rollouts,
    rewards: torch.Tensor,
    adv: torch.Tensor,
    verifiers: Sequence[str],
    tokenizer,
    relevance: Optional[torch.Tensor] = None,
) -> dict:
    """One completion for display: the one with the largest token advantage (most to learn from).

    Args:
        rewards: (N, G, K); adv: (N, G, T) token advantages; relevance: (N, G, K, T) or None.
    Returns:
        ``{"prompt", "text", "tokens", "adv", "rewards", "relevance"}``: display tokens that join back to the
        text, one advantage per token, reward per applicable verifier, relevance per verifier when replayed.
    """
    from ..relevance.tokens import display_tokens

    b = int(adv.abs().amax(-1).reshape(-1).argmax()) if adv.numel() else 0  # row i * G + g
    i, g = divmod(b, rollouts.G)
    ids = rollouts.response_ids[i][g]
    applies = ~torch.isnan(rewards[i, g])  # (K,)
    r = {n: float(rewards[i, g, k]) for k, n in enumerate(verifiers) if applies[k]}
    rel = (
        {}
        if relevance is None
        else {n: relevance[i, g, k, : len(ids)].tolist() for k, n in enumerate(verifiers) if applies[k]}
    )
    return {
        "prompt": rollouts.examples[i].messages()[-1]["content"],
        "text": rollouts.texts[i][g],
        "tokens": display_tokens(tokenizer, ids)[0],
        "adv": adv[i, g, : len(ids)].tolist(),
        "rewards": r,
        "relevance": rel,
    }
