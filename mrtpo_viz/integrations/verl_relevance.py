"""MRTPO's relevance step inside verl: the replay of each rollout on the actor's own model, and the data it needs.

What a verl batch holds and what this module adds (verl 0.9.1):

- **The prompt and the verifiers travel in ``extra_info``.** verl's legacy trainer keeps only ``data_source``,
  ``reward_model``, ``extra_info`` and ``uid`` of a dataset row beside the generation (``_get_gen_batch``), so
  :func:`verl_row` writes the chat messages, the task, the example's ``meta`` and the verifier names into
  ``extra_info["mrtpo"]`` as one JSON string (a parquet column of dicts with differing keys would get the union
  of the keys in every row). The reward function (:func:`compute_score`) and the relevance step read it back.
- **The same branches as the project's replay.** Each row's response ids (``batch["responses"]``, exactly what
  verl sampled) are replayed with and without each verifier's information by
  :func:`mrtpo_viz.integrations.trl_batch.batch_relevance` (the TRL integration's step: one group forward per
  prompt, the response ids identical in every branch); the replay's no-information context must equal the ids
  verl sampled from (``batch["prompts"]`` without its left padding), else it refuses.
- **The K order is ``algorithm.gdpo_reward_keys``**, which are verifier names here (``tool_call.format``, ...), so
  the estimator (:mod:`.verl_mrtpo`) pairs each relevance row with the score of the same key.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Optional

import torch

from ..policy import Policy
from ..tasks import Example, get_verifier
from .trl_batch import batch_relevance, replay_policy

INFO_KEY = "mrtpo"
"""``extra_info[INFO_KEY]``: a JSON object ``{"messages", "task", "id", "meta", "verifiers"}`` per dataset row."""


def verl_row(example: Example, verifiers: Sequence[str]) -> dict[str, Any]:
    """One row of a verl RL dataset (the parquet columns ``RLHFDataset`` reads) for ``example`` and its verifiers.

    ``prompt`` is the chat messages (verl applies the tokenizer's chat template with the generation prompt);
    ``reward_model.ground_truth`` is empty: the verifiers read ``meta`` instead.
    """
    names = [get_verifier(n).name for n in verifiers]  # unknown names fail here, not in the middle of a run
    payload = {"messages": example.messages(), "task": example.task, "id": example.id, "meta": example.meta}
    return {
        "data_source": f"mrtpo_viz/{example.task}",
        "prompt": example.messages(),
        "ability": example.task,
        "reward_model": {"style": "rule", "ground_truth": ""},
        "extra_info": {INFO_KEY: json.dumps({**payload, "verifiers": names})},
    }


def row_example(extra_info: Any) -> tuple[Example, list[str]]:
    """The example and verifier names :func:`verl_row` wrote into a row's ``extra_info``."""
    if not isinstance(extra_info, dict) or not isinstance(extra_info.get(INFO_KEY), str):
        raise ValueError(f"the row's extra_info has no {INFO_KEY!r} entry: write the dataset with verl_row()")
    d = json.loads(extra_info[INFO_KEY])
    return Example(task=d["task"], prompt=d["messages"], meta=d["meta"], id=d["id"]), list(d["verifiers"])


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict[str, float]:
    """verl's custom reward function (``reward.custom_reward_function``): one entry per verifier of the row, and
    ``score``, their sum (verl's scalar reward; the per-verifier entries reach ``non_tensor_batch`` as GDPO reads them).
    """
    example, names = row_example(extra_info)
    scores = {n: float(get_verifier(n).check(solution_str, example).score) for n in names}
    return {"score": sum(scores.values()), **scores}


def sampled_prompt_ids(prompts: torch.Tensor, attention_mask: torch.Tensor) -> list[list[int]]:
    """verl's left-padded ``(B, P)`` prompts without their padding (``attention_mask``'s first P columns)."""
    P = prompts.shape[1]
    keep = attention_mask[:, :P].bool()
    return [row[k].tolist() for row, k in zip(prompts, keep)]


def relevance_step(
    policy: Policy,
    data,
    verifiers: Sequence[str],
    *,
    metric: str = "js",
    control: str = "none",
    info_position: str = "user_end",
) -> torch.Tensor:
    """Relevance ``(B, K, T)`` of each rollout of a verl ``DataProto`` to each verifier, 0 on padding.

    Args:
        policy: the actor's model and tokenizer as a :class:`~mrtpo_viz.policy.Policy` (:func:`actor_policy`).
        data: verl's batch after generation: ``batch["prompts"]`` ``(B, P)`` left-padded, ``batch["responses"]``
            ``(B, T)``, ``batch["attention_mask"]`` ``(B, P + T)``, ``non_tensor_batch["extra_info"]``.
        verifiers: the K verifier names, in the order of ``algorithm.gdpo_reward_keys``.
        metric, control, info_position: as :func:`mrtpo_viz.replay`.
    """
    batch = data.batch
    responses, attention = batch["responses"], batch["attention_mask"]
    B, T = responses.shape
    mask = batch["response_mask"] if "response_mask" in batch.keys() else attention[:, -T:]
    mask = mask.to(torch.bool).cpu()  # (B, T)
    examples = [row_example(e)[0] for e in data.non_tensor_batch["extra_info"]]
    lengths = mask.sum(1).clamp_min(1).tolist()  # an empty response replays one token, then masked to 0
    rel = batch_relevance(
        policy,
        examples,
        responses.cpu(),
        lengths,
        [get_verifier(n) for n in verifiers],
        sampled_prompt_ids(batch["prompts"].cpu(), attention.cpu()),
        metric=metric,
        control=control,
        info_position=info_position,
    )  # (B, K, T)
    return rel * mask[:, None]


def actor_policy(model, tokenizer, device: Optional[torch.device] = None) -> Policy:
    """The actor worker's (FSDP-wrapped) module and tokenizer as a Policy for :func:`relevance_step`."""
    if device is None:
        device = next(model.parameters()).device
    return replay_policy(model, tokenizer, device)
