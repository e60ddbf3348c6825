"""What :class:`~mrtpo_viz.integrations.trl.MRTPOTrainer` logs: a few metrics into TRL's logs, and one parquet
file per generation batch with every completion's tokens, relevance and token advantages.

Files, under a TRL ``output_dir`` (beside TRL's own ``completions/completions_{step:05d}.parquet``):

- ``mrtpo/run.json``: the MRTPO settings of the run (:data:`RUN_FILE`);
- ``mrtpo/tokens_{step:05d}.parquet``: the training generation batch first used by optimizer step ``step``
  (TRL's completions file of that step holds the same completions). With ``steps_per_generation > 1`` or
  ``num_iterations > 1`` one batch serves several steps and has one file, named after the first;
- ``mrtpo/eval_tokens_{step:05d}.parquet``: the evaluation at ``step``, all its batches. A file of its own: TRL
  writes its evaluation at step ``s`` over its training file of step ``s``.

One row per completion (gathered from every process), columns :data:`BASE_COLUMNS` and, per reward ``r``,
``reward/r`` (float, NaN where the reward function returned None), ``relevance/r`` and ``part/r`` (one float per
token: relevance after the control, and the reward's share ``lambda_r w[r, t] Ahat_r / scale`` of the token
advantage). Files are written to a temporary name and moved into place, so a reader never sees half a file.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from collections.abc import Sequence

import torch

from ..atomic import atomic_path, write_text

LOG_DIR = "mrtpo"
RUN_FILE = "run.json"
TOKEN_FILE = "tokens_{step:05d}.parquet"
EVAL_TOKEN_FILE = "eval_tokens_{step:05d}.parquet"
BASE_COLUMNS = (
    "step",
    "mode",
    "row",
    "group",
    "id",
    "prompt",
    "messages",
    "completion",
    "completion_ids",
    "tokens",
    "trained",
    "advantage",
    "token_advantages",
)
"""``row``/``group``: index of the completion and of its prompt's group in the gathered batch; ``messages``: the
prompt as a JSON list of chat messages, ``prompt`` its last user message; ``completion_ids``/``tokens``: the sampled
ids (up to and including the end-of-sequence token) and their display text; ``trained``: whether any of its tokens
entered the loss (``mask_truncated_completions`` drops truncated ones); ``advantage``: TRL's GDPO sequence advantage;
``token_advantages``: what the loss used, per token."""
TOP_SHARE = 0.1
"""Weight concentration: the share of a response's MRTPO weight that sits on its top 10% tokens (0.1 = uniform)."""


def reward_column(name: str) -> str:
    return f"reward/{name}"


def relevance_column(name: str) -> str:
    return f"relevance/{name}"


def part_column(name: str) -> str:
    return f"part/{name}"


def token_file(step: int, mode: str = "train") -> str:
    """The file name of a step's token log (``mode`` ``"train"`` or ``"eval"``)."""
    return (EVAL_TOKEN_FILE if mode == "eval" else TOKEN_FILE).format(step=int(step))


# ----------------------------------------------------------------------------------------------- metrics


def top_share(weights: torch.Tensor, mask: torch.Tensor, frac: float = TOP_SHARE) -> torch.Tensor:
    """``(B, K)`` share of each response's weight on its ``ceil(frac * L)`` heaviest tokens (NaN for no tokens).

    Args:
        weights: ``(B, K, T)`` non-negative token weights; mask: ``(B, T)`` 1 on the response's tokens.
    """
    B, K, T = weights.shape
    L = mask.sum(-1)  # (B,)
    n = (L * frac - 1e-6).ceil().clamp(min=1).long()  # (B,); 1e-6: 30 * 0.1 is 3.0000000000000004
    ordered = torch.where(mask[:, None] > 0, weights, 0.0).sort(-1, descending=True).values  # (B, K, T)
    top = ordered.cumsum(-1).gather(-1, (n - 1)[:, None, None].expand(B, K, 1))[..., 0]  # (B, K)
    total = ordered.sum(-1)
    return torch.where((L > 0)[:, None] & (total > 0), top / total.clamp(min=1e-30), math.nan)


def batch_sums(
    names: Sequence[str],
    relevance: torch.Tensor,
    weights: torch.Tensor,
    mask: torch.Tensor,
    token_adv: torch.Tensor,
    seq_adv: torch.Tensor,
) -> dict[str, tuple[float, float]]:
    """Metric name -> (sum, count) over this process's rows, to be added up across processes.

    ``mrtpo/relevance/<r>/mean`` (over loss tokens), ``mrtpo/weights/<r>/top10_share`` (per response),
    ``mrtpo/token_advantage/within_std`` (per response: how far the token advantages spread around their mean,
    0 under GDPO), ``mrtpo/token_advantage/mean_minus_trl`` (largest ``|token mean - TRL's advantage|``, as a sum
    over one row so that the mean across processes is an average of maxima).

    Args:
        relevance, weights: ``(B, K, T)``; mask, token_adv: ``(B, T)``; seq_adv: ``(B,)``.
    """
    m = mask.to(torch.float64)
    n_tok, rows = float(m.sum()), m.sum(-1) > 0  # loss tokens, responses with any
    out = {}
    share = top_share(weights.double(), m)  # (B, K)
    for k, name in enumerate(names):
        out[f"mrtpo/relevance/{name}/mean"] = (float((relevance[:, k].double() * m).sum()), n_tok)
        valid = ~share[:, k].isnan()
        out[f"mrtpo/weights/{name}/top10_share"] = (float(share[valid, k].sum()), float(valid.sum()))
    L = m.sum(-1).clamp(min=1)
    mean = (token_adv.double() * m).sum(-1) / L  # (B,)
    var = (((token_adv.double() - mean[:, None]) ** 2) * m).sum(-1) / L
    out["mrtpo/token_advantage/within_std"] = (float(var.sqrt()[rows].sum()), float(rows.sum()))
    gap = (mean - seq_adv.double())[rows].abs()
    out["mrtpo/token_advantage/mean_minus_trl"] = (float(gap.max()) if gap.numel() else 0.0, 1.0)
    return out


# ----------------------------------------------------------------------------------------------- the table


def completion_rows(
    *,
    step: int,
    mode: str,
    first_row: int,
    num_generations: int,
    names: Sequence[str],
    ids: Sequence[list[int]],
    tokens: Sequence[list[str]],
    texts: Sequence[str],
    example_ids: Sequence[str],
    prompts: Sequence[str],
    messages: Sequence[str],
    trained: Sequence[bool],
    rewards: torch.Tensor,
    relevance: torch.Tensor,
    parts: torch.Tensor,
    advantage: torch.Tensor,
    token_advantages: torch.Tensor,
) -> list[dict]:
    """One record per completion of this process (B rows starting at global row ``first_row``).

    Args:
        ids, tokens: B lists of the logged tokens (length ``L_b``); rewards: ``(B, K)``; relevance, parts:
            ``(B, K, T)``; advantage: ``(B,)``; token_advantages: ``(B, T)`` (the first ``L_b`` are logged).
    """
    rel, par, adv = relevance.tolist(), parts.tolist(), token_advantages.tolist()
    out = []
    for b, row_ids in enumerate(ids):
        L, row = len(row_ids), first_row + b
        rec = {
            "step": int(step),
            "mode": mode,
            "row": row,
            "group": row // num_generations,
            "id": example_ids[b],
            "prompt": prompts[b],
            "messages": messages[b],
            "completion": texts[b],
            "completion_ids": [int(i) for i in row_ids],
            "tokens": list(tokens[b]),
            "trained": bool(trained[b]),
            "advantage": float(advantage[b]),
            "token_advantages": adv[b][:L],
        }
        for k, name in enumerate(names):
            rec[reward_column(name)] = float(rewards[b, k])
            rec[relevance_column(name)] = rel[b][k][:L]
            rec[part_column(name)] = par[b][k][:L]
        out.append(rec)
    return out


def write_table(rows: Sequence[dict], path: str | os.PathLike) -> Path:
    """Write the records as one parquet file atomically (:func:`mrtpo_viz.atomic.atomic_path`)."""
    import pandas as pd

    with atomic_path(path) as tmp:
        pd.DataFrame(list(rows)).to_parquet(tmp, index=False)
    return Path(path)


def write_json(data: dict, path: str | os.PathLike) -> Path:
    """Write a JSON file atomically."""
    import json

    return write_text(path, json.dumps(data, indent=2, sort_keys=True))
