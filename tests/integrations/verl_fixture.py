"""A verl rollout dump written the way verl writes one, from completions the bundled policy samples.

    python tests/integrations/verl_fixture.py OUT_FOLDER

:func:`dump_generations` copies ``RayPPOTrainer._dump_generations`` (verl/trainer/ppo/ray_trainer.py, verl
0.8.0.dev, commit b178a3c); :func:`write_verl_dump` feeds it what ``_log_rollout_data`` does: prompts and responses
decoded with ``skip_special_tokens=True``, ``gts`` from ``reward_model.ground_truth``, ``score`` the sum of the
token-level scores, and the reward function's extra information (``compute_score`` below returns a dict, as
verl's custom reward functions may: its entries other than ``score`` are the per-reward keys). Each prompt is
repeated ``n`` times in a row, as ``batch.repeat(repeat_times=n, interleave=True)`` does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

SYSTEM = "Answer briefly."
PROMPTS = [("What is the capital of France?", "Paris"), ("Name a primary color.", "red")]


def compute_score(data_source, solution_str, ground_truth, extra_info=None) -> dict:
    """A verl custom reward function (``custom_reward_function.path``) returning a dict."""
    words = set(solution_str.lower().split())
    acc = float(ground_truth.lower() in solution_str.lower())
    fmt = float(len(solution_str.split()) <= 8)
    overlap = sum(ch in solution_str.lower() for ch in ground_truth.lower()) / len(ground_truth)
    return {
        "score": acc + 0.5 * fmt + 0.25 * overlap,
        "acc": acc,
        "format": fmt,
        "overlap": overlap,
        "pred": sorted(words)[0] if words else "",
    }  # a text entry: not a reward


def dump_generations(global_steps, inputs, outputs, gts, scores, reward_extra_infos_dict, dump_path):
    """verl's ``_dump_generations``, with ``self.global_steps`` as an argument."""
    os.makedirs(dump_path, exist_ok=True)
    filename = os.path.join(dump_path, f"{global_steps}.jsonl")
    n = len(inputs)
    base_data = {"input": inputs, "output": outputs, "gts": gts, "score": scores, "step": [global_steps] * n}
    for k, v in reward_extra_infos_dict.items():
        if len(v) == n:
            base_data[k] = v
    lines = []
    for i in range(n):
        entry = {k: v[i] for k, v in base_data.items()}
        lines.append(json.dumps(entry, ensure_ascii=False))
    with open(filename, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_verl_dump(folder, steps: int = 2, n: int = 4, max_new_tokens: int = 10, seed: int = 0) -> Path:
    """Sample ``n`` responses per prompt with the bundled policy for each step and dump them as verl does."""
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    policy = load_policy(str(BUNDLED_POLICY_DIR))
    tok, model = policy.tokenizer, policy.model
    torch.manual_seed(seed)
    for step in range(1, steps + 1):
        inputs, outputs, gts, extra = [], [], [], {}
        for question, truth in PROMPTS:
            ids = policy.chat_ids([{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}])
            prompt = torch.tensor([ids] * n)
            with torch.no_grad():
                out = model.generate(
                    prompt,
                    attention_mask=torch.ones_like(prompt),
                    do_sample=True,
                    top_k=0,
                    max_new_tokens=max_new_tokens,
                    pad_token_id=tok.pad_token_id,
                )
            for row in out:
                inputs.append(tok.decode(row[: len(ids)], skip_special_tokens=True))
                outputs.append(tok.decode(row[len(ids) :], skip_special_tokens=True))
                gts.append(truth)
        for text, truth in zip(outputs, gts):
            for k, v in compute_score("fixture", text, truth).items():
                extra.setdefault(k, []).append(v)
        dump_generations(step, inputs, outputs, gts, list(extra["score"]), extra, str(folder))
    return Path(folder)


if __name__ == "__main__":
    print(write_verl_dump(Path(sys.argv[1])))
