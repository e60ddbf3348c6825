"""Gate (a) of the credit study: does a method's token credit make single-batch gradients agree?

For B batches sampled from the slots policy (the same batches for every method), each method's policy gradient
``g_b`` (of the token-mean surrogate at ratio 1, before any clipping) is compared with the mean of the other
batches' gradients: ``cos(g_b, mean_{b' != b} g_b')``. A credit assignment that puts each reward's advantage on
the tokens that decided it removes the noise the other rewards' advantages add to every token, so its gradients
agree more across batches. Also reported: the median gradient norm (the scale that clipping would meet).
"""

from __future__ import annotations

import math
import time

import torch


def batch_gradients(
    policy, examples, methods, *, batches: int, prompts: int, group_size: int, max_new_tokens: int, seed: int = 0
) -> dict[str, list[torch.Tensor]]:
    """``{method: [flat gradient of batch b]}``; every method sees the same sampled batches."""
    from dataclasses import replace

    from _credit_runs import method_settings
    from mrtpo_viz.advantages import ADVANTAGE_METHODS
    from mrtpo_viz.training.config import TrainConfig
    from mrtpo_viz.training.loop import _masked_mean, setup_run, token_inputs
    from mrtpo_viz.training.rollouts import rollout_rewards, sample_rollouts, token_logprobs

    cfg = TrainConfig(
        task="slots",
        method="mrtpo",
        seed=seed,
        group_size=group_size,
        prompts_per_step=prompts,
        max_new_tokens=max_new_tokens,
        steps=batches,
    )
    run = setup_run(cfg, examples, policy)
    params = [p for p in run.model.parameters() if p.requires_grad]
    out: dict[str, list[torch.Tensor]] = {m: [] for m in methods}
    for b in range(batches):
        exs, seeds = run.prompts_for(b)
        ro = sample_rollouts(
            run.policy, exs, group_size, seeds=seeds, max_new_tokens=max_new_tokens, temperature=1.0, top_p=1.0
        )
        rewards, mask = rollout_rewards(ro, run.verifiers), ro.mask()  # (N, G, K), (N, G, T)
        logp, logits = token_logprobs(run.model, ro, run.policy.pad_id, "cpu", 1.0, return_logits=True)
        cache = {}
        for name in methods:
            base, extra = method_settings(name)  # mrtpo@others: the replay with the others control
            method = ADVANTAGE_METHODS[base]
            key = (method.needs, tuple(sorted(extra.items())))
            if key not in cache:
                variant = replace(run, config=replace(run.config, **extra)) if extra else run
                cache[key] = token_inputs(variant, method, ro, logits, b)
            relevance, entropy = cache[key]
            adv = method(rewards, mask, relevance, weights=run.weights, entropy=entropy)  # (N, G, T)
            B, T = ro.N * ro.G, mask.shape[-1]
            loss = _masked_mean(-adv.reshape(B, T) * logp, mask.reshape(B, T))  # ratio 1: the policy gradient
            grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
            out[name].append(
                torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)])
            )
        del logits
    return out


def loo_cosines(grads: list[torch.Tensor]) -> list[float]:
    """``cos(g_b, mean of the others)`` for each batch b (NaN where a gradient is 0)."""
    total = torch.stack(grads).sum(0)
    out = []
    for g in grads:
        rest = (total - g) / (len(grads) - 1)
        denom = float(g.norm() * rest.norm())
        out.append(float(g @ rest) / denom if denom > 0 else math.nan)
    return out


def gate_a(
    policy,
    examples,
    methods,
    *,
    batches: int = 8,
    prompts: int = 4,
    group_size: int = 4,
    max_new_tokens: int = 160,
    seed: int = 0,
) -> dict:
    """Per method: mean and sd of the leave-one-out cosines, median gradient norm; and whether the gate passes."""
    t0 = time.time()
    grads = batch_gradients(
        policy,
        examples,
        methods,
        batches=batches,
        prompts=prompts,
        group_size=group_size,
        max_new_tokens=max_new_tokens,
        seed=seed,
    )
    per = {}
    for name, gs in grads.items():
        cos = torch.tensor(loo_cosines(gs))
        norms = torch.stack([g.norm() for g in gs])
        per[name] = {
            "cos_mean": round(float(cos.nanmean()), 4),
            "cos_sd": round(float(cos[~cos.isnan()].std()), 4),
            "cos": [round(float(c), 4) for c in cos],
            "grad_norm_median": round(float(norms.median()), 4),
        }
    best_oracle = max((m for m in per if m.startswith("mrtpo:oracle")), key=lambda m: per[m]["cos_mean"], default=None)
    passed = bool(
        best_oracle
        and "gdpo" in per
        and per[best_oracle]["cos_mean"] > per["gdpo"]["cos_mean"] + 2 * per["gdpo"]["cos_sd"] / math.sqrt(batches)
    )
    return {
        "gate": "a",
        "batches": batches,
        "prompts": prompts,
        "group_size": group_size,
        "seed": seed,
        "methods": per,
        "best_oracle": best_oracle,
        "passed": passed,
        "rule": "passes when the best oracle's mean cosine exceeds GDPO's by more than 2 standard errors of "
        "GDPO's per-batch cosines",
        "seconds": round(time.time() - t0, 1),
    }


def relevance_quality(
    policy,
    examples,
    *,
    prompts: int = 8,
    group_size: int = 4,
    max_new_tokens: int = 160,
    controls=("none", "others", "kl"),
    seed: int = 0,
) -> dict:
    """How well the replay's relevance finds each reward's decision token on sampled slots responses.

    Per control (``kl``: KL instead of JS, no control, as ``mrtpo@kl`` trains): ``top1`` (share of
    (completion, reward) rows whose most relevant token is the decision token),
    ``mass`` (share of the row's relevance on it) and ``mass_uniform`` (what uniform weights would put there)."""
    from mrtpo_viz.training.rollouts import rollout_relevance, sample_rollouts, span_masks, union_verifiers

    exs = examples[:prompts]
    verifiers = union_verifiers(exs)
    ro = sample_rollouts(
        policy,
        exs,
        group_size,
        seeds=[seed * 1000 + i for i in range(len(exs))],
        max_new_tokens=max_new_tokens,
        temperature=1.0,
        top_p=1.0,
    )
    spans = span_masks(ro, verifiers, policy.tokenizer)  # (N, G, K, T)
    mask = ro.mask()[:, :, None, :].expand_as(spans)  # (N, G, K, T)
    rows = spans.sum(-1) > 0  # (N, G, K): rows with a decision span
    out = {"rows": int(rows.sum()), "uniform_mass": float((spans.sum(-1) / mask.sum(-1))[rows].mean())}
    for control in controls:
        metric, ctl = ("kl", "none") if control == "kl" else ("js", control)
        d = rollout_relevance(policy, ro, verifiers, metric=metric, control=ctl, info_position="user_end")
        d = d.clamp_min(0) * mask
        top = d.argmax(-1, keepdim=True)  # (N, G, K, 1)
        hit = spans.gather(-1, top).squeeze(-1)  # (N, G, K)
        mass = (d * spans).sum(-1) / d.sum(-1).clamp_min(1e-12)
        out[control] = {"top1": float(hit[rows].mean()), "mass": float(mass[rows].mean())}
    return out
