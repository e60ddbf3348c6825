"""Batched sampling of G responses to one prompt, returning the exact generated token ids.

All G rows share the prompt, so there is no padding: the prompt runs once, its KV cache is expanded to G rows
(views, no copy), and each step feeds one token per row. A row that has produced an end-of-sequence token keeps
being fed padding (its later tokens are dropped), so every row stops at its own end. With ``stop_after_lines``, a row
also ends with the token that completes that many lines (the token is kept): a task whose answer is a fixed number of
lines ends there, as a stop string ends a response in vLLM or TRL.
"""

from __future__ import annotations

from typing import Optional

import torch

from .kvcache import expand_cache, forward
from .padding import pad_id
from ..serving.turns import model_job


MIN_TEMPERATURE, MAX_TEMPERATURE = 1e-3, 100.0
"""Sampling temperatures accepted besides 0 (greedy): logits of up to ~1e35 stay finite divided by 1e-3."""


def filter_top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Nucleus filtering: keep the smallest set of most likely tokens whose mass reaches ``top_p``.

    Args:
        probs: (G, V) probabilities.
    Returns:
        (G, V) renormalized probabilities, zero outside the nucleus (the most likely token is always kept).
    """
    if top_p >= 1.0:
        return probs
    sorted_p, order = probs.sort(dim=-1, descending=True)  # (G, V)
    mass_before = sorted_p.cumsum(-1) - sorted_p  # (G, V) mass of the more likely tokens
    sorted_p = sorted_p.masked_fill(mass_before >= top_p, 0.0)
    kept = torch.zeros_like(probs).scatter(-1, order, sorted_p)
    return kept / kept.sum(-1, keepdim=True)


def pick_tokens(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator) -> torch.Tensor:
    """(G, V) float32 logits -> (G,) next tokens; ``temperature == 0`` is greedy."""
    if temperature == 0:
        return logits.argmax(-1)
    probs = filter_top_p(torch.softmax(logits / temperature, dim=-1), top_p)
    if not bool(torch.isfinite(probs).all()):
        raise ValueError(
            "the model's next-token probabilities are not finite (NaN or infinite logits): its weights "
            "are probably damaged; load another checkpoint"
        )
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def _check_args(
    prompt_ids,
    G: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    seed: Optional[int] = None,
    stop_after_lines: int = 0,
) -> None:
    if stop_after_lines < 0:
        raise ValueError(f"stop_after_lines must be >= 0 (0: end-of-sequence only), got {stop_after_lines}")
    if not prompt_ids:
        raise ValueError("the prompt is empty: nothing to continue")
    if G < 1 or max_new_tokens < 1:
        raise ValueError(f"G and max_new_tokens must be at least 1 (got G={G}, max_new_tokens={max_new_tokens})")
    if not (temperature == 0 or MIN_TEMPERATURE <= temperature <= MAX_TEMPERATURE):  # written so that NaN fails too
        raise ValueError(
            f"the temperature must be 0 (greedy) or lie in [{MIN_TEMPERATURE:g}, {MAX_TEMPERATURE:g}], "
            f"got {temperature}: below that the logits divided by it overflow"
        )
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must lie in (0, 1], got {top_p}")
    if seed is not None and not -(2**63) <= seed < 2**64:  # what torch.Generator.manual_seed accepts
        raise ValueError(f"the seed must lie in [-2**63, 2**64), got {seed}")


@torch.no_grad()
def sample_group(
    policy,
    prompt_ids: list[int],
    G: int,
    *,
    max_new_tokens: int = 128,
    temperature: float = 1.0,
    top_p: float = 1.0,
    seed: Optional[int] = None,
    return_prompt_cache: bool = False,
    stop_after_lines: int = 0,
):
    """Sample G continuations of ``prompt_ids``.

    ``stop_after_lines`` > 0 ends a row with the token that brings its text to that many newlines (the token is
    kept, nothing is appended); 0 ends rows only at end-of-sequence tokens.

    Returns:
        G lists of generated ids, each without its end-of-sequence token and without padding; with
        ``return_prompt_cache``, also the prompt's own KV cache (one row, ``len(prompt_ids)`` positions, left as
        the prompt pass made it): a training step's replay serves its shared prefix from it.
    """
    _check_args(prompt_ids, G, max_new_tokens, temperature, top_p, seed, stop_after_lines)
    with model_job():  # one job: other sessions get turns between its steps (serving.turns)
        rows, prefix = _sample(
            policy, prompt_ids, G, max_new_tokens, temperature, top_p, seed, stop_after_lines=stop_after_lines
        )
    return (rows, prefix) if return_prompt_cache else rows


def _sample(policy, prompt_ids, G, max_new_tokens, temperature, top_p, seed, *, stop_after_lines: int):
    model, dev = policy.model, policy.device
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed) if seed is not None else gen.seed()
    stop = torch.tensor(sorted(policy.stop_ids()), device=dev, dtype=torch.long)
    pad = pad_id(policy.tokenizer)
    P = len(prompt_ids)
    logits, prefix = forward(model, torch.tensor([prompt_ids], device=dev))  # (1, P, V)
    cache = expand_cache(prefix, G)
    next_logits = logits[:, -1].float().expand(G, -1)  # (G, V)
    out = torch.full((G, max_new_tokens), pad, dtype=torch.long, device=dev)
    done = torch.zeros(G, dtype=torch.bool, device=dev)
    lines, ended = [0] * G, [max_new_tokens] * G  # newlines so far; a row's length when a line count ended it
    newlines = _NewlineCounter(policy.tokenizer) if stop_after_lines > 0 else None
    stop_set = set(stop.tolist())
    for step in range(max_new_tokens):
        tok = torch.where(done, pad, pick_tokens(next_logits, temperature, top_p, gen))  # (G,)
        out[:, step] = tok
        if newlines is not None:
            for g, t in enumerate(tok.tolist()):
                if not done[g] and t not in stop_set:
                    lines[g] += newlines(t)
                    if lines[g] >= stop_after_lines:
                        ended[g], done[g] = step + 1, True
        done |= torch.isin(tok, stop)
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        positions = torch.full((G, 1), P + step, device=dev, dtype=torch.long)
        logits, cache = forward(model, tok[:, None], cache=cache, position_ids=positions)
        next_logits = logits[:, -1].float()  # (G, V)
    rows = [_until_stop(row[:end], stop) for row, end in zip(out.tolist(), ended)]
    return rows, prefix


class _NewlineCounter:
    """Newlines in one token's text, cached per id (byte-level tokens keep a newline whole, so a token decoded
    alone counts its newlines exactly)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.cache = tokenizer, {}

    def __call__(self, token_id: int) -> int:
        if token_id not in self.cache:
            self.cache[token_id] = self.tokenizer.decode([token_id]).count("\n")
        return self.cache[token_id]


def _until_stop(row: list[int], stop: torch.Tensor) -> list[int]:
    stops = set(stop.tolist())
    for i, t in enumerate(row):
        if t in stops:
            return row[:i]
    return row
