"""What a replay does after its planning, as a generator of steps: :func:`run_steps`, behind
:func:`.engine.replay_steps`, which :func:`.engine.replay_variants` (and so :func:`.engine.replay`) runs to its last
step and the app shows step by step; and the pieces both ways share (the columns, each variant's
:class:`Relevance`, the verdicts).

A progressive replay (``progressive=True``) first yields the response's tokens and no rows (tokenizing is instant),
then runs the branch without information, then each verifier's branch in a forward of its own over the same cropped
prefix cache (:func:`.branches.split_logits_each`) and yields that verifier's row as soon as it is done; the last
step holds the results, the same as a one-shot replay's up to float rounding. A one-shot replay
(``progressive=False``: the library's default) runs the K with-information branches as one batch
(:func:`.branches.split_logits`) and yields only the last step. ``progressive=None`` decides by the replay's
estimated time (:func:`estimate_seconds` against :data:`PROGRESSIVE_FROM_S`): the bundled policy's ~0.05 s replay
stays one-shot, SmolLM2-135M's ~3-4 s one (one CPU core, 128 tokens, K = 3) goes row by row, in the same total
time within ~2% (benchmarks/results/progressive_smollm2-135m-instruct.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

import torch

from ..divergence import chunked_metric
from ..policy import Policy
from ..serving import turns
from ..tasks import Example, Verifier
from . import branch_cache
from .branches import Branches, first_pass, prefix_cache, split_logits, split_logits_each, suffix_logits
from .columns import ReplayColumns, replay_columns, stack_columns
from .results import Relevance
from .tokens import decode_top, display_tokens

PROGRESSIVE_FROM_S = 1.0
"""``progressive=None``: a replay estimated to take at least this long shows its rows one by one. Below about a
second a user sees no wait worth filling, and every step costs the app a round trip to the page (a redraw of the
token view and the heatmap, ~20-60 ms on a 2-core machine)."""
CPU_FLOP_S = 5e10
"""Floating-point operations per second that :func:`estimate_seconds` assumes on a CPU: one core of this project's
machine (AMD EPYC, AVX2) ran SmolLM2-135M's replay forwards at about this rate (docs/performance.md). A faster
CPU only makes the estimate err towards progressive, which costs a few percent."""
GPU_FLOP_S = 1e13
"""The same on any accelerator (a small model there is far below a second: one-shot)."""


@dataclass(frozen=True)
class ReplayStep:
    """One step of :func:`replay_steps`."""

    tokens: list[str]
    """The response's display tokens (T)."""
    token_ids: list[int]
    verifiers: list[str]
    """Every verifier's name (K), replayed or not yet."""
    rows: torch.Tensor
    """``(done, T)``: the first variant's metric of the verifiers replayed so far, raw (before any control)."""
    results: Optional[dict[tuple[str, str], Relevance]] = None
    """The last step only: ``(metric, control) -> Relevance``."""

    @property
    def done(self) -> int:
        return int(self.rows.shape[0])

    @property
    def K(self) -> int:
        return len(self.verifiers)

    @property
    def relevance(self) -> Optional[Relevance]:
        """The first variant's result (the last step only)."""
        return None if self.results is None else next(iter(self.results.values()))


def estimate_seconds(policy: Policy, br: Branches) -> float:
    """A replay's forward time, roughly: ``2 x parameters x positions`` operations at :data:`CPU_FLOP_S` per thread
    (``threads ** 0.8`` of it with several; or :data:`GPU_FLOP_S`), where the positions are those the replay runs (the
    branch without information whole, every other suffix with the response; with the branch cache on, only the branches
    it lacks). The metric over the vocabulary is left out (a tenth of it for SmolLM2)."""
    T = len(br.response_ids)
    todo = list(range(br.B))
    cache = branch_cache.active()
    if cache is not None:  # a branch the cache holds costs no forward (an edit of one verifier's information)
        weights = branch_cache.weights_key(policy.model)
        todo = [b for b in todo if not cache.holds(weights, br.full_ids(b))]
    positions = (len(br.prefix_ids) if todo else 0) + sum(len(br.suffix_ids[b]) + T for b in todo)
    # torch's threads on a CPU: 2 ran SmolLM2's replay 1.69x as fast as 1 (docs/performance.md), about n ** 0.8
    rate = CPU_FLOP_S * torch.get_num_threads() ** 0.8 if torch.device(policy.device).type == "cpu" else GPU_FLOP_S
    return 2.0 * policy.model.num_parameters() * positions / rate


def run_steps(policy, br: Branches, plans, variants, extra_rows, example_or_prompt, progressive, sizes, timings):
    """The replay after its planning (:func:`.engine.replay_steps`): ``br`` holds every branch ([without,
    with_1..K, each control's K extras]), ``plans`` the plan of each control, ``extra_rows`` the first branch of each
    control's extras, ``sizes`` ``(chunk_size, topk)``; yields the steps."""
    first = next(iter(plans.values()))
    K, names = len(first.verifiers), [v.name for v in first.verifiers]
    if progressive is None:
        progressive = estimate_seconds(policy, br) >= PROGRESSIVE_FROM_S
    metrics = tuple(dict.fromkeys(m for m, _ in variants))
    if progressive:
        tokens = display_tokens(policy.tokenizer, br.response_ids)[0]
        step = ReplayStep(tokens, list(br.response_ids), names, torch.zeros(0, len(br.response_ids)))
        yield step
        logits = yield from _rows_one_by_one(policy, br, K, metrics, *sizes, step, timings)
    else:
        logits = _rows_batched(policy, br, K, metrics, *sizes, timings)
    example = example_or_prompt if isinstance(example_or_prompt, Example) else None
    results = _results(policy, br, plans, variants, extra_rows, logits, sizes, timings, example)
    rel = next(iter(results.values()))
    yield ReplayStep(rel.tokens, list(br.response_ids), names, logits.cols.metrics[metrics[0]], results)


@dataclass(frozen=True)
class _Logits:
    """A replay's logits and columns: ``without`` (1, T, V), ``with_k`` (K, T, V) (None where no control needs it),
    ``extras`` (the controls' extra branches, (E, T, V), or None) and the columns of ``[without, with_1..K]``."""

    without: torch.Tensor
    with_k: Optional[torch.Tensor]
    extras: Optional[torch.Tensor]
    cols: ReplayColumns


def _rows_batched(policy, br: Branches, K, metrics, chunk_size, topk, timings) -> _Logits:
    """The K with-rows (and a control's extras) in one batch: :func:`.branches.split_logits` (with the branch cache
    on: only the branches it lacks, :func:`_cached_logits`)."""
    clock = time.perf_counter()
    cache = branch_cache.active()
    if cache is None:
        without, others = split_logits(policy.model, br, policy.pad_id, policy.device)  # (1, T, V), (B - 1, T, V)
    else:
        without, others = _cached_logits(policy, br, cache)
    timings["forward"], clock = time.perf_counter() - clock, time.perf_counter()
    cols = main_columns(br, (without, others[:K]), metrics, chunk_size, topk)
    timings["columns"] = time.perf_counter() - clock
    return _Logits(without, others[:K], others[K:] if br.B > K + 1 else None, cols)  # views, not copies


def _over_prefix(policy, br: Branches, bs: list[int], prefix) -> list[torch.Tensor]:
    """Branches ``bs`` in one forward over ``prefix`` (the prefix's cache, or None where it is empty): their
    ``(1, T, V)`` logits."""
    sub = Branches(br.prefix_ids, [br.suffix_ids[b] for b in bs], br.response_ids)
    with turns.model_job():
        return list(suffix_logits(policy.model, sub, prefix, policy.pad_id, policy.device).split(1))


def _prefix(policy, br: Branches):
    with turns.model_job():
        return prefix_cache(policy.model, br.prefix_ids, policy.device)


@torch.no_grad()
def _cached_logits(policy, br: Branches, cache: branch_cache.BranchCache) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`.branches.split_logits`'s ``(1, T, V)`` and ``(B - 1, T, V)`` logits, the cache's where it holds a
    branch; the others run (the branch without information whole where it is among them, the rest in one batch over
    the prefix) and are kept."""
    weights = branch_cache.weights_key(policy.model)
    full = [br.full_ids(b) for b in range(br.B)]
    rows = [cache.get(weights, ids) for ids in full]
    todo = [b for b, r in enumerate(rows) if r is None]
    if len(todo) == br.B:  # nothing held: the plain replay, its rows kept
        without, others = split_logits(policy.model, br, policy.pad_id, policy.device)
        for b, row in enumerate([without, *others.split(1)]):
            cache.put(weights, full[b], row)
        return without, others
    if todo and todo[0] == 0:
        sub = Branches(br.prefix_ids, [br.suffix_ids[b] for b in todo], br.response_ids)
        first, rest = split_logits(policy.model, sub, policy.pad_id, policy.device)
        new = [first, *rest.split(1)]
    else:
        new = _over_prefix(policy, br, todo, _prefix(policy, br)) if todo else []
    for b, row in zip(todo, new):
        rows[b] = row
        cache.put(weights, full[b], row)
    return rows[0], torch.cat(rows[1:])


@torch.no_grad()
def _each_row(policy, br: Branches, K: int) -> Iterator[torch.Tensor]:
    """:func:`.branches.split_logits_each`'s logits (row 0, rows 1..K one by one, then a control's extra branches
    in one tensor), as they are ready; with the branch cache on, a branch it holds comes at once, the others run
    (the prefix once, where a row other than row 0 is missing) and are kept."""
    cache = branch_cache.active()
    if cache is None:
        yield from split_logits_each(policy.model, br, policy.pad_id, policy.device, each=K)
        return
    weights = branch_cache.weights_key(policy.model)
    full = [br.full_ids(b) for b in range(br.B)]
    rows = [cache.get(weights, ids) for ids in full]
    prefix = []  # [the prefix cache] once computed (it may be None: an empty prefix)
    if rows[0] is None:
        with turns.model_job():
            rows[0], cropped = first_pass(policy.model, br, policy.device)
        prefix.append(cropped)
        cache.put(weights, full[0], rows[0])
    yield rows[0]

    def run(bs: list[int]) -> None:  # branches bs in one forward over the prefix, kept
        if not prefix:
            prefix.append(_prefix(policy, br))
        for b, row in zip(bs, _over_prefix(policy, br, bs, prefix[0])):
            rows[b] = row
            cache.put(weights, full[b], row)

    for b in range(1, K + 1):
        if rows[b] is None:
            run([b])
        yield rows[b]
    if br.B > K + 1:  # a control's extra branches: those missing in one batch
        missing = [b for b in range(K + 1, br.B) if rows[b] is None]
        if missing:
            run(missing)
        yield torch.cat(rows[K + 1 :])


def _rows_one_by_one(policy, br: Branches, K, metrics, chunk_size, topk, step: ReplayStep, timings):
    """As :func:`_rows_batched`, each with-row in a forward of its own (:func:`.branches.split_logits_each`), its
    columns computed at once; yields a step after each row, returns the :class:`_Logits`."""
    ids = torch.tensor(br.response_ids, device=policy.device)  # (T,)
    logits, parts, spent = [], [], {"forward": 0.0, "columns": 0.0}
    clock = time.perf_counter()
    for b, out in enumerate(_each_row(policy, br, K)):
        spent["forward"] += time.perf_counter() - clock
        logits.append(out)
        if 1 <= b <= K:
            clock = time.perf_counter()
            parts.append(replay_columns(logits[0], out, ids, metrics, topk=topk, chunk_size=chunk_size))
            spent["columns"] += time.perf_counter() - clock
            rows = torch.cat([p.metrics[metrics[0]] for p in parts])  # (b, T)
            yield ReplayStep(step.tokens, step.token_ids, step.verifiers, rows)
        clock = time.perf_counter()
    timings.update(spent)
    extras = logits[K + 1] if len(logits) > K + 1 else None
    with_k = torch.cat(logits[1 : K + 1]) if extras is not None else None  # only a control's metric reads it
    return _Logits(logits[0], with_k, extras, stack_columns(parts))


def _results(policy, br: Branches, plans, variants, extra_rows, lg: _Logits, sizes, timings, example) -> dict:
    """Each variant's Relevance from the logits and columns (the verdicts run once, for the first variant)."""
    K = len(next(iter(plans.values())).verifiers)
    shared, out = timings.pop("columns"), {}  # every variant's metric and columns come from one pass
    for metric, c in variants:
        plan, clock = plans[c], time.perf_counter()
        row = extra_rows.get(c)
        extra = None if row is None else lg.extras[row - K - 1 : row - 1]  # views, not copies: (K, T, V)
        rel = relevance_of(policy, br, (lg.without, lg.with_k), extra, plan, metric, *sizes, lg.cols)
        rel.info_position = plan.info_position
        own = {**timings, "metric": shared + time.perf_counter() - clock}
        clock = time.perf_counter()
        if example is not None and not out:
            add_verdicts(rel, plan.verifiers, example)
        elif example is not None:  # the same response and verifiers: the first variant's verdicts, not re-run
            done = next(iter(out.values()))
            rel.rewards, rel.reasons, rel.spans = dict(done.rewards), dict(done.reasons), dict(done.spans)
            rel.example_id = done.example_id
        rel.timings = {**own, "verify": time.perf_counter() - clock}
        out[(metric, c)] = rel
    return out


def main_columns(br: Branches, logits, metrics: tuple[str, ...], chunk_size, topk) -> ReplayColumns:
    """The metrics of the K with-information rows against the without row and the per-token columns of all K + 1,
    from the logits [without, with_1..K] (one (K + 1, T, V) tensor, or the pair (1, T, V), (K, T, V)) in one
    chunked pass."""
    without, with_k = (logits[:1], logits[1:]) if isinstance(logits, torch.Tensor) else logits
    ids = torch.tensor(br.response_ids, device=without.device)  # (T,)
    return replay_columns(without, with_k, ids, metrics, topk=topk, chunk_size=chunk_size)


def relevance_of(  # a plan is an engine.ReplayPlan
    policy, br: Branches, logits, extra_k, plan, metric, chunk_size, topk, cols=None
) -> Relevance:
    """Metrics and per-token columns from the logits [without, with_1..K] (a (K + 1, T, V) tensor or the pair
    (1, T, V), (K, T, V)) and the control's (K, T, V) extra branches' logits (None without extra branches); ``cols``:
    :func:`main_columns` of these logits when a caller already has them."""
    vs, info_list, ctrl = plan.verifiers, plan.infos, plan.control
    if cols is None or metric not in cols.metrics:
        cols = main_columns(br, logits, (metric,), chunk_size, topk)
    raw = cols.metrics[metric].clone()  # (K, T); its own copy: variants share cols
    with_vs_extra = extra_vs_without = None
    if extra_k is not None:
        without, with_k = (logits[:1], logits[1:]) if isinstance(logits, torch.Tensor) else logits
        with_vs_extra = chunked_metric(with_k, extra_k, metric, chunk_size)  # (K, T)
        extra_vs_without = chunked_metric(extra_k, without, metric, chunk_size)  # (K, T)
    scores = ctrl.combine(raw, with_vs_extra, extra_vs_without)
    tokens, offsets, text = display_tokens(policy.tokenizer, br.response_ids)
    top = decode_top(policy.tokenizer, cols.top_ids, cols.top_probs)  # (K + 1) x T x topk
    return Relevance(
        tokens=tokens,
        token_ids=list(br.response_ids),
        verifiers=[v.name for v in vs],
        scores=scores,
        raw_scores=raw,
        metric=metric,
        control=ctrl.name,
        response=text,
        offsets=offsets,
        infos={v.name: i for v, i in zip(vs, info_list)},
        logp_without=cols.logprob[0],
        logp_with=cols.logprob[1:],
        entropy=cols.entropy,
        top_without=top[0],
        top_with=top[1:],
    )


def verifier_call(v: Verifier, doing: str, fn, *args):
    """``fn(*args)`` of verifier ``v``; an example whose meta does not fit it (a list where it reads an object, a
    number where it reads text) becomes a ValueError that names the verifier instead of raw Python text."""
    try:
        return fn(*args)
    except (ValueError, KeyError, FileNotFoundError):
        raise
    except (TypeError, AttributeError, IndexError, RecursionError) as e:
        raise ValueError(
            f"verifier {v.name!r} cannot {doing} for this example: its meta does not have the fields "
            f"and types {v.name} reads ({type(e).__name__}: {str(e)[:160]})"
        ) from None


def add_verdicts(rel: Relevance, vs: list[Verifier], example: Example) -> None:
    for v in vs:
        verdict = verifier_call(v, "score the response", v.check, rel.response, example)
        rel.rewards[v.name] = float(verdict.score)
        rel.reasons[v.name] = verdict.reason
        rel.spans[v.name] = verifier_call(v, "find its relevant spans", v.relevant_spans, rel.response, example)
    rel.example_id = example.id
