"""One completion of a TRL run as the token view shows it: from the per-token log, or replayed on demand.

- An MRTPO run logged every completion's tokens, relevance and token advantages (:mod:`.trl_log`):
  :func:`logged_view` turns one record into a :class:`~mrtpo_viz.relevance.Relevance` and an
  :class:`~mrtpo_viz.viz.AdvantageBreakdown`, with nothing recomputed.
- A plain TRL run (GRPO, GDPO) logged only text and rewards: :func:`replayed_view` replays the completion with a
  checkpoint (the response is re-tokenized from its text, so its ids may differ from the sampled ones) and each
  reward's information, then computes what MRTPO would have given it within its logged step (the step's rewards
  set the group and batch statistics, :func:`mrtpo_viz.advantages.mrtpo_token_parts`).
  :func:`guess_infos` fills the information of rewards that are registered verifiers when the prompt is one of
  the bundled examples; :func:`record_infos` falls back to what the row's run format holds (a verl row's ground
  truth, ``gts``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Optional
from collections.abc import Sequence

import torch

from ..advantages import mrtpo_token_parts
from ..relevance import Relevance
from ..relevance.engine import replay
from ..relevance.scoring import info_verifier
from ..names import TASKS
from ..tasks import VERIFIERS, load_examples
from ..viz import AdvantageBreakdown
from . import trl_log


@dataclass(frozen=True)
class CompletionView:
    """What the Runs view draws for one completion."""

    relevance: Relevance
    breakdown: AdvantageBreakdown
    source: str
    """``"logged"`` (the run's per-token log) or ``"replayed"`` (on demand, with a checkpoint)."""


def logged_view(record: dict, names: Sequence[str], metric: str = "js", control: str = "none") -> CompletionView:
    """A per-token log record (:func:`.run_view.completion_record`) as a token view, nothing recomputed."""
    if "token_advantages" not in record:
        raise ValueError("this completion has no per-token log (a plain TRL run): replay it with a checkpoint")
    scores = torch.tensor([list(record[trl_log.relevance_column(n)]) for n in names], dtype=torch.float32)
    K, T = scores.shape
    rel = Relevance(
        tokens=list(record["tokens"]),
        token_ids=[int(i) for i in record["completion_ids"]],
        verifiers=list(names),
        scores=scores,
        raw_scores=scores,
        metric=metric,
        control=control,
        response="".join(record["tokens"]),
        rewards=_rewards(record, names),
    )
    parts = torch.tensor([list(record[trl_log.part_column(n)]) for n in names], dtype=torch.float32).view(K, T)
    mrtpo = torch.tensor(list(record["token_advantages"]), dtype=torch.float32)
    br = AdvantageBreakdown(
        float(record["advantage"]), mrtpo, parts, mrtpo - parts.sum(0), torch.empty(0, K), torch.empty(0)
    )
    return CompletionView(rel, br, "logged")


def _rewards(record: dict, names: Sequence[str]) -> dict[str, float]:
    out = {}
    for n in names:
        v = record.get(trl_log.reward_column(n))
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            out[n] = float(v)
    return out


def guess_infos(messages: list[dict], names: Sequence[str]) -> dict[str, str]:
    """Information of the rewards that are registered verifiers, from the bundled example with this prompt."""
    known = [n for n in names if n in VERIFIERS]
    if not known:
        return {}
    for task in TASKS:
        for split in ("train", "test"):
            try:
                examples = load_examples(task, split=split)
            except (FileNotFoundError, ValueError):
                continue
            ex = next((e for e in examples if e.messages() == messages), None)
            if ex is not None:
                return {n: VERIFIERS[n].info(ex) for n in known}
    return {}


def record_infos(record: dict, names: Sequence[str], fmt=None) -> dict[str, str]:
    """The information to prefill for a replay: a bundled example's (:func:`guess_infos`), else what the row of its
    run format holds (:attr:`.run_formats.RunFormat.infos`: a verl dump's ground truth), else none."""
    infos = guess_infos(json.loads(record["messages"]), names)
    if not infos and fmt is not None and fmt.infos is not None:
        try:
            infos = fmt.infos(record, list(names))
        except ValueError:
            infos = {}
    return infos


def parse_infos(text: str, names: Sequence[str]) -> dict[str, str]:
    """``name: information`` lines (one per reward) -> dict; a reward without a line gets no information block.
    A run that logged no rewards (``names`` empty: a prime-rl export) takes the names typed, at most
    :data:`~.run_files.MAX_REWARDS` of at most 200 characters."""
    from .run_files import MAX_REWARDS

    out, unknown = {}, []
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not names:
        names = [n for line in lines if (n := line.partition(":")[0].strip()) and len(n) <= 200][:MAX_REWARDS]
    for line in lines:
        name, sep, info = line.partition(":")
        if not sep or name.strip() not in names:
            unknown.append(name.strip() if sep else line.strip()[:40])
            continue
        out[name.strip()] = info.strip()
    if unknown:
        raise ValueError(
            f"information lines must read 'reward: text' for a reward of this run "
            f"({', '.join(names)}); not understood: {', '.join(map(repr, unknown))}"
        )
    if not any(out.values()):
        raise ValueError("give at least one reward's information ('reward: text', one line per reward)")
    return out


ad_hoc_verifier = info_verifier
"""A reward of a logged run as a verifier that only carries its information (:func:`~mrtpo_viz.relevance.scoring.
info_verifier`)."""


def replayed_relevance(policy, messages: list[dict], response, infos: dict[str, str], **replay_kw) -> Relevance:
    """A logged response (text or the exact ids) replayed with each reward's given information."""
    return replay(
        policy, messages, response, [ad_hoc_verifier(n, i) for n, i in infos.items()], infos=dict(infos), **replay_kw
    )


def replayed_view(
    policy,
    frame,
    record: dict,
    names: Sequence[str],
    infos: dict[str, str],
    *,
    weights: Optional[Sequence[float]] = None,
    alpha: float = 1.0,
    gamma: float = 1.0,
    metric: str = "js",
    control: str = "none",
    info_position: str = "user_end",
) -> CompletionView:
    """Replay one logged completion with ``policy`` and the given information; MRTPO's advantages within its step.

    Args:
        frame: the step's completions (:func:`.run_view.step_frame`): their rewards set the statistics.
        record: the completion (a row of ``frame``); infos: reward name -> information text.
    """
    messages = json.loads(record["messages"])
    verifiers = [ad_hoc_verifier(n, infos.get(n, "")) for n in names]
    rel = replay(
        policy,
        messages,
        record["completion"],
        verifiers,
        infos={n: infos.get(n, "") for n in names},
        metric=metric,
        control=control,
        info_position=info_position,
    )
    rel.rewards = _rewards(record, names)
    return CompletionView(rel, step_breakdown(frame, record, names, rel.scores, weights, alpha, gamma), "replayed")


def step_breakdown(
    frame,
    record: dict,
    names: Sequence[str],
    relevance: torch.Tensor,
    weights=None,
    alpha: float = 1.0,
    gamma: float = 1.0,
) -> AdvantageBreakdown:
    """MRTPO's advantages of one completion whose relevance is ``relevance`` ``(K, T)``, within its step's batch.

    Other rows' relevance does not change this row's advantages, so they get uniform relevance.
    """
    groups = frame["group"].tolist()
    sizes = {g: groups.count(g) for g in set(groups)}
    if len(set(sizes.values())) != 1:
        raise ValueError("the step's groups differ in size; its MRTPO advantages are not defined here")
    G, K, T = next(iter(sizes.values())), len(names), relevance.shape[-1]
    N = len(frame) // G
    rewards = torch.tensor(frame[[trl_log.reward_column(n) for n in names]].to_numpy(float), dtype=torch.float64)
    d = torch.ones(N * G, K, T, dtype=torch.float64)
    i = frame["row"].tolist().index(int(record["row"]))
    d[i] = relevance.double()
    parts = mrtpo_token_parts(rewards.view(N, G, K), d.view(N, G, K, T), torch.ones(N, G, T), weights, alpha, gamma)
    n, g = divmod(i, G)
    return AdvantageBreakdown(
        float(parts.gdpo[n, g]),
        parts.token_advantages[n, g].float(),
        parts.parts[n, g].float(),
        parts.baseline[n, g].float(),
        parts.per_reward[n].float(),
        parts.gdpo[n].float(),
    )
