"""What :class:`~mrtpo_viz.integrations.trl.MRTPOTrainer` does with one of TRL's generation batches, without TRL.

- **Datasets and rewards.** :func:`trl_dataset` turns :class:`~mrtpo_viz.tasks.Example` s into TRL's columns
  (``prompt`` as chat messages, ``task``, ``id``, ``meta`` as a JSON object string: a dataset of dicts whose keys
  differ would give every row the union of the keys, filled with None). :func:`reward_function` gives TRL a
  verifier as a reward function named after it; a TRL reward wrapped by ``Verifier.from_trl`` is called as is.
- **The replay.** :func:`batch_relevance` replays the rows of a batch with and without each verifier's information
  with the trainer's own model (:func:`replay_policy`): consecutive rows with the same dataset row are one group
  (TRL's sampler repeats each prompt ``num_generations`` times in a row), replayed at once by
  :func:`mrtpo_viz.training.group_replay.group_relevance` (shared prefix, the exact sampled token ids). The
  no-information context must be the one TRL sampled from: a prompt whose ids differ from TRL's is refused.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Optional
from collections.abc import Callable, Sequence

import torch

from ..policy import Policy
from ..tasks import Example, Verifier, get_verifier
from ..tasks.base import as_trl_reward, example_from_row
from ..training.group_replay import group_relevance


def trl_dataset(examples: Sequence[Example]):
    """A ``datasets.Dataset`` of TRL's columns for these examples: ``prompt`` (messages), ``task``, ``id``, ``meta``
    and ``verifiers`` (the example's reward names: a reward it does not list gives None on its rows, as the
    project's loop leaves it out, even where the check could score any text, e.g. IFEval's kwarg-free checks)."""
    from datasets import Dataset

    if not examples:
        raise ValueError("give at least one example")
    return Dataset.from_dict(
        {
            "prompt": [ex.messages() for ex in examples],
            "task": [ex.task for ex in examples],
            "id": [ex.id for ex in examples],
            "meta": [json.dumps(ex.meta, sort_keys=True) for ex in examples],
            "verifiers": [list(ex.verifiers) for ex in examples],
        }
    )


def resolve_rewards(rewards) -> list[Verifier]:
    """MRTPOTrainer's ``reward_funcs``: verifiers or registered verifier names (a TRL reward function needs its
    information: wrap it with ``Verifier.from_trl(fn, name=..., info=...)``)."""
    rewards = list(rewards) if isinstance(rewards, (list, tuple)) else [rewards]
    out = []
    for r in rewards:
        if isinstance(r, str):
            r = get_verifier(r)
        if not isinstance(r, Verifier):
            raise ValueError(
                f"MRTPOTrainer's reward_funcs must be Verifiers or verifier names, got {r!r}: wrap a TRL "
                "reward function with Verifier.from_trl(fn, name=..., info=...) to give it its "
                "verifier information (a reward model has none)"
            )
        out.append(r)
    if not out:
        raise ValueError("MRTPOTrainer needs at least one reward (a Verifier)")
    if len({v.name for v in out}) != len(out):
        raise ValueError(f"reward names repeat: {[v.name for v in out]}")
    return out


def reward_function(verifier: Verifier) -> Callable:
    """The TRL reward function of a verifier, ``__name__`` = the verifier's name (TRL's log column)."""
    fn = verifier.trl_reward
    if fn is None:
        return as_trl_reward(verifier)
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):  # noqa: B004 (an async __call__)

        async def reward(*args, **kwargs):
            return await fn(*args, **kwargs)
    else:

        def reward(*args, **kwargs):
            return fn(*args, **kwargs)

    reward.__name__ = reward.__qualname__ = verifier.name
    return reward


def replay_policy(model, tokenizer, device) -> Policy:
    """Our :class:`~mrtpo_viz.policy.Policy` view of a trainer's (unwrapped) model and tokenizer."""
    dtype = next(model.parameters()).dtype
    name = getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__
    return Policy(model=model, tokenizer=tokenizer, name=str(name), device=torch.device(device), dtype=dtype)


def row_examples(inputs: Sequence[dict[str, Any]]) -> list[Example]:
    """TRL's batch rows as examples; a prompt must be chat messages (the information goes into a message)."""
    out = []
    for row in inputs:
        if not isinstance(row.get("prompt"), list):
            raise ValueError(
                "MRTPOTrainer needs conversational prompts ([{'role': 'user', 'content': ...}]): the "
                "verifier information is inserted into a message of the prompt, and TRL tokenizes a "
                "plain-text prompt without a chat template (see mrtpo_viz.integrations.trl.trl_dataset)"
            )
        out.append(example_from_row(row))
    return out


def response_lengths(completion_ids: torch.Tensor, mask: torch.Tensor) -> list[int]:
    """Tokens of each row to replay: its loss tokens, or the whole row where the mask dropped it (a truncated
    completion under ``mask_truncated_completions``) so that the log still shows it."""
    n = mask.sum(1).tolist()
    return [int(k) if k > 0 else int(completion_ids.shape[1]) for k in n]


def batch_relevance(
    policy: Policy,
    examples: Sequence[Example],
    completion_ids: torch.Tensor,
    lengths: Sequence[int],
    verifiers: Sequence[Verifier],
    prompt_ids: Optional[list[list[int]]] = None,
    *,
    metric: str = "js",
    control: str = "none",
    info_position: str = "user_end",
    pool: Optional[Sequence[Example]] = None,
    applies: Optional[torch.Tensor] = None,
    one_context: bool = False,
):
    """Relevance ``(B, K, T)`` of each row's first ``lengths[b]`` completion ids to each verifier (0 beyond).

    Args:
        examples: B examples, equal for the rows of one group (consecutive).
        completion_ids: ``(B, T)`` the exact sampled ids (right-padded).
        prompt_ids: B lists of the ids TRL sampled from (checked against the replay's no-information context).
        applies: ``(B, K)`` bool, False where a verifier's reward is None for a row (it does not apply, e.g. an
            IFEval constraint the prompt lacks): such a verifier gets no branch in a group where it applies to no
            row, so its information is never asked for, and its relevance is 0 on the rows it does not apply to.
            Default: every verifier applies to every row.
        one_context: also replay one branch holding every applicable verifier's information (the ``one_context``
            credit method), in the same batch; its metric is returned as a second ``(B, T)`` tensor.
    """
    B, T = completion_ids.shape
    K = len(verifiers)
    out, one = torch.zeros(B, K, T), torch.zeros(B, T)
    applies = torch.ones(B, K, dtype=torch.bool) if applies is None else torch.as_tensor(applies, dtype=torch.bool)
    if applies.shape != (B, K):
        raise ValueError(f"applies must be (B, K) = ({B}, {K}), got {tuple(applies.shape)}")
    ids = completion_ids.tolist()
    for rows in _groups_of(examples):
        ex = examples[rows[0]]
        ks = [k for k in range(K) if bool(applies[rows.start : rows.stop, k].any())]  # this group's branches
        if not ks:  # no reward applies to the group (unscorable rows): nothing to replay, advantage 0
            continue
        if prompt_ids is not None:
            check_prompt(policy, ex, prompt_ids[rows[0]])
        responses = [ids[b][: lengths[b]] for b in rows]
        scores = group_relevance(
            policy,
            ex,
            responses,
            [verifiers[k] for k in ks],
            metric=metric,
            control=control,
            info_position=info_position,
            pool=pool,
            one_context=one_context,
        )  # (G, K', T')
        if one_context:
            scores, one_g = scores  # (G, K', T'), (G, T')
            one[rows.start : rows.stop, : one_g.shape[-1]] = one_g
        out[rows.start : rows.stop, ks, : scores.shape[-1]] = scores
    out = out * applies[:, :, None]  # a row a verifier does not apply to gets none of its relevance
    return (out, one) if one_context else out


def _groups_of(examples: Sequence[Example]) -> list[range]:
    groups, start = [], 0
    for i in range(1, len(examples) + 1):
        if i == len(examples) or examples[i] != examples[start]:
            groups.append(range(start, i))
            start = i
    return groups


def check_prompt(policy: Policy, example: Example, sampled_ids: Sequence[int]) -> None:
    """Refuse a replay whose no-information prompt is not the one TRL sampled from (another chat template, a
    ``chat_template_kwargs`` our rendering does not apply, a tokenizer that adds a BOS): its relevance would
    compare two contexts neither of which the policy saw."""
    ours = policy.chat_ids(example.messages())
    if list(ours) != list(sampled_ids):
        first = next((i for i, (a, b) in enumerate(zip(ours, sampled_ids)) if a != b), min(len(ours), len(sampled_ids)))
        raise ValueError(
            f"the replay's prompt differs from the one TRL sampled from ({len(ours)} vs "
            f"{len(sampled_ids)} tokens, first difference at token {first}"
            "): MRTPOTrainer renders prompts with the tokenizer's own chat template and no "
            "chat_template_kwargs"
        )
