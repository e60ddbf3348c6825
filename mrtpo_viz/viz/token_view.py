"""The interactive token view's data: a replay (or one scored rollout, or a training sample) as compact JSON.

The browser draws it (:mod:`mrtpo_viz.ui.token_component`): one row of coloured tokens per verifier and a detail panel
that a click pins. The payload holds each number once, rounded to 3 significant digits, and each top-prediction
string once (``vocab``, indexed by ``top0``/``top``), so a 128-token, 3-verifier replay is ~25 KB of JSON where the
pre-rendered span HTML with tooltips was ~220 KB.

Keys (absent when unknown): ``tokens`` (T), ``ids`` (T), ``verifiers`` (K), ``scores`` (K x T), ``vmax``, ``label``
(what the colour means), ``metric``, ``rewards`` (K), ``lp0`` (T: log-prob without information), ``lp`` (K x T:
with), ``ent`` (T: entropy without, nats), ``top0`` (T x [i, p, ...]), ``top`` (K x T x [i, p, ...]), ``vocab``,
``span`` (K lists of [start, end) token runs inside the verifier's relevant spans, or None: unknown), ``adv``
(``[[method, number or T numbers], ...]``: each method's advantage), ``title``.

Text is made safe for Gradio's JSON encoder (lone surrogates, which orjson refuses and which would silently end the
page's event stream, are shown as ``\\udXXX``); the browser only ever sets it as ``textContent``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from ..relevance.results import Relevance
from .numbers import SIG, round_sig

_SURROGATE = re.compile("[\ud800-\udfff]")
TOPK = 3
"""Top predictions kept per position and branch."""


def clean_text(s: Any) -> str:
    """``s`` as text safe for Gradio's JSON encoder: surrogate pairs joined, lone surrogates shown as ``\\udXXX``."""
    s = str(s)
    if not _SURROGATE.search(s):
        return s
    s = s.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")  # joins valid pairs
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", s)


def _plain(x: Any) -> Any:
    return x.tolist() if hasattr(x, "tolist") else x


def _vec(x: Any, n: int, what: str) -> Optional[list]:
    if x is None:
        return None
    x = _plain(x)
    if len(x) != n:
        raise ValueError(f"{what} has {len(x)} values, expected {n}")
    return [round_sig(v) for v in x]


def _mat(x: Any, k: int, n: int, what: str) -> Optional[list]:
    if x is None:
        return None
    x = _plain(x)
    if len(x) != k:
        raise ValueError(f"{what} has {len(x)} rows, expected {k}")
    return [_vec(row, n, f"{what} row {i}") for i, row in enumerate(x)]


def token_runs(flags: Optional[Sequence[bool]]) -> Optional[list[list[int]]]:
    """``[[start, end), ...]`` token-index runs where ``flags`` is true; None stays None (spans unknown)."""
    if flags is None:
        return None
    runs, start = [], None
    for t, f in enumerate(list(flags) + [False]):
        if f and start is None:
            start = t
        elif not f and start is not None:
            runs.append([start, t])
            start = None
    return runs


class _Vocab:
    """Top-prediction strings, each sent once (they repeat across positions and branches)."""

    def __init__(self):
        self.index: dict[str, int] = {}

    def flat(self, preds, topk: int) -> list:
        """``[i1, p1, i2, p2, ...]`` of the first ``topk`` (token, probability) pairs."""
        out = []
        for tok, p in list(preds or [])[:topk]:
            out += [self.index.setdefault(clean_text(tok), len(self.index)), round_sig(p)]
        return out


def advantages_entry(advantages: Optional[Mapping[str, Any]], T: int) -> Optional[list]:
    """``[[method, value], ...]``: a number (the same on every token, e.g. GDPO) or T numbers (MRTPO) per method."""
    out = []
    for name, a in (advantages or {}).items():
        a = _plain(a)
        seq = isinstance(a, (list, tuple))
        out.append([clean_text(name), _vec(a, T, f"advantage {name!r}") if seq else round_sig(a)])
    return out or None


def token_view_payload(
    tokens: Sequence[str],
    verifiers: Sequence[str],
    scores,
    *,
    token_ids=None,
    metric: str = "js",
    label: Optional[str] = None,
    vmax: Optional[float] = None,
    rewards: Optional[Sequence[Optional[float]]] = None,
    logp_without=None,
    logp_with=None,
    entropy=None,
    top_without=None,
    top_with=None,
    in_span: Optional[Sequence[Optional[Sequence[bool]]]] = None,
    advantages: Optional[Mapping[str, Any]] = None,
    title: Optional[str] = None,
    topk: int = TOPK,
) -> dict[str, Any]:
    """The view's payload from its parts (shapes: ``scores`` and ``logp_with`` (K, T), the vectors (T,),
    ``top_without`` T lists and ``top_with`` K x T lists of (token, probability), ``in_span`` K lists of T flags or
    None); ``vmax`` is the score of the brightest colour (default: the largest shown; give two views the same to
    put them on one scale)."""
    tokens, verifiers = [clean_text(t) for t in tokens], [clean_text(v) for v in verifiers]
    K, T = len(verifiers), len(tokens)
    scores = _mat(scores, K, T, "scores")
    shown = [v for row in scores for v in row if v is not None]
    vmax = max(shown, default=0.0) if vmax is None else vmax
    vocab = _Vocab()
    out: dict[str, Any] = {
        "tokens": tokens,
        "ids": [int(i) for i in _plain(token_ids)] if token_ids is not None else None,
        "verifiers": verifiers,
        "metric": metric,
        "label": label or metric,
        "vmax": round_sig(vmax) or 0,
        "scores": scores,
        "rewards": [round_sig(r) for r in rewards] if rewards is not None else None,
        "lp0": _vec(logp_without, T, "logp_without"),
        "lp": _mat(logp_with, K, T, "logp_with"),
        "ent": _vec(entropy, T, "entropy"),
        "top0": [vocab.flat(p, topk) for p in top_without] if top_without and len(top_without) == T else None,
        "top": (
            [[vocab.flat(p, topk) for p in row] if len(row) == T else [] for row in top_with]
            if top_with and len(top_with) == K
            else None
        ),
        "adv": advantages_entry(advantages, T),
        "title": clean_text(title) if title else None,
    }
    spans = [token_runs(f) for f in in_span] if in_span is not None else []
    out["span"] = spans if any(s is not None for s in spans) else None
    out["vocab"] = list(vocab.index) or None
    return {k: v for k, v in out.items() if v is not None}


def relevance_label(rel: Relevance, raw: bool = False) -> str:
    """What the colour of a replay's token view means, e.g. ``js`` or ``js minus others control``."""
    if raw or rel.control == "none":
        return f"{'raw ' if raw and rel.control != 'none' else ''}{rel.metric}"
    return f"{rel.metric} minus {rel.control} control"


def relevance_payload(
    rel: Relevance,
    *,
    raw: bool = False,
    vmax: Optional[float] = None,
    advantages: Optional[Mapping[str, Any]] = None,
    title: Optional[str] = None,
) -> dict:
    """The payload of one replay: its (controlled or ``raw``) scores, log-probs, top predictions, rewards, spans."""
    return token_view_payload(
        rel.tokens,
        rel.verifiers,
        rel.raw_scores if raw else rel.scores,
        token_ids=rel.token_ids,
        metric=rel.metric,
        label=relevance_label(rel, raw),
        vmax=vmax,
        rewards=[rel.rewards.get(v) for v in rel.verifiers],
        logp_without=rel.logp_without,
        logp_with=rel.logp_with,
        entropy=rel.entropy,
        top_without=rel.top_without,
        top_with=rel.top_with,
        in_span=[rel.token_in_span(v) for v in rel.verifiers],
        advantages=advantages,
        title=title,
    )


def step_payload(step, metric: str, title: Optional[str] = None) -> dict:
    """The payload of a replay in progress (a :class:`mrtpo_viz.relevance.progressive.ReplayStep`): every token, one
    row per verifier; the rows replayed so far coloured by their raw ``metric``, the others without colour
    (``null`` scores)."""
    T = len(step.tokens)
    rows = step.rows.tolist() + [[None] * T] * (step.K - step.done)
    label = f"{'raw ' if step.done else ''}{metric}"
    return token_view_payload(
        step.tokens, step.verifiers, rows, token_ids=step.token_ids, metric=metric, label=label, title=title
    )


def frame_payload(frame, title: Optional[str] = None) -> dict:
    """The payload of one scored rollout from its rows of the per-token table (``Relevance.to_frame`` columns:
    ``position``, ``token``, ``token_id``, ``verifier``, ``score``, ``logp_with``, ``logp_without``, ``entropy``,
    ``in_span``, ``reward``, ``metric``). The table keeps no top predictions, so the panel shows none."""
    import pandas as pd

    verifiers = list(dict.fromkeys(frame["verifier"]))
    rows = [frame[frame["verifier"] == v].sort_values("position") for v in verifiers]
    first = rows[0]
    col = lambda g, c: g[c].tolist() if c in g and g[c].notna().all() else None  # noqa: E731
    spans = [None if col(g, "in_span") is None else [bool(x) for x in g["in_span"]] for g in rows]
    reward = [None if "reward" not in g or pd.isna(g["reward"].iloc[0]) else float(g["reward"].iloc[0]) for g in rows]
    lp = [col(g, "logp_with") for g in rows]
    return token_view_payload(
        [str(t) for t in first["token"]],
        verifiers,
        [g["score"].tolist() for g in rows],
        token_ids=col(first, "token_id"),
        metric=str(first["metric"].iloc[0]) if "metric" in first else "score",
        rewards=reward,
        logp_without=col(first, "logp_without"),
        logp_with=None if None in lp else lp,
        entropy=col(first, "entropy"),
        in_span=spans,
        title=title,
    )


def encode(payload: Optional[Mapping[str, Any]]) -> Optional[str]:
    """``payload`` as the JSON text the browser receives (compact; ``<`` escaped so no ``</script>`` appears)."""
    if payload is None or isinstance(payload, str):
        return payload
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")


def payload_bytes(payload: Optional[Mapping[str, Any]]) -> int:
    """Size in bytes (UTF-8) of the JSON text of ``payload``."""
    return len((encode(payload) or "").encode("utf-8"))


__all__ = [
    "SIG",
    "TOPK",
    "advantages_entry",
    "clean_text",
    "encode",
    "frame_payload",
    "payload_bytes",
    "relevance_label",
    "relevance_payload",
    "token_runs",
    "token_view_payload",
]
