"""Per-token relevance of a response to each verifier: the with/without-information replay.

``d[k, t] = metric(pi(. | x + c_k, y_<t), pi(. | x, y_<t))`` (our reading of the paper: JS distance, base 2), where
``c_k`` is verifier ``k``'s information inserted into the prompt ``x`` by :func:`.contexts.with_info`.
All K + 1 branches (plus a control's branches, :mod:`.controls`) run over a shared prefix cache (:mod:`.branches`):
the K with-information suffixes as one batch, or, in a progressive replay (:func:`replay_steps`, the app's Replay on
a slow model), one forward each, each verifier's row shown as it is done (:mod:`.progressive`). The response ids are
identical in every branch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional, Union
from collections.abc import Iterator, Sequence

import torch

from ..divergence import get_metric
from ..names import check_choice, CONTROLS as CONTROL_NAMES, INFO_POSITIONS
from ..guards import unpaired_surrogate
from ..policy import Policy, as_messages
from ..policy.specials import restore
from ..tasks import Example, Verifier, get_verifier
from .branches import Branches, shared_branches, split_branches, tokenize_response
from .contexts import DEFAULT_INFO_TEMPLATE, with_info
from .controls import CONTROL_SPECS, Control, ControlInput
from .progressive import ReplayStep, run_steps, verifier_call
from .progressive import add_verdicts as _add_verdicts, relevance_of as _relevance  # noqa: F401 -- ab_split's names
from .results import Relevance


def resolve_verifiers(verifiers: Sequence[Union[str, Verifier]]) -> list[Verifier]:
    """Names or Verifier objects -> Verifier objects (unknown names raise the registry's KeyError)."""
    if isinstance(verifiers, (str, Verifier)):
        verifiers = [verifiers]
    out = [v if isinstance(v, Verifier) else get_verifier(v) for v in verifiers]
    if not out:
        raise ValueError("give at least one verifier")
    if len({v.name for v in out}) != len(out):
        raise ValueError(f"verifier names repeat: {[v.name for v in out]}")
    return out


def resolve_infos(verifiers: list[Verifier], example: Optional[Example], infos: Optional[dict[str, str]]) -> list[str]:
    """Each verifier's information: ``infos[name]`` if given, else ``verifier.info(example)``."""
    infos = dict(infos or {})
    out = []
    for v in verifiers:
        if v.name in infos:
            out.append(str(infos[v.name]))
        elif example is not None:
            out.append(verifier_call(v, "give its information", v.info, example))
        else:
            raise ValueError(f"no information for verifier {v.name!r}: give an Example or infos={{name: text}}")
    return out


def _response_ids(policy: Policy, response) -> list[int]:
    if isinstance(response, torch.Tensor):
        response = response.tolist()
    ids = tokenize_response(policy.tokenizer, response) if isinstance(response, str) else [int(i) for i in response]
    if not ids:
        raise ValueError("the response is empty: nothing to replay")
    return ids


def _branch_messages(messages, verifiers, infos, extra, position, template, one_context=False) -> list[list[dict]]:
    """[without, with_1..K, extra_1..K, (one context)]; an empty information adds no block (that branch equals
    'without'). The one-context branch holds every verifier's block, in the verifiers' order, each rendered as in
    its own branch (same title, same template, same position)."""

    def branch(v: Verifier, info: str):
        return with_info(messages, [(v.title, info)] if info else [], position, template)

    out = [with_info(messages, [], position, template)]
    out += [branch(v, i) for v, i in zip(verifiers, infos)]
    out += [branch(v, i) for v, i in zip(verifiers, extra or [])]
    if one_context:
        out.append(with_info(messages, [(v.title, i) for v, i in zip(verifiers, infos) if i], position, template))
    return out


@dataclass(frozen=True)
class ReplayPlan:
    """The branches of one replay, before any forward: [without, with_1..K, extra_1..K, (one context)]."""

    branches: Branches
    verifiers: list[Verifier]
    infos: list[str]
    extra_infos: Optional[list[str]]
    control: Control
    texts: list[str]
    """The rendered prompt text of each branch (as typed: where a user typed a special, the ids are not this text's
    plain tokenization but :func:`mrtpo_viz.policy.specials.encode`'s, with the typed special as text)."""
    info_position: str = "user_end"


def plan_replay(
    policy: Policy,
    example_or_prompt,
    response,
    verifiers: Sequence[Union[str, Verifier]],
    *,
    infos: Optional[dict[str, str]] = None,
    info_position: str = "user_end",
    control: str = "none",
    template: str = DEFAULT_INFO_TEMPLATE,
    pool: Optional[Sequence[Example]] = None,
    one_context: bool = False,
) -> ReplayPlan:
    """Resolve verifiers and information, render every branch and split it into shared prefix + suffixes.
    ``one_context``: one more branch, last, with every verifier's information at once (the ``one_context`` credit
    method); it shares the prefix and the exact response ids of the others."""
    check_choice("control", control, CONTROL_NAMES)
    check_choice("info_position", info_position, INFO_POSITIONS)
    example = example_or_prompt if isinstance(example_or_prompt, Example) else None
    vs = resolve_verifiers(verifiers)
    info_list = resolve_infos(vs, example, infos)
    prompt = as_messages(example_or_prompt)
    check_texts(prompt, dict(zip((v.name for v in vs), info_list)), template)
    check_sizes(policy, prompt, info_list, response)
    ctrl = CONTROL_SPECS[control]
    extra = ctrl.extra_infos(ControlInput(vs, info_list, example, policy.tokenizer, pool)) if ctrl.extra_infos else None
    resp_ids = _response_ids(policy, response)
    messages = _branch_messages(
        policy.messages(example_or_prompt), vs, info_list, extra, info_position, template, one_context
    )
    texts = [policy.render_marked(m) for m in messages]  # typed specials marked: they stay text
    branches = split_branches(policy.tokenizer, texts, resp_ids)
    check_context(policy, branches)
    texts = [restore(policy.tokenizer, t) for t in texts]
    return ReplayPlan(branches, vs, info_list, extra, ctrl, texts, info_position)


def check_texts(messages: list[dict], infos: dict[str, str], template: str) -> None:
    """Refuse text that no tokenizer can take (an unpaired surrogate, e.g. JSON's ``"\\ud800"``), naming where."""
    fields = [(f"message {i + 1} ({m.get('role', '?')})", m.get("content")) for i, m in enumerate(messages)]
    fields += [(f"the information for {name}", text) for name, text in infos.items()] + [("the template", template)]
    for label, text in fields:
        if not isinstance(text, str):
            raise ValueError(f"{label} must be text, got {type(text).__name__}")
        bad = unpaired_surrogate(text)
        if bad >= 0:
            raise ValueError(
                f"{label} holds an unpaired surrogate (\\u{ord(text[bad]):04x} at character {bad}), "
                "which is not valid Unicode: remove it"
            )


def check_sizes(policy: Policy, messages: list[dict], infos: list[str], response) -> None:
    """Refuse, before anything is tokenized, texts that cannot fit the model's context window: no token of the
    vocabulary is longer than ``policy.max_token_chars`` characters, so a longest branch (prompt, one information,
    response) of more than ``context window x max_token_chars`` characters has more tokens than the window."""
    limit = getattr(policy.model.config, "max_position_embeddings", None) or 1_000_000
    budget = limit * policy.max_token_chars
    n_response = len(response) if isinstance(response, str) else 0
    n = sum(len(m.get("content") or "") for m in messages) + max(map(len, infos), default=0) + n_response
    if n > budget:
        raise ValueError(
            f"the replay's texts have {n:,} characters (prompt, information and response); the model's "
            f"context window of {limit:,} tokens holds at most {budget:,} characters of this tokenizer: "
            "shorten the response or the information"
        )


def check_context(policy: Policy, br: Branches) -> None:
    """Refuse a replay whose longest branch exceeds the model's context window (positions past it are untrained)."""
    limit = getattr(policy.model.config, "max_position_embeddings", None)
    longest = len(br.prefix_ids) + max(len(s) for s in br.suffix_ids) + len(br.response_ids)
    if limit and longest > limit:
        raise ValueError(
            f"the replay needs {longest:,} tokens (prompt, information and response), more than the "
            f"model's context window of {limit:,} tokens: shorten the response or the information"
        )


def replay(
    policy: Policy,
    example_or_prompt,
    response,
    verifiers: Sequence[Union[str, Verifier]],
    *,
    infos: Optional[dict[str, str]] = None,
    metric: str = "js",
    info_position: str = "user_end",
    control: str = "none",
    template: str = DEFAULT_INFO_TEMPLATE,
    chunk_size: Optional[int] = None,
    topk: int = 5,
    pool: Optional[Sequence[Example]] = None,
) -> Relevance:
    """Relevance of each response token to each verifier.

    Args:
        policy: the loaded policy.
        example_or_prompt: an Example (its verifiers' information and checks are used), a user string or chat
            messages (then ``infos`` must cover every verifier).
        response: the response text, or the exact token ids the policy generated (used as is).
        verifiers: K verifier names or Verifier objects.
        infos: name -> information text, overriding ``verifier.info(example)``; ``""`` inserts no block.
        metric: a name in ``names.METRICS``; control: a name in ``names.CONTROLS``.
        info_position, template: where and how the information enters the prompt (see ``contexts.with_info``).
        chunk_size: positions per chunk of the float32 vocabulary computations (default: ~32 MiB worth).
        topk: top predictions kept per position, with and without information.
        pool: examples for the ``corrupted`` control (default: the example's task, all splits).
    Returns:
        A :class:`Relevance` with ``scores`` and ``raw_scores`` of shape (K, T).
    """
    return replay_variants(
        policy,
        example_or_prompt,
        response,
        verifiers,
        [(metric, control)],
        infos=infos,
        info_position=info_position,
        template=template,
        chunk_size=chunk_size,
        topk=topk,
        pool=pool,
    )[(metric, control)]


def replay_variants(
    policy: Policy,
    example_or_prompt,
    response,
    verifiers: Sequence[Union[str, Verifier]],
    variants: Sequence[tuple[str, str]],
    *,
    infos: Optional[dict[str, str]] = None,
    info_position: str = "user_end",
    template: str = DEFAULT_INFO_TEMPLATE,
    chunk_size: Optional[int] = None,
    topk: int = 5,
    pool: Optional[Sequence[Example]] = None,
) -> dict[tuple[str, str], Relevance]:
    """Several ``(metric, control)`` replays of one response from ONE batched forward: the without and with
    branches run once for all of them, and each control's extra branches once (:func:`replay` is the case of one).
    Keywords as in :func:`replay`. The last step of :func:`replay_steps` (one-shot).

    Returns:
        ``(metric, control) -> Relevance``, each equal to its own ``replay(..., metric=metric, control=control)`` up
        to the float rounding of a batch of another size (a branch's logits do not depend on the other branches).
    """
    *_, last = replay_steps(
        policy,
        example_or_prompt,
        response,
        verifiers,
        variants,
        infos=infos,
        info_position=info_position,
        template=template,
        chunk_size=chunk_size,
        topk=topk,
        pool=pool,
    )
    return last.results


def replay_steps(
    policy: Policy,
    example_or_prompt,
    response,
    verifiers: Sequence[Union[str, Verifier]],
    variants: Sequence[tuple[str, str]] = (("js", "none"),),
    *,
    infos: Optional[dict[str, str]] = None,
    info_position: str = "user_end",
    template: str = DEFAULT_INFO_TEMPLATE,
    chunk_size: Optional[int] = None,
    topk: int = 5,
    pool: Optional[Sequence[Example]] = None,
    progressive: Optional[bool] = False,
) -> Iterator[ReplayStep]:
    """Replay ``response`` (arguments as :func:`replay_variants`), yielding :class:`.progressive.ReplayStep` s:
    the replay that :func:`replay_variants` and :func:`replay` run to its last step, and the app step by step.

    Args:
        progressive: True: a step with no rows before any forward, then one step per verifier (rows 1, ..., K),
            then the last step (K + 2 steps); False: only the last step; None: True where
            :func:`.progressive.estimate_seconds` reaches :data:`.progressive.PROGRESSIVE_FROM_S`.
    Yields:
        Steps; the last one's ``results`` are ``(metric, control) -> Relevance``, equal (to float rounding: a row
        run alone or in a padded batch rounds differently, ~1e-6) whichever way the forwards ran.
    """
    timings, clock = {}, time.perf_counter()
    variants = list(dict.fromkeys((m, c) for m, c in variants))
    if not variants:
        raise ValueError("give at least one (metric, control) variant")
    for metric, _ in variants:
        get_metric(metric)
    kw = dict(infos=infos, info_position=info_position, template=template, pool=pool)
    plans = {
        c: plan_replay(policy, example_or_prompt, response, verifiers, control=c, **kw)
        for c in dict.fromkeys(c for _, c in variants)
    }
    first = next(iter(plans.values()))
    K, base = len(first.verifiers), first.branches
    prompts = [base.prefix_ids + base.suffix_ids[b] for b in range(K + 1)]
    extra_rows = {}  # control -> first row of its K extra branches in the batch
    for c, plan in plans.items():
        if plan.extra_infos is not None:
            extra_rows[c] = len(prompts)
            prompts += [plan.branches.prefix_ids + plan.branches.suffix_ids[b] for b in range(K + 1, 2 * K + 1)]
    br = base if len(prompts) == base.B else shared_branches(prompts, base.response_ids)
    timings["tokenize"] = time.perf_counter() - clock
    yield from run_steps(
        policy, br, plans, variants, extra_rows, example_or_prompt, progressive, (chunk_size, topk), timings
    )
