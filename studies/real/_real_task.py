"""The real-model arm's task: multi-constraint instruction following (2-3 IFEval constraints per prompt, one reward
per constraint) from the project's generator, its pools (pilot, training, held-out) drawn from disjoint generator
seeds and made disjoint by prompt text, and the pilot's per-constraint-type pass rates of the start policy."""

from __future__ import annotations

from typing import Optional
from collections.abc import Iterable, Sequence

MODEL = "smollm2-135m-instruct"
"""The start policy (``python -m mrtpo_viz get-model smollm2-135m-instruct``)."""
POOL_SEEDS = {"pilot": 4100, "train": 4200, "heldout": 4300}
"""Generator seed of each pool: the held-out prompts never come from the training pool's draws."""
MIN_CONSTRAINTS, MAX_CONSTRAINTS = 2, 3
"""Constraints per prompt (the generator draws 2-4; prompts with 4 are left out)."""


def kind(verifier: str) -> str:
    """``ifeval.no_comma`` -> ``no_comma``."""
    return verifier.removeprefix("ifeval.")


def draw_pool(name: str, n: int, kinds: Optional[Iterable[str]] = None, exclude: Sequence = ()) -> list:
    """The first ``n`` examples of pool ``name`` with 2-3 constraints, every constraint among ``kinds`` (all when
    None), and a prompt text not in ``exclude`` (examples or prompt strings). Deterministic for its arguments."""
    from mrtpo_viz.tasks.generators.instruction_following import generate

    allowed = None if kinds is None else set(kinds)
    banned = {e if isinstance(e, str) else e.prompt for e in exclude}
    out, batch, seen = [], max(4 * n, 64), set()
    while len(out) < n:
        drawn = generate(batch, seed=POOL_SEEDS[name])  # a longer draw starts with the same examples
        out, seen = [], set()
        for ex in drawn:
            ks = [kind(v) for v in ex.verifiers]
            if not MIN_CONSTRAINTS <= len(ks) <= MAX_CONSTRAINTS or ex.prompt in banned or ex.prompt in seen:
                continue
            if allowed is not None and not set(ks) <= allowed:
                continue
            seen.add(ex.prompt)
            out.append(ex)
            if len(out) == n:
                break
        if len(out) < n:
            if batch > 200_000:
                raise ValueError(f"pool {name!r}: only {len(out)} prompts with constraints among {sorted(allowed)}")
            batch *= 4
    return out


def pass_rates(samples: Sequence[dict]) -> dict:
    """Per constraint type: samples, passes and the pass rate, from ``{"kinds": [...], "passed": [0/1, ...]}``."""
    table: dict = {}
    for s in samples:
        for k, p in zip(s["kinds"], s["passed"]):
            row = table.setdefault(k, {"n": 0, "passed": 0})
            row["n"] += 1
            row["passed"] += int(p)
    for row in table.values():
        row["rate"] = round(row["passed"] / row["n"], 4)
    return dict(sorted(table.items()))


def kept_kinds(rates: dict, low: float = 0.2, high: float = 0.8, min_n: int = 12) -> list[str]:
    """The constraint types whose pilot pass rate lies in ``[low, high]`` on at least ``min_n`` samples."""
    return sorted(k for k, r in rates.items() if r["n"] >= min_n and low <= r["rate"] <= high)
