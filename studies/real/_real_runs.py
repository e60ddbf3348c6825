"""One run of the real-model arm (the project's loop, ``mrtpo_viz.training``) and the held-out evaluation.

The held-out endpoint is greedy: each held-out prompt's response is decoded greedily (batched, left-padded, through
transformers' ``generate``), and every one of its constraints is checked with the official strict IFEval verdict;
the endpoint is the mean over all (prompt, constraint) pairs."""

from __future__ import annotations

import time
from typing import Optional
from collections.abc import Sequence

import _real_task as task


def heldout_pass(policy, examples: Sequence, max_new_tokens: int, batch: int = 16) -> dict:
    """Greedy responses to ``examples`` scored per constraint: the mean pass rate over (prompt, constraint) pairs,
    per constraint type, the truncated share and the mean length."""
    import torch

    from mrtpo_viz.tasks import get_verifier

    tok, model = policy.tokenizer, policy.model
    pad = policy.pad_id
    eos = tok.eos_token_id
    was_training = model.training
    model.eval()
    passed, kinds, lengths, cut = [], [], [], 0
    try:
        for start in range(0, len(examples), batch):
            chunk = list(examples[start : start + batch])
            prompts = [policy.chat_ids(policy.messages(ex)) for ex in chunk]
            width = max(len(p) for p in prompts)
            ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=policy.device)
            attn = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=policy.device)
            with torch.no_grad():
                out = model.generate(
                    input_ids=ids,
                    attention_mask=attn,
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    temperature=None,
                    top_p=None,
                    top_k=None,
                    pad_token_id=pad,
                    eos_token_id=eos,
                )
            for ex, row in zip(chunk, out[:, width:].tolist()):
                n = row.index(eos) if eos in row else len(row)
                cut += eos not in row
                lengths.append(n)
                text = tok.decode(row[:n], skip_special_tokens=True)
                for v in ex.verifiers:
                    passed.append(int(get_verifier(v).score(text, ex) == 1.0))
                    kinds.append(task.kind(v))
    finally:
        model.train(was_training)
    by_kind = task.pass_rates([{"kinds": kinds, "passed": passed}])
    return {
        "pass_rate": round(sum(passed) / max(len(passed), 1), 6),
        "pairs": len(passed),
        "by_kind": {k: r["rate"] for k, r in by_kind.items()},
        "truncated": round(cut / max(len(examples), 1), 4),
        "mean_length": round(sum(lengths) / max(len(lengths), 1), 2),
    }


def train_one(
    method: str,
    seed: int,
    lr: float,
    settings: dict,
    train: Sequence,
    heldout: Sequence,
    *,
    threads: int = 1,
    eval_at: Optional[Sequence[int]] = None,
    log=print,
    model: str = task.MODEL,
) -> dict:
    """Train one run on ``train`` (``settings``: steps, prompts_per_step, group_size, max_new_tokens,
    temperature, top_p); evaluate on ``heldout`` after the steps in ``eval_at`` (default: half and full horizon).
    Returns its record: one row per step (per-verifier rewards, truncation, lengths, phase seconds), the held-out
    results, wall and CPU seconds. ``model``: the start policy (the CI test trains the bundled one)."""
    import torch

    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.training.config import TrainConfig
    from mrtpo_viz.training.loop import TrainingDiverged, setup_run, train_step

    torch.set_num_threads(threads)
    steps = int(settings["steps"])
    cfg = TrainConfig(
        task="instruction_following",
        method=method,
        checkpoint=model,
        seed=seed,
        steps=steps,
        lr=lr,
        group_size=int(settings["group_size"]),
        prompts_per_step=int(settings["prompts_per_step"]),
        max_new_tokens=int(settings["max_new_tokens"]),
        temperature=float(settings["temperature"]),
        top_p=float(settings.get("top_p", 1.0)),
        threads=threads,
    )
    policy = load_policy(model)
    run = setup_run(cfg, list(train), policy)
    at = sorted(set(eval_at or (steps // 2, steps)))
    rows, held, t0, cpu0 = [], {}, time.time(), time.process_time()
    diverged = None
    for step in range(steps):
        c = time.process_time()
        try:
            m = train_step(run, step)
        except TrainingDiverged as err:  # the plan: the run stops, is evaluated as it stands and stays in
            diverged = {"step": step, "error": str(err)}
            for at_step in at:
                if at_step > step:
                    held[str(at_step)] = heldout_pass(run.policy, heldout, cfg.max_new_tokens)
            break
        rows.append(
            {
                "step": step,
                "mean_reward": m.mean_reward,
                "rewards": m.rewards,
                "all_pass": m.all_pass,
                "grad_norm": m.grad_norm,
                "truncated": m.truncated,
                "mean_length": m.mean_length,
                "adv_absmax": m.adv_absmax,
                "times": m.times,
                "cpu_s": round(time.process_time() - c, 2),
            }
        )
        log(f"{method} seed {seed} step {step + 1}/{steps}: {rows[-1]['cpu_s']} CPU s")
        if step + 1 in at:
            c = time.process_time()
            held[str(step + 1)] = dict(
                heldout_pass(run.policy, heldout, cfg.max_new_tokens), cpu_s=round(time.process_time() - c, 1)
            )
    return {
        "method": method,
        "seed": seed,
        "lr": lr,
        "settings": dict(settings),
        "rows": rows,
        "heldout": held,
        "diverged": diverged,
        "wall_s": round(time.time() - t0, 1),
        "cpu_s": round(time.process_time() - cpu0, 1),
    }
