"""Verifier information A/B over a split: does wording B put a verifier's relevance on its relevant spans more
than wording A, across the data and not on one lucky example?

For each case (an example's gold response and one of its verifiers) both wordings are replayed in ONE batched
forward (the branch without information runs once, A's and B's branches beside it) and the A/B tab's summary numbers
(:func:`.diagnostics.relevance_summary`) are taken for each. Departures from the tab's one-example comparison: a
wording is a template, so one text fits every example: ``{own}`` stands for the verifier's own information for that
example and ``{description}`` for its generic description (A = ``{own}``, B = ``{description}`` by default, the
comparison of ``benchmarks/ab_compare.py``). Cases follow that script's rules: the first ``n`` examples of the split
with a gold response, each of their verifiers whose relevant spans on it are not empty and whose two wordings differ.

The summary is over cases: the mean of the per-case difference B - A in span mass with a 95% paired Student t
interval, and the share of cases where B puts more of the relevance on the spans than A.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Optional

import torch

from ..tasks.base import Example

OWN = "{own}"
"""In a wording: the verifier's own information for the example (``verifier.info(example)``)."""
DESCRIPTION = "{description}"
"""In a wording: the verifier's generic description."""
MEASURES = ("span_mass", "mean", "max", "top10_mass", "effective_tokens")
"""The A/B tab's summary numbers, per wording (:func:`.diagnostics.relevance_summary`)."""

# Student t 0.975 quantiles (two-sided 95%) by degrees of freedom; between tabulated values, linear in 1/df
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}
_T975.update({11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093})
_T975.update({20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980, 10**9: 1.960})


@dataclass(frozen=True)
class ABCase:
    """One comparison: an example's gold response, one verifier, the two wordings filled in for this example."""

    example: Example
    verifier: str
    info_a: str
    info_b: str


@dataclass(frozen=True)
class ABRow:
    """The A/B tab's numbers for one case (``*_a``/``*_b``: per wording) and the seconds of its replay."""

    example: str
    verifier: str
    tokens: int
    span_token_share: float
    """Share of the tokens inside the verifier's spans (what a uniform relevance puts there)."""
    span_mass_a: float
    span_mass_b: float
    mean_a: float
    mean_b: float
    max_a: float
    max_b: float
    top10_mass_a: float
    top10_mass_b: float
    effective_tokens_a: float
    effective_tokens_b: float
    max_abs_b_minus_a: float
    seconds: float

    @property
    def difference(self) -> float:
        """B - A in span mass (positive: B puts more of the relevance on the verifier's spans)."""
        return self.span_mass_b - self.span_mass_a

    def to_dict(self) -> dict:
        return {**asdict(self), "span_mass_b_minus_a": self.difference}


@dataclass(frozen=True)
class ABSummary:
    """Over the cases: the mean B - A in span mass, its 95% paired t interval, the share where B beats A."""

    cases: int
    examples: int
    mean_difference: float
    lo: float
    hi: float
    b_beats_a: float
    """Share of the cases where B's span mass is larger than A's."""
    mean_a: dict
    """Measure -> its mean over the cases with wording A."""
    mean_b: dict
    seconds_per_example: float


def fill(wording: str, verifier, example: Example) -> str:
    """A wording for one example: ``{own}`` and ``{description}`` replaced (plain text is kept as is)."""
    text = wording
    if OWN in text:
        text = text.replace(OWN, verifier.info(example) or "")
    return text.replace(DESCRIPTION, verifier.description)


def examples_from_file(path, limits=None) -> tuple[list[Example], list]:
    """Examples from a JSONL file of the rollouts format (:mod:`.rows`): each row's ``response`` is its gold, its
    ``verifiers`` (else its task's) are the ones compared. Returns ``(examples, problems)`` (bad lines, numbered)."""
    from ..tasks import list_verifiers
    from .rows import RowLimits, read_rows

    rows, problems = read_rows(path, limits or RowLimits())
    examples = []
    for r in rows:
        try:
            names = tuple(r["verifiers"] or list_verifiers(r["task"]))
        except (KeyError, ValueError) as e:
            problems.append((r["line"], f"id {r['id']!r}: {e.args[0] if isinstance(e, KeyError) else e}"))
            continue
        examples.append(Example(r["task"], r["prompt"], r["meta"], str(r["id"]), r["response"], names))
    return examples, problems


def split_cases(
    examples: Sequence[Example],
    n: int,
    wording_a: str = OWN,
    wording_b: str = DESCRIPTION,
    verifiers: Sequence[str] = (),
) -> list[ABCase]:
    """The cases of the first ``n`` examples with a gold response: each of the example's own verifiers (only those
    in ``verifiers`` when given) whose relevant spans on the gold are not empty and whose two filled-in wordings
    differ. A verifier that is not registered or does not fit the example gives no case."""
    from ..tasks import MissingArguments, get_verifier

    out = []
    for ex in [e for e in examples if e.reference][: max(0, int(n))]:
        for name in [v for v in ex.verifiers if v in verifiers or not verifiers]:
            try:
                v = get_verifier(name)
                a, b = fill(wording_a, v, ex), fill(wording_b, v, ex)
                spans = v.relevant_spans(ex.reference, ex)
            except (MissingArguments, KeyError, TypeError, ValueError):  # the verifier does not fit this example
                continue
            if a != b and spans:
                out.append(ABCase(ex, name, a, b))
    return out


def compare_case(policy, case: ABCase, *, metric: str = "js", control: str = "none", position: str = "user_end"):
    """Both wordings of one case from one batched forward -> ``(ABRow, relevance A, relevance B)``."""
    from .branches import branch_logits, shared_branches
    from .diagnostics import relevance_summary
    from .engine import _add_verdicts, _relevance, plan_replay

    start, ex, name = time.perf_counter(), case.example, case.verifier
    plans = [
        plan_replay(policy, ex, ex.reference, [name], infos={name: info}, info_position=position, control=control)
        for info in (case.info_a, case.info_b)
    ]
    rows = [[p.branches.prefix_ids + s for s in p.branches.suffix_ids] for p in plans]  # [without, with, extra?]
    prompts = rows[0] + rows[1][1:]  # B's branch without information is A's: it runs once
    br = shared_branches(prompts, plans[0].branches.response_ids)
    logits = branch_logits(policy.model, br, policy.pad_id, policy.device)  # (B, T, V)
    b0 = len(rows[0])
    picks = [(logits[:2], logits[2:b0]), (logits[[0, b0]], logits[b0 + 1 :])]  # (2, T, V), extra (0 or 1, T, V)
    rels = []
    for plan, (main, extra) in zip(plans, picks):
        rel = _relevance(policy, br, main, extra if len(extra) else None, plan, metric, None, 5)
        _add_verdicts(rel, plan.verifiers, ex)
        rels.append(rel)
    seconds = time.perf_counter() - start
    a, b = (relevance_summary(r, name) for r in rels)
    in_span = rels[0].token_in_span(name)
    row = ABRow(
        example=ex.id,
        verifier=name,
        tokens=rels[0].T,
        span_token_share=sum(in_span) / max(len(in_span), 1),
        **{f"{m}_{ab}": _number(s[m]) for m in MEASURES for ab, s in (("a", a), ("b", b))},
        max_abs_b_minus_a=float((rels[1].scores - rels[0].scores).abs().max()),
        seconds=seconds,
    )
    return row, rels[0], rels[1]


def _number(x) -> float:
    """A summary number; nan where it is undefined (span mass where the verifier's relevance is zero throughout)."""
    return math.nan if x is None else float(x)


def compare_split(
    policy, cases: Sequence[ABCase], *, metric: str = "js", control: str = "none", position: str = "user_end"
) -> Iterator[ABRow]:
    """:func:`compare_case` for each case in turn, yielding each row as it is done (stop whenever: the rows so far
    stand on their own)."""
    for case in cases:
        yield compare_case(policy, case, metric=metric, control=control, position=position)[0]


def t975(df: int) -> float:
    """Student t quantile 0.975 for ``df`` degrees of freedom (tabulated; within 0.002 of the exact value)."""
    keys = sorted(_T975)
    if df in _T975:
        return _T975[df]
    hi = next(k for k in keys if k > df)
    lo = keys[keys.index(hi) - 1]
    w = (1 / df - 1 / hi) / (1 / lo - 1 / hi)
    return w * _T975[lo] + (1 - w) * _T975[hi]


def summarize(rows: Sequence[ABRow]) -> Optional[ABSummary]:
    """The summary over the cases (None for no case); the interval is nan with one case."""
    if not rows:
        return None
    d = torch.tensor([r.difference for r in rows], dtype=torch.float64)
    mean, n = float(d.mean()), len(rows)
    half = t975(n - 1) * float(d.std()) / math.sqrt(n) if n > 1 else math.nan
    per_example = {}
    for r in rows:  # the seconds of an example's cases, summed
        per_example[r.example] = per_example.get(r.example, 0.0) + r.seconds
    return ABSummary(
        cases=n,
        examples=len(per_example),
        mean_difference=mean,
        lo=mean - half,
        hi=mean + half,
        b_beats_a=sum(r.span_mass_b > r.span_mass_a for r in rows) / n,
        mean_a={m: sum(getattr(r, f"{m}_a") for r in rows) / n for m in MEASURES},
        mean_b={m: sum(getattr(r, f"{m}_b") for r in rows) / n for m in MEASURES},
        seconds_per_example=sum(per_example.values()) / len(per_example),
    )


def sorted_rows(rows: Sequence[ABRow], worst_first: bool = True) -> list[ABRow]:
    """The rows by B - A in span mass, where B does worst first (or best first)."""
    return sorted(rows, key=lambda r: r.difference, reverse=not worst_first)
