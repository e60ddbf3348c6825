"""The credit study's runs: the schedule (arm, method, lr, seed), one run's training with its per-step record and
held-out rewards, shards, and the per-run JSON files that make a sitting resumable (a finished run is skipped)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional
from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class RunSpec:
    arm: dict
    method: str
    lr: float
    seed: int

    @property
    def name(self) -> str:
        return f"{self.arm['key']}__{self.method.replace(':', '_').replace('@', '+')}__lr{self.lr:g}__s{self.seed}"


VARIANTS = {"others": {"control": "others"}, "kl": {"metric": "kl"}, "rate": {}}
"""Variants of a method, written ``method@variant`` in a plan (``mrtpo@others``: the with-information branch held
against the other verifiers' information instead of none; ``mrtpo@kl``: KL instead of JS; ``mrtpo@rate``: the same
method at the rate the plan's ``chosen.lr`` gives that name, so that a method runs at a second rate)."""


def method_settings(method: str) -> tuple[str, dict]:
    """``"mrtpo@others"`` -> ``("mrtpo", {"control": "others"})``; a plain method name has no extra settings."""
    base, _, variant = method.partition("@")
    if variant and variant not in VARIANTS:
        raise ValueError(f"unknown relevance variant {variant!r} in {method!r}; choose from {sorted(VARIANTS)}")
    return base, dict(VARIANTS.get(variant, {}))


def schedule(plan: dict, phase: str) -> list[RunSpec]:
    """Seed-major order (every method of seed 0 first), so a study cut short still has complete pairs."""
    if phase == "pilot":
        seeds, methods = range(plan["pilot"]["seeds"]), plan["pilot"]["methods"]
        lrs = {m: plan["pilot"]["lr"] for m in methods}
    elif phase == "main":  # the seeds and each method's learning rate are chosen from the pilot (plan["chosen"])
        chosen = plan.get("chosen") or {}
        first = chosen.get("seed_offset", 0)  # fresh seeds: the pilot's chose the rates, so they are not reused
        seeds, methods = range(first, first + chosen.get("seeds", plan["seeds"]["min"])), plan["methods"]
        lrs = {m: [chosen.get("lr", {}).get(m, plan["pilot"]["lr"][0])] for m in methods}
    else:
        raise ValueError(f"unknown phase {phase!r}; choose pilot or main")
    start = (plan.get("chosen") or {}).get("from_seed", {}) if phase == "main" else {}  # methods added later
    out = []
    for arm in plan["arms"]:
        if phase == "pilot" and arm.get("main_only"):
            continue
        arm_seeds = seeds[: arm["main_seeds"]] if phase == "main" and "main_seeds" in arm else seeds
        arm_methods = [m for m in methods if m in arm.get("methods", methods)]
        arm_start = arm.get("from_seed", start)  # an arm added later names its own (``{}``: all its seeds)
        out += [
            RunSpec(arm, m, float(lr), s)
            for s in arm_seeds
            for m in arm_methods
            for lr in lrs[m]
            if s >= arm_start.get(m, s)
        ]
    return out


def parse_shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard takes K/N (e.g. 0/2), got {text!r}") from None
    if not 0 <= k < n:
        raise ValueError(f"--shard K/N needs 0 <= K < N, got {text!r}")
    return k, n


def policy_path(checkpoint: str) -> str:
    p = Path(checkpoint)
    return str(p if p.is_absolute() or not (ROOT / p).exists() else ROOT / p)


def heldout_reward(policy, examples, verifiers, max_new_tokens: int, seed: int, stop_after_lines: int = 0) -> dict:
    """Mean reward of one sample per held-out prompt (temperature 1, fixed seeds) and its truncated share."""
    from mrtpo_viz.tasks import get_verifier
    from mrtpo_viz.training.rollouts import was_cut

    total, cut = 0.0, 0
    for i, ex in enumerate(examples):
        c = policy.generate_group(
            ex,
            1,
            max_new_tokens=max_new_tokens,
            temperature=1.0,
            seed=seed * 10_007 + i,
            stop_after_lines=stop_after_lines,
        )[0]
        cut += was_cut(c, max_new_tokens, stop_after_lines)
        own = [v for v in verifiers if v in ex.verifiers]  # IFEval's prompts carry different instructions
        total += sum(get_verifier(v).score(c.text, ex) for v in own) / max(len(own), 1)
    return {"mean_reward": total / max(len(examples), 1), "truncated": cut / max(len(examples), 1)}


def policy_fingerprint(checkpoint: str) -> str:
    """The first 12 hex digits of the checkpoint's weights' sha256: rebuilds of the slots policy on other CPUs are not
    bit-identical, so a record says which build it trained (the report pairs methods only within one build)."""
    import hashlib

    from mrtpo_viz.names import BUNDLED_POLICY
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    folder = BUNDLED_POLICY_DIR if checkpoint == BUNDLED_POLICY else Path(policy_path(checkpoint))
    files = sorted(folder.glob("*.safetensors"))
    if not files:  # a hub id or a missing folder: no weights to read here
        return ""
    h = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:12]


def arm_examples(arm: dict, split: str) -> list:
    """The arm's task examples, each with the arm's ``add_verifiers`` appended to its rewards (the control arm adds
    a whole-response reward to the slots task)."""
    from dataclasses import replace

    from mrtpo_viz.tasks import load_examples

    extra = tuple(arm.get("add_verifiers", ()))
    examples = load_examples(arm["task"], split)
    return [replace(e, verifiers=tuple(e.verifiers) + extra) for e in examples] if extra else examples


def start_lengths(policy, arm: dict, examples: list, *, samples: int = 4, seed: int = 0) -> dict:
    """Response lengths of ``policy`` sampled as the arm samples (temperature 1, its ``max_new_tokens`` and
    ``stop_after_lines``): the share cut at the budget and the length quantiles, in tokens."""
    from mrtpo_viz.training.rollouts import was_cut

    lengths, cut = [], 0
    for i, ex in enumerate(examples):
        for c in policy.generate_group(
            ex,
            samples,
            max_new_tokens=arm["max_new_tokens"],
            temperature=1.0,
            seed=seed * 100_003 + i,
            stop_after_lines=arm.get("stop_after_lines", 0),
        ):
            lengths.append(len(c.token_ids))
            cut += was_cut(c, arm["max_new_tokens"], arm.get("stop_after_lines", 0))
    lengths.sort()
    n = len(lengths)
    if not n:
        raise ValueError(f"arm {arm['key']!r}: no examples to sample")
    return {
        "max_new_tokens": arm["max_new_tokens"],
        "samples": n,
        "truncated": round(cut / n, 4),
        "median": lengths[n // 2],
        "p99": lengths[min(n - 1, int(0.99 * n))],
        "max": lengths[-1],
    }


def train_one(spec: RunSpec, *, policy=None, threads: int = 1) -> dict:
    """Train one run; returns its record (config, one row per step, held-out rewards at half and full horizon)."""
    import torch

    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.training.config import TrainConfig
    from mrtpo_viz.training.loop import setup_run, train_step

    arm = spec.arm
    torch.set_num_threads(threads)
    method, extra = method_settings(spec.method)
    cfg = TrainConfig(
        task=arm["task"],
        method=method,
        checkpoint=arm["checkpoint"],
        seed=spec.seed,
        steps=arm["steps"],
        lr=spec.lr,
        group_size=arm["group_size"],
        prompts_per_step=arm["prompts_per_step"],
        max_new_tokens=arm["max_new_tokens"],
        stop_after_lines=arm.get("stop_after_lines", 0),
        max_grad_norm=arm.get("max_grad_norm", 1.0),
        threads=threads,
        **extra,
    )
    policy = policy if policy is not None else load_policy(policy_path(arm["checkpoint"]))
    run = setup_run(cfg, arm_examples(arm, "train"), policy)
    heldout = arm_examples(arm, "test")[: arm.get("heldout_prompts", 16)]
    rows, held, t0, cpu0 = [], {}, time.time(), time.process_time()
    half = arm["steps"] // 2
    for step in range(arm["steps"]):
        m = train_step(run, step)
        rows.append(
            {
                "step": step,
                "mean_reward": m.mean_reward,
                "rewards": m.rewards,
                "grad_norm": m.grad_norm,
                "truncated": m.truncated,
                "adv_absmax": m.adv_absmax,
                "mean_length": m.mean_length,
            }
        )
        if step + 1 in (half, arm["steps"]):
            held[str(step + 1)] = heldout_reward(
                run.policy, heldout, run.verifiers, arm["max_new_tokens"], 0, arm.get("stop_after_lines", 0)
            )
    return {
        "run": spec.name,
        "arm": arm["key"],
        "method": spec.method,
        "lr": spec.lr,
        "seed": spec.seed,
        "steps": arm["steps"],
        "max_grad_norm": cfg.max_grad_norm,
        "policy": policy_fingerprint(arm["checkpoint"]),
        "rows": rows,
        "heldout": held,
        "wall_s": round(time.time() - t0, 1),
        "cpu_s": round(time.process_time() - cpu0, 1),
    }


def shard_runs(
    plan: dict,
    phase: str,
    shard: tuple[int, int] = (0, 1),
    *,
    methods: Optional[list[str]] = None,
    arms: Optional[list[str]] = None,
    lrs: Optional[list[float]] = None,
) -> list[RunSpec]:
    """This shard's share of the phase's runs, after choosing ``methods`` (in that order, seed-major), ``arms`` and
    ``lrs``: shards of the same choice are complementary and each gets its share of every method (sharding the whole
    schedule first gave one shard all of a method whenever a seed had an even number of methods)."""
    k, n = shard
    todo = schedule(plan, phase)
    if methods:
        unknown = sorted(set(methods) - {s.method for s in todo})
        if unknown:
            raise ValueError(f"methods {unknown} are not in this phase's schedule")
        todo = sorted((s for s in todo if s.method in methods), key=lambda s: (s.seed, methods.index(s.method)))
    if arms:  # a sitting may take one arm at a time (the plan is unchanged)
        unknown = sorted(set(arms) - {a["key"] for a in plan["arms"]})
        if unknown:
            raise ValueError(f"arms {unknown} are not in the plan")
        todo = [s for s in todo if s.arm["key"] in arms]
    if lrs:  # a sitting may leave some of the grid's rates for later (the plan is unchanged)
        todo = [s for s in todo if any(math.isclose(s.lr, lr) for lr in lrs)]
    return todo[k::n]


def sitting(
    plan: dict,
    phase: str,
    out_dir: Path,
    shard: tuple[int, int] = (0, 1),
    threads: int = 1,
    limit: Optional[int] = None,
    methods: Optional[list[str]] = None,
    log=print,
    lrs: Optional[list[float]] = None,
    arms: Optional[list[str]] = None,
) -> list[Path]:
    """Train this shard's runs that have no result file yet; each finished run is written at once (resumable).

    ``methods`` restricts this sitting to some of the plan's methods, in the given order, seed-major (the most
    needed pairs first when a sitting may be cut short), ``arms`` to some of its arms; the plan itself is
    unchanged."""
    out_dir.mkdir(parents=True, exist_ok=True)
    done = []
    todo = shard_runs(plan, phase, shard, methods=methods, arms=arms, lrs=lrs)
    for spec in todo:
        path = out_dir / f"{spec.name}.json"
        if path.is_file():
            continue
        if limit is not None and len(done) >= limit:
            break
        rec = train_one(spec, threads=threads)
        path.write_text(json.dumps(rec, indent=None, separators=(",", ":")) + "\n")
        done.append(path)
        auc = sum(r["mean_reward"] for r in rec["rows"]) / len(rec["rows"])
        log(f"{spec.name}: auc {auc:.3f}, {rec['cpu_s']:.0f} CPU s, {rec['wall_s']:.0f} s wall")
    return done


def load_runs(out_dir: Path) -> Iterator[dict]:
    for path in sorted(Path(out_dir).glob("*.json")):
        yield json.loads(path.read_text())


def auc(rec: dict) -> float:
    vals = [r["mean_reward"] for r in rec["rows"]]
    return sum(vals) / len(vals) if vals else math.nan
