"""Per-token relevance of a response to each verifier: the with/without-information replay.

``d[k, t] = metric(pi(. | x + c_k, y_<t), pi(. | x, y_<t))`` (our reading of the paper: JS distance, base 2), where
``c_k`` is verifier ``k``'s information inserted into the prompt ``x`` by :func:`mrtpo_viz.contexts.with_info`.
All K + 1 branches (plus a control's branches) run as one batch over a shared prefix cache
(:mod:`mrtpo_viz.replay_batch`); the response ids are identical in every branch.

Controls (``CONTROLS``), because raw JS also follows the policy's own uncertainty where it ignores the information:

- ``none``: with vs without (the paper's signal).
- ``placebo``: raw minus the metric that a neutral block of about the same number of tokens causes, clipped at 0.
- ``corrupted``: with vs the information of another example of the same task (instead of none).
- ``others``: raw minus the mean raw of the other verifiers, clipped at 0 (with K = 1 it equals raw).
"""
from __future__ import annotations

import time
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

import torch

from .contexts import DEFAULT_INFO_TEMPLATE, with_info
from .divergence import chunked_metric, get_metric, token_stats
from .policy import Policy, as_messages
from .replay_batch import Branches, branch_logits, split_branches, tokenize_response
from .results import Relevance
from .tasks import Example, load_examples
from .verifiers import Verifier, get_verifier

NEUTRAL_FILLER = ("The morning was quiet and the sky over the old town stayed a pale shade of grey while a few "
                  "people walked slowly along the river past the market. ")
"""The placebo control's information: neutral text, cut to the real information's number of tokens."""


@dataclass(frozen=True)
class ControlInput:
    """What a control may use to build its extra branches."""

    verifiers: list[Verifier]
    infos: list[str]
    example: Optional[Example]
    tokenizer: object
    pool: Optional[Sequence[Example]]


@dataclass(frozen=True)
class Control:
    """What each with-information branch is held against."""

    name: str
    description: str
    extra_infos: Optional[Callable[[ControlInput], list[str]]]
    """Per verifier the information of an extra branch (same title and template), or None for no extra branches."""
    combine: Callable[[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]], torch.Tensor]
    """(raw, with_vs_extra, extra_vs_without), each (K, T) -> scores (K, T)."""


def _placebo_infos(c: ControlInput) -> list[str]:
    """Neutral text of about the same number of tokens as each information (empty stays empty)."""
    filler_ids = c.tokenizer(NEUTRAL_FILLER * 64, add_special_tokens=False)["input_ids"]
    out = []
    for info in c.infos:
        n = len(c.tokenizer(info, add_special_tokens=False)["input_ids"]) if info else 0
        out.append(c.tokenizer.decode(filler_ids[:n]).strip())
    return out


def _corrupted_infos(c: ControlInput) -> list[str]:
    """Each verifier's information for another example of the same task: the next one in the pool (cyclic,
    starting after this example) whose information differs."""
    if c.example is None:
        raise ValueError("control 'corrupted' needs an Example (it borrows another example's information)")
    pool = list(c.pool) if c.pool is not None else load_examples(c.example.task, split="all")
    ids = [e.id for e in pool]
    start = ids.index(c.example.id) + 1 if c.example.id in ids else 0
    ordered = [e for e in pool[start:] + pool[:start] if e.id != c.example.id or not e.id]
    out = []
    for v, info in zip(c.verifiers, c.infos):
        other = next((v.info(e) for e in ordered if v.info(e) != info), None)
        if other is None:
            raise ValueError(f"control 'corrupted': no other example of task {c.example.task!r} has a different "
                             f"information for verifier {v.name!r}")
        out.append(other)
    return out


def _others(raw: torch.Tensor, *_: Optional[torch.Tensor]) -> torch.Tensor:
    """``clip(raw_k - mean_{j != k} raw_j, 0)``; K = 1 gives raw."""
    K = raw.shape[0]
    if K == 1:
        return raw.clone()
    mean_others = (raw.sum(0, keepdim=True) - raw) / (K - 1)  # (K, T)
    return (raw - mean_others).clamp_min(0.0)


CONTROLS: dict[str, Control] = {
    "none": Control("none", "with vs without the information (the paper's signal)", None,
                    lambda raw, wx, xw: raw.clone()),
    "placebo": Control("placebo", "raw minus the metric a neutral block of similar length causes, clipped at 0",
                       _placebo_infos, lambda raw, wx, xw: (raw - xw).clamp_min(0.0)),
    "corrupted": Control("corrupted", "with vs another example's information of the same task",
                         _corrupted_infos, lambda raw, wx, xw: wx.clone()),
    "others": Control("others", "raw minus the mean raw of the other verifiers, clipped at 0", None, _others),
}
"""Control name -> Control. The CLI and UI take their choices from ``list(CONTROLS)``."""


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


def resolve_infos(verifiers: list[Verifier], example: Optional[Example],
                  infos: Optional[dict[str, str]]) -> list[str]:
    """Each verifier's information: ``infos[name]`` if given, else ``verifier.info(example)``."""
    infos = dict(infos or {})
    out = []
    for v in verifiers:
        if v.name in infos:
            out.append(str(infos[v.name]))
        elif example is not None:
            out.append(v.info(example))
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


def _decode_prefixes(tokenizer, ids: list[int]) -> list[str]:
    """``decode(ids[:t + 1])`` for every t (one call to the fast backend where there is one)."""
    prefixes = [ids[:t + 1] for t in range(len(ids))]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return backend.decode_batch(prefixes, skip_special_tokens=False)
    return [tokenizer.decode(p) for p in prefixes]


def display_tokens(tokenizer, ids: list[int]) -> tuple[list[str], list[tuple[int, int]], str]:
    """Display text per token that joins back to the decoded response, their character offsets, and that text.

    A token that ends inside a multi-byte character shows as ``""``; the token that completes it shows it.
    """
    tokens, offsets, text = [], [], ""
    for now in _decode_prefixes(tokenizer, ids):
        piece = "" if now.endswith("\ufffd") or not now.startswith(text) else now[len(text):]
        tokens.append(piece)
        offsets.append((len(text), len(text) + len(piece)))
        text += piece
    return tokens, offsets, text


def _branch_messages(messages, verifiers, infos, extra, position, template) -> list[list[dict]]:
    """[without, with_1..K, extra_1..K]; an empty information adds no block (that branch equals 'without')."""
    def branch(v: Verifier, info: str):
        return with_info(messages, [(v.title, info)] if info else [], position, template)

    out = [with_info(messages, [], position, template)]
    out += [branch(v, i) for v, i in zip(verifiers, infos)]
    out += [branch(v, i) for v, i in zip(verifiers, extra or [])]
    return out


@dataclass(frozen=True)
class ReplayPlan:
    """The branches of one replay, before any forward: [without, with_1..K, extra_1..K]."""

    branches: Branches
    verifiers: list[Verifier]
    infos: list[str]
    extra_infos: Optional[list[str]]
    control: Control
    texts: list[str]
    """The rendered prompt text of each branch."""


def plan_replay(policy: Policy, example_or_prompt, response, verifiers: Sequence[Union[str, Verifier]], *,
                infos: Optional[dict[str, str]] = None, info_position: str = "user_end", control: str = "none",
                template: str = DEFAULT_INFO_TEMPLATE, pool: Optional[Sequence[Example]] = None) -> ReplayPlan:
    """Resolve verifiers and information, render every branch and split it into shared prefix + suffixes."""
    if control not in CONTROLS:
        raise ValueError(f"unknown control {control!r}; choose one of {list(CONTROLS)}")
    example = example_or_prompt if isinstance(example_or_prompt, Example) else None
    vs = resolve_verifiers(verifiers)
    info_list = resolve_infos(vs, example, infos)
    ctrl = CONTROLS[control]
    extra = ctrl.extra_infos(ControlInput(vs, info_list, example, policy.tokenizer, pool)) if ctrl.extra_infos else None
    resp_ids = _response_ids(policy, response)
    messages = _branch_messages(as_messages(example_or_prompt), vs, info_list, extra, info_position, template)
    texts = [policy.render(m) for m in messages]
    branches = split_branches(policy.tokenizer, texts, resp_ids)
    check_context(policy, branches)
    return ReplayPlan(branches, vs, info_list, extra, ctrl, texts)


def check_context(policy: Policy, br: Branches) -> None:
    """Refuse a replay whose longest branch exceeds the model's context window (positions past it are untrained)."""
    limit = getattr(policy.model.config, "max_position_embeddings", None)
    longest = len(br.prefix_ids) + max(len(s) for s in br.suffix_ids) + len(br.response_ids)
    if limit and longest > limit:
        raise ValueError(f"the replay needs {longest:,} tokens (prompt, information and response), more than the "
                         f"model's context window of {limit:,} tokens: shorten the response or the information")


def replay(policy: Policy, example_or_prompt, response, verifiers: Sequence[Union[str, Verifier]], *,
           infos: Optional[dict[str, str]] = None, metric: str = "js", info_position: str = "user_end",
           control: str = "none", template: str = DEFAULT_INFO_TEMPLATE, chunk_size: Optional[int] = None,
           topk: int = 5, pool: Optional[Sequence[Example]] = None) -> Relevance:
    """Relevance of each response token to each verifier.

    Args:
        policy: the loaded policy.
        example_or_prompt: an Example (its verifiers' information and checks are used), a user string or chat
            messages (then ``infos`` must cover every verifier).
        response: the response text, or the exact token ids the policy generated (used as is).
        verifiers: K verifier names or Verifier objects.
        infos: name -> information text, overriding ``verifier.info(example)``; ``""`` inserts no block.
        metric: a name in ``divergence.METRICS``; control: a name in ``CONTROLS``.
        info_position, template: where and how the information enters the prompt (see ``contexts.with_info``).
        chunk_size: positions per chunk of the float32 vocabulary computations (default: ~32 MiB worth).
        topk: top predictions kept per position, with and without information.
        pool: examples for the ``corrupted`` control (default: the example's task, all splits).
    Returns:
        A :class:`Relevance` with ``scores`` and ``raw_scores`` of shape (K, T).
    """
    timings, clock = {}, time.perf_counter()
    get_metric(metric)
    example = example_or_prompt if isinstance(example_or_prompt, Example) else None
    plan = plan_replay(policy, example_or_prompt, response, verifiers, infos=infos, info_position=info_position,
                       control=control, template=template, pool=pool)
    br, vs, info_list, extra, ctrl = plan.branches, plan.verifiers, plan.infos, plan.extra_infos, plan.control
    timings["tokenize"], clock = time.perf_counter() - clock, time.perf_counter()

    logits = branch_logits(policy.model, br, _pad_id(policy), policy.device)  # (B, T, V)
    timings["forward"], clock = time.perf_counter() - clock, time.perf_counter()

    rel = _relevance(policy, br, logits, vs, info_list, extra, ctrl, metric, chunk_size, topk)
    timings["metric"], clock = time.perf_counter() - clock, time.perf_counter()
    rel.info_position = info_position
    if example is not None:
        _add_verdicts(rel, vs, example)
    timings["verify"] = time.perf_counter() - clock
    rel.timings = timings
    return rel


def _pad_id(policy: Policy) -> int:
    tok = policy.tokenizer
    return next(i for i in (tok.pad_token_id, tok.eos_token_id, 0) if i is not None)


def _relevance(policy, br: Branches, logits, vs, info_list, extra, ctrl: Control, metric, chunk_size,
               topk) -> Relevance:
    """Metrics and per-token columns from the (B, T, V) branch logits: [without, with_1..K, extra_1..K]."""
    K, T = len(vs), len(br.response_ids)
    without, with_k = logits[:1], logits[1:K + 1]  # (1, T, V), (K, T, V)
    raw = chunked_metric(with_k, without, metric, chunk_size)  # (K, T)
    with_vs_extra = extra_vs_without = None
    if extra is not None:
        extra_k = logits[K + 1:]  # (K, T, V)
        with_vs_extra = chunked_metric(with_k, extra_k, metric, chunk_size)  # (K, T)
        extra_vs_without = chunked_metric(extra_k, without, metric, chunk_size)  # (K, T)
    scores = ctrl.combine(raw, with_vs_extra, extra_vs_without)
    ids = torch.tensor(br.response_ids, device=logits.device).expand(K + 1, T)  # (K + 1, T)
    stats = token_stats(logits[:K + 1], ids, topk=topk, chunk_size=chunk_size)
    tokens, offsets, text = display_tokens(policy.tokenizer, br.response_ids)
    top = _decode_top(policy.tokenizer, stats.top_ids, stats.top_probs)  # (K + 1) x T x topk
    return Relevance(
        tokens=tokens, token_ids=list(br.response_ids), verifiers=[v.name for v in vs], scores=scores,
        raw_scores=raw, metric=metric, control=ctrl.name, response=text, offsets=offsets,
        infos={v.name: i for v, i in zip(vs, info_list)}, logp_without=stats.logprob[0],
        logp_with=stats.logprob[1:], entropy=stats.entropy[0], top_without=top[0], top_with=top[1:])


def _decode_each(tokenizer, ids: list[int]) -> dict[int, str]:
    """Text of each distinct single token (through the fast backend in one call where there is one)."""
    uniq = sorted(set(ids))
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return dict(zip(uniq, backend.decode_batch([[i] for i in uniq], skip_special_tokens=False)))
    return {i: tokenizer.decode([i]) for i in uniq}


def _decode_top(tokenizer, top_ids: torch.Tensor, top_probs: torch.Tensor) -> list[list[list[tuple[str, float]]]]:
    """(B, T, k) ids and probs -> B x T lists of (token text, prob), most likely first."""
    text = _decode_each(tokenizer, top_ids.reshape(-1).tolist())
    return [[[(text[i], round(p, 6)) for i, p in zip(ids, probs)] for ids, probs in zip(row_ids, row_probs)]
            for row_ids, row_probs in zip(top_ids.tolist(), top_probs.tolist())]


def _add_verdicts(rel: Relevance, vs: list[Verifier], example: Example) -> None:
    for v in vs:
        verdict = v.check(rel.response, example)
        rel.rewards[v.name] = float(verdict.score)
        rel.reasons[v.name] = verdict.reason
        rel.spans[v.name] = v.relevant_spans(rel.response, example)
    rel.example_id = example.id


def format_table(rel: Relevance, max_rows: int = 400) -> str:
    """A compact per-token table: position, token, one score column per verifier (raw in brackets if controlled)."""
    names = [n.split(".")[-1][:12] for n in rel.verifiers]
    lines = [f"{'t':>4}  {'token':<16}" + "".join(f"{n:>14}" for n in names)]
    for t in range(min(rel.T, max_rows)):
        cells = "".join(f"{float(rel.scores[k, t]):>14.3f}" if rel.control == "none" else
                        f"{float(rel.scores[k, t]):>7.3f}({float(rel.raw_scores[k, t]):.3f})" for k in range(rel.K))
        lines.append(f"{t:>4}  {repr(rel.tokens[t])[:16]:<16}{cells}")
    if rel.T > max_rows:
        lines.append(f"... {rel.T - max_rows} more tokens")
    for name in rel.verifiers:
        if name in rel.rewards:
            lines.append(f"{name}: reward {rel.rewards[name]:.2f} ({rel.reasons.get(name, '')})")
    return "\n".join(lines)


def cli_replay(args) -> int:
    """``python -m mrtpo_viz replay``: one example of the test split -> per-token table, optional JSON."""
    from . import verifiers as _registry  # noqa: F401  (task modules register their verifiers on import)
    from .policy import load_policy

    examples = load_examples(args.task, split="test")
    if not 0 <= args.example < len(examples):
        raise ValueError(f"--example {args.example} is out of range: task {args.task!r} has {len(examples)} "
                         "test examples")
    example = examples[args.example]
    names = args.verifiers.split(",") if args.verifiers else list(example.verifiers)
    response = args.response if args.response is not None else example.reference
    if not response:
        raise ValueError(f"example {example.id!r} has no reference response: give --response")
    policy = load_policy(args.checkpoint, threads=args.threads)
    rel = replay(policy, example, response, names, metric=args.metric, control=args.control,
                 info_position=args.info_position)
    print(f"{example.id}  {policy.describe()}  metric={rel.metric} control={rel.control}")
    print(format_table(rel))
    if args.out:
        Path(args.out).write_text(rel.to_json(), encoding="utf-8")
        print(f"wrote {args.out}")
    return 0
