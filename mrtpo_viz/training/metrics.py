"""The record of one training step, :class:`StepMetrics`, and the statistics that fill it: rewards, all-pass rate,
lengths, advantages, relevance.

Shapes: rewards (N, G, K) with NaN where a verifier does not apply, mask (N, G, T), advantages (N, G, T),
relevance (N, G, K, T).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Optional
from collections.abc import Sequence

import torch

PASS = 1.0 - 1e-6
TOP_SHARE = 0.1


@dataclass
class StepMetrics:
    """What one training step measured (one record per step, yielded by the training loop)."""

    step: int
    method: str
    seed: int = 0
    task: str = ""
    rewards: dict[str, float] = field(default_factory=dict)
    """Mean reward per verifier over the step's completions."""
    all_pass: float = 0.0
    """Fraction of completions that score 1 on every verifier."""
    mean_length: float = 0.0
    """Mean response length in tokens."""
    adv_mean: float = 0.0
    adv_std: float = 0.0
    adv_absmax: float = 0.0
    relevance_mean: float = float("nan")
    """Mean relevance over response tokens (NaN when the method does not replay)."""
    relevance_top10_mass: float = float("nan")
    """Share of the relevance mass on the top 10% of tokens: how concentrated the token weights are."""
    loss: float = 0.0
    kl: float = 0.0
    clip_frac: float = 0.0
    grad_norm: float = 0.0
    """Gradient norm before clipping (``max_grad_norm`` clips it; the same rule for every method)."""
    truncated: float = 0.0
    """Share of the step's completions cut at ``max_new_tokens`` (no end-of-sequence of their own)."""
    times: dict[str, float] = field(default_factory=dict)
    """Seconds per phase: sample, score, replay, advantages, update."""
    sample: dict[str, Any] = field(default_factory=dict)
    """One completion of the step for display: text, tokens, token advantages, rewards."""

    @property
    def mean_reward(self) -> float:
        return sum(self.rewards.values()) / max(len(self.rewards), 1)

    def to_row(self) -> dict[str, Any]:
        """Flat dict for a CSV row (rewards as ``reward/<name>``, times as ``time/<phase>``)."""
        row = {k: v for k, v in asdict(self).items() if k not in ("rewards", "times", "sample")}
        row.update({f"reward/{k}": v for k, v in self.rewards.items()})
        row["reward/mean"] = self.mean_reward
        row.update({f"time/{k}": v for k, v in self.times.items()})
        return row


def reward_means(rewards: torch.Tensor, verifiers: Sequence[str]) -> dict[str, float]:
    """Mean reward per verifier over the completions it applies to (verifiers that apply to none are left out)."""
    flat = rewards.reshape(-1, rewards.shape[-1])  # (N * G, K)
    out = {}
    for k, name in enumerate(verifiers):
        col = flat[:, k]
        col = col[~col.isnan()]
        if col.numel():
            out[name] = float(col.mean())
    return out


def all_pass_rate(rewards: torch.Tensor) -> float:
    """Share of completions that score 1 on every verifier that applies to them."""
    passed = ((rewards >= PASS) | rewards.isnan()).all(-1)  # (N, G)
    return float(passed.float().mean())


def advantage_stats(adv: torch.Tensor, mask: torch.Tensor) -> tuple[float, float, float]:
    """Mean, std and largest absolute value of the advantages over valid tokens."""
    valid = adv[mask > 0]
    if valid.numel() == 0:
        return 0.0, 0.0, 0.0
    std = float(valid.std()) if valid.numel() > 1 else 0.0
    return float(valid.mean()), std, float(valid.abs().max())


def relevance_stats(
    relevance: Optional[torch.Tensor], rewards: torch.Tensor, mask: torch.Tensor
) -> tuple[float, float]:
    """Mean relevance over valid tokens of applicable verifiers, and the share of each response's relevance mass
    on its top 10% of tokens (averaged over (completion, verifier) rows with any relevance). NaN without relevance.
    """
    if relevance is None:
        return math.nan, math.nan
    rows = ~rewards.isnan()  # (N, G, K) verifier applies
    m = mask[:, :, None, :].expand_as(relevance) * rows[..., None]  # (N, G, K, T)
    d = relevance.clamp_min(0) * m
    mean = float(d.sum() / m.sum().clamp_min(1))
    total = d.sum(-1)  # (N, G, K)
    lengths = mask.sum(-1, keepdim=True).expand_as(total)  # (N, G, K)
    top_n = (lengths * TOP_SHARE).ceil().clamp_min(1).long()  # (N, G, K)
    ranked = d.sort(-1, descending=True).values.cumsum(-1)  # (N, G, K, T)
    top_mass = ranked.gather(-1, (top_n - 1).clamp(max=d.shape[-1] - 1)[..., None]).squeeze(-1)  # (N, G, K)
    ok = rows & (total > 0)
    share = float((top_mass[ok] / total[ok]).mean()) if ok.any() else math.nan
    return mean, share


def step_metrics(
    run,
    step: int,
    rollouts,
    rewards: torch.Tensor,
    mask: torch.Tensor,
    adv: torch.Tensor,
    relevance: Optional[torch.Tensor],
    losses: dict[str, float],
    times: dict[str, float],
) -> StepMetrics:
    """The StepMetrics record; rewards, all-pass and lengths are gathered over all processes."""
    from .rollouts import sample_display

    acc, cfg = run.accelerator, run.config
    all_rewards = acc.gather(rewards.to(acc.device)).cpu()  # (N_all, G, K)
    lengths = acc.gather(mask.sum(-1).to(acc.device)).cpu()  # (N_all, G)
    adv_mean, adv_std, adv_absmax = advantage_stats(adv, mask)
    rel_mean, rel_top = relevance_stats(relevance, rewards, mask)
    return StepMetrics(
        step=step,
        method=cfg.method,
        seed=cfg.seed,
        task=cfg.task,
        rewards=reward_means(all_rewards, run.verifiers),
        all_pass=all_pass_rate(all_rewards),
        mean_length=float(lengths.float().mean()),
        adv_mean=adv_mean,
        adv_std=adv_std,
        adv_absmax=adv_absmax,
        relevance_mean=rel_mean,
        relevance_top10_mass=rel_top,
        loss=losses["loss"],
        kl=losses["kl"],
        clip_frac=losses["clip_frac"],
        grad_norm=losses.get("grad_norm", 0.0),
        truncated=rollouts.truncated_rate(),
        times={p: round(t, 4) for p, t in times.items()},
        sample=sample_display(rollouts, rewards, adv, run.verifiers, run.policy.tokenizer, relevance),
    )
