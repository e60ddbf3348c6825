"""A prime-rl token export written in prime-rl's format, from completions the bundled policy samples.

    python tests/integrations/prime_rl_fixture.py OUT_FOLDER

The format is the one ``TokenExporter`` writes (PrimeIntellect-ai/prime-rl ``src/prime_rl/trainer/rl/
token_export.py``, commit 559b447, schema 1), written here from its description, not its code:
``<output_dir>/token_exports/step_<step>/rank_<rank>.jsonl``, one compact JSON line per sequence that has a loss
token (non-finite floats as null), then a ``STABLE`` file in the step folder. Each line: ``schema_version``,
``step``, ``rank``, ``micro_step``, ``micro_sequence_idx``, ``export_sequence_idx`` (counting the file's lines),
``env_name``, and per-token lists over the whole sequence: ``token_ids``, ``position_ids``, ``loss_mask``,
``advantages``, ``inference_logprobs``, ``trainer_logprobs``, ``entropy``, ``mismatch_kl``,
``log_importance_ratio``, ``importance_ratio``, ``prob_delta``, ``is_masked``, ``is_masked_high``,
``is_masked_low``, ``rl_weights``, ``ce_weights``, ``ref_kl_weights`` (a stream the batch lacks is a list of
nulls). ``log_importance_ratio = trainer - inference``, ``importance_ratio = exp`` of it, ``mismatch_kl = ratio -
log ratio - 1``, ``prob_delta = exp(trainer) - exp(inference)``; the DPPO masks (thresholds 0.2) mark loss tokens
whose ``prob_delta`` leaves the trust region in the direction of their advantage's sign.

Here the trainer's log-probs and entropy come from the bundled policy's forward; the inference engine's are the
trainer's plus seeded noise (an engine's numerics differ a little); each sequence's reward is :func:`_reward`, and
its advantage the group's z-score, on every loss token. Two ranks split each step's groups;
step 2 also carries an ``rl_weights`` stream (half weight on the last token) and a ``ce_weights`` stream.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch

SYSTEM = "Answer briefly."
PROMPTS = [("What is the capital of France?", "Paris", "geo"), ("Name a primary color.", "red", "colors")]
MASK = 0.2
"""DPPO's ``dppo_mask_low`` and ``dppo_mask_high`` defaults."""


def _floats(values) -> list:
    return [float(v) if math.isfinite(v) else None for v in values]


def sequence_record(step, rank, line, prompt_ids, response_ids, advantage, logp, entropy, env, weights=None):
    """One export line for a prompt and its sampled response (the trainer's ``logp`` and ``entropy`` per token)."""
    ids = list(prompt_ids) + list(response_ids)
    T, P = len(ids), len(prompt_ids)
    loss = [t >= P for t in range(T)]
    gen = torch.Generator().manual_seed(1000 * step + 10 * rank + line)
    trainer = torch.tensor(logp, dtype=torch.float64)
    inference = torch.where(torch.tensor(loss), trainer + 0.3 * torch.randn(T, generator=gen, dtype=torch.float64), 0)
    log_ratio = trainer - inference
    ratio = log_ratio.exp()
    delta = trainer.exp() - inference.exp()
    adv = torch.tensor([advantage if m else 0.0 for m in loss], dtype=torch.float64)
    high, low = delta > MASK, delta < -MASK
    loss_t = torch.tensor(loss)
    invalid = torch.where(adv > 0, high, low)
    nulls = [None] * T
    weights = weights or {}
    return {
        "schema_version": 1,
        "step": step,
        "rank": rank,
        "micro_step": 0,
        "micro_sequence_idx": line,
        "export_sequence_idx": line,
        "env_name": env,
        "token_ids": [int(i) for i in ids],
        "position_ids": list(range(T)),
        "loss_mask": loss,
        "advantages": _floats(adv.tolist()),
        "inference_logprobs": _floats(inference.tolist()),
        "trainer_logprobs": _floats(trainer.tolist()),
        "entropy": _floats(entropy),
        "mismatch_kl": _floats((ratio - log_ratio - 1).tolist()),
        "log_importance_ratio": _floats(log_ratio.tolist()),
        "importance_ratio": _floats(ratio.tolist()),
        "prob_delta": _floats(delta.tolist()),
        "is_masked": (loss_t & invalid).tolist(),
        "is_masked_high": (loss_t & (adv > 0) & high).tolist(),
        "is_masked_low": (loss_t & (adv < 0) & low).tolist(),
        "rl_weights": weights.get("rl", nulls),
        "ce_weights": weights.get("ce", nulls),
        "ref_kl_weights": weights.get("ref_kl", nulls),
    }


def _reward(text: str, truth: str) -> float:
    """Whether the answer names the truth, with partial credit for the truth's letters it holds (the bundled
    policy rarely names it in ten tokens: the group's advantages still differ)."""
    return float(truth.lower() in text.lower()) + sum(ch in text.lower() for ch in truth.lower()) / len(truth)


def write_lines(folder, step: int, rank: int, records: list[dict]) -> Path:
    path = Path(folder) / "token_exports" / f"step_{step}" / f"rank_{rank}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, separators=(",", ":"), allow_nan=False) + "\n")
    return path


def _trainer_values(model, ids: list[int]) -> tuple[list[float], list[float]]:
    """Per token: the log-prob of the token given those before it, and the entropy of that distribution (the
    first token has no prediction: 0)."""
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, :-1].double()
    logp_all = logits.log_softmax(-1)
    logp = logp_all.gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return [0.0] + logp.tolist(), [0.0] + entropy.tolist()


def write_prime_rl_export(folder, steps: int = 2, n: int = 4, max_new_tokens: int = 10, seed: int = 0) -> Path:
    """Sample ``n`` responses per prompt with the bundled policy for each step and export them as prime-rl does:
    group ``g`` goes to rank ``g % 2``."""
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    policy = load_policy(str(BUNDLED_POLICY_DIR))
    tok, model = policy.tokenizer, policy.model
    torch.manual_seed(seed)
    for step in range(1, steps + 1):
        lines: dict[int, list[dict]] = {0: [], 1: []}
        for g, (question, truth, env) in enumerate(PROMPTS):
            prompt_ids = policy.chat_ids([{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}])
            prompt = torch.tensor([prompt_ids] * n)
            with torch.no_grad():
                out = model.generate(
                    prompt,
                    attention_mask=torch.ones_like(prompt),
                    do_sample=True,
                    top_k=0,
                    max_new_tokens=max_new_tokens,
                    pad_token_id=tok.pad_token_id,
                )
            responses = [row[len(prompt_ids) :].tolist() for row in out]
            eos = tok.eos_token_id  # the response ends with its end-of-turn token; padding after it is not exported
            responses = [r[: r.index(eos) + 1] if eos in r else r for r in responses]
            rewards = torch.tensor([_reward(tok.decode(r, skip_special_tokens=True), truth) for r in responses])
            adv = ((rewards - rewards.mean()) / (rewards.std() + 1e-6)).tolist()
            for response, a in zip(responses, adv):
                logp, entropy = _trainer_values(model, prompt_ids + response)
                T = len(prompt_ids) + len(response)
                weights = {}
                if step == 2:
                    weights["rl"] = [1.0] * (T - 1) + [0.5]
                    weights["ce"] = [0.0] * len(prompt_ids) + [0.1] * len(response)
                rank = g % 2
                rec = sequence_record(
                    step, rank, len(lines[rank]), prompt_ids, response, a, logp, entropy, env, weights
                )
                lines[rank].append(rec)
        for rank, records in lines.items():
            write_lines(folder, step, rank, records)
        (Path(folder) / "token_exports" / f"step_{step}" / "STABLE").touch()
    return Path(folder)


if __name__ == "__main__":
    print(write_prime_rl_export(Path(sys.argv[1])))
