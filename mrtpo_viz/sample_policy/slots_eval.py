"""Evaluating a slots policy (:mod:`.slots_policy` builds it): per-reward pass rates of sampled responses with and
without the information, the share cut at the budget (the training loop's rule), and the pairs' correlation that tells
the conflict recipe from the main one (``studies/credit/credit.py policy`` writes them)."""

from __future__ import annotations

from typing import Optional
from collections.abc import Sequence

import torch

from ..relevance.contexts import with_info
from ..tasks import Example, get_verifier
from ..tasks.generators import slots as gen
from ..tasks.slots import VERIFIERS
from ..training.rollouts import was_cut

MAX_NEW_TOKENS = 160
"""Sampling budget for slots (gold responses are about 111 tokens; the study checks that under 1% are cut)."""


def with_all_info(example: Example) -> Example:
    """The example with every part's information in its prompt (``user_end``, as the replay inserts it)."""
    blocks = [(get_verifier(v).title, get_verifier(v).info(example)) for v in example.verifiers]
    return Example(
        example.task,
        with_info(example.messages(), blocks),
        example.meta,
        example.id,
        example.reference,
        example.verifiers,
    )


def pass_rates(
    policy,
    examples: Sequence[Example],
    *,
    info: bool,
    samples: int = 4,
    seed: int = 0,
    max_new_tokens: int = MAX_NEW_TOKENS,
    temperature: float = 1.0,
    stop_after_lines: Optional[int] = None,
) -> dict:
    """Per-reward pass rate of sampled responses, without or with every part's information; and the share of
    samples cut at ``max_new_tokens`` (the training loop's rule, :func:`~mrtpo_viz.training.rollouts.was_cut`: a
    sample that its line count ended is not cut). Returns ``{"rewards": {name: rate}, "truncated": share, "n":
    count}``."""
    totals, cut, n, pairs, modes = {v: 0.0 for v in VERIFIERS}, 0, 0, [], {}
    for i, ex in enumerate(examples):
        shown = with_all_info(ex) if info else ex
        group = policy.generate_group(
            shown,
            samples,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            seed=seed * 100_003 + i,
            stop_after_lines=stop_after_lines or 0,
        )
        for c in group:
            n += 1
            cut += was_cut(c, max_new_tokens, stop_after_lines or 0)
            scores = [get_verifier(v).score(c.text, ex) for v in VERIFIERS]
            for v, r in zip(VERIFIERS, scores):
                totals[v] += r
            pairs.append((sum(scores[:2]), sum(scores[2:4])))
            first = c.text.split("\n", 1)[0].strip()
            if first in {f"Mode {m}." for m in gen.MODES}:  # the conflict recipe: rates per mode
                modes.setdefault(first[5], []).append(scores)
    by_mode = {
        m: {"n": len(rows), "rewards": [round(sum(r[k] for r in rows) / len(rows), 4) for k in range(len(VERIFIERS))]}
        for m, rows in sorted(modes.items())
    }
    return {
        "rewards": {v: round(t / max(n, 1), 4) for v, t in totals.items()},
        "truncated": round(cut / max(n, 1), 4),
        "n": n,
        "pairs_corr": pair_correlation(pairs),
        **({"by_mode": by_mode} if by_mode else {}),
    }


def pair_correlation(pairs: Sequence[tuple[float, float]]) -> Optional[float]:
    """Pearson correlation of (parts 1-2 passed, parts 3-4 passed) over samples; None where either is constant. Near 0
    for the main recipe (independent parts), clearly negative for the conflict recipe."""
    if len(pairs) < 2:
        return None
    a, b = torch.tensor(pairs, dtype=torch.float64).T
    if a.std() == 0 or b.std() == 0:
        return None
    return round(float(torch.corrcoef(torch.stack([a, b]))[0, 1]), 4)
