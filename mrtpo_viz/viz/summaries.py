"""Tables of replays and rollouts (no figures): verdict rows, weight diagnostics, top tokens, per-rollout tables,
short labels for responses. Numbers to 3 significant digits; the numbers themselves come from the library."""

from __future__ import annotations

from ..relevance.results import Relevance
from ..relevance.diagnostics import WeightDiagnostics
from .colours import visible
from .numbers import fmt_sig, round_sig


VERDICT_HEADERS = ["verifier", "reward", "reason", "mean relevance", "max relevance"]
NEEDS_INPUT = "needs input"
"""The reward cell of a verifier that was not scored or replayed: it lacks arguments (a free prompt)."""


def verdict_rows(rel: Relevance | None, needs: dict[str, list[str]] | None = None) -> list[list]:
    """One row per verifier (:data:`VERDICT_HEADERS`), numbers to 3 significant digits; then one row per verifier
    in ``needs`` (name -> the arguments it lacks), marked "needs input" instead of a reward."""
    rows = (
        [
            [
                name,
                round_sig(rel.rewards.get(name)),
                rel.reasons.get(name, ""),
                round_sig(rel.scores[k].mean()),
                round_sig(rel.scores[k].max()),
            ]
            for k, name in enumerate(rel.verifiers)
        ]
        if rel is not None and rel.T
        else []
    )
    return rows + [
        [name, NEEDS_INPUT, f"not scored or replayed: give {', '.join(missing)}", None, None]
        for name, missing in (needs or {}).items()
    ]


WEIGHT_NOTE = (
    "Gini 0: every token the same credit (GDPO); near 1: one token. Effective tokens: the share of "
    "tokens that carry the credit. On spans: the share of the credit on the verifier's relevant spans; "
    "span tokens: their share of the tokens, what uniform credit would put there (n/a: spans unknown)."
)


def short_names(names) -> list[str]:
    """Verifier names without their family (``tool_call.format`` -> ``format``) where that keeps them apart."""
    short = [n.rsplit(".", 1)[-1] for n in names]
    return short if len(set(short)) == len(short) else list(names)


def weight_markdown(diag: WeightDiagnostics) -> str:
    """A compact table of MRTPO's weight diagnostics, one column per verifier (it sits in a narrow column beside the
    heatmap), 3 significant digits, with what the rows mean."""
    rows = [
        ("Gini", diag.gini),
        ("effective tokens", diag.effective_ratio),
        ("on spans", diag.span_share),
        ("span tokens", diag.span_tokens),
    ]
    names = short_names(diag.verifiers)
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    lines += [f"| {label} | " + " | ".join(fmt_sig(v) for v in values) + " |" for label, values in rows]
    return "\n".join(lines) + f"\n\n<small>{WEIGHT_NOTE}</small>"


def distinct_snippets(texts: list[str], width: int = 32) -> list[str]:
    """Short labels that tell texts apart: each from where it first differs from the others (samples of one prompt
    often share a long opening, so their first characters all look the same), ``width`` characters, with
    "..." where text was cut."""

    def common(a: str, b: str) -> int:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    out = []
    for i, text in enumerate(texts):
        shared = max((common(text, other) for j, other in enumerate(texts) if j != i), default=0)
        start = max(0, min(shared - 4, len(text) - width))  # a few characters of context before the difference
        piece = " ".join(text[start : start + width].split())
        out.append(("..." if start else "") + piece + ("..." if start + width < len(text) else ""))
    return out


def top_tokens(frame, n: int = 10, min_count: int = 1):
    """Per verifier, the ``n`` token strings with the highest mean relevance (seen at least ``min_count`` times).

    Returns a pandas frame: ``verifier``, ``token``, ``mean relevance``, ``count``.
    """
    g = frame.groupby(["verifier", "token"], sort=False)["score"].agg(["mean", "count"]).reset_index()
    g = g[g["count"] >= min_count].sort_values(["verifier", "mean"], ascending=[True, False])
    out = g.groupby("verifier", sort=False).head(n).rename(columns={"mean": "mean relevance"})
    out["token"] = out["token"].map(visible)
    out["mean relevance"] = out["mean relevance"].map(round_sig)
    return out.reset_index(drop=True)


def rollout_summary(frame):
    """One row per (rollout, verifier): reward, mean and max relevance, the most relevant token, span share.

    Args:
        frame: long per-token table with ``id``, ``verifier``, ``token``, ``score``, ``reward``, ``in_span``.
    """
    import pandas as pd

    def one(g):
        top = g["score"].idxmax()
        span = g["in_span"].astype("boolean") if "in_span" in g else None
        total = g["score"].clip(lower=0).sum()
        in_span = (
            None
            if span is None or span.isna().any() or total <= 0
            else float(g["score"].clip(lower=0)[span.fillna(False)].sum() / total)
        )
        return pd.Series(
            {
                "reward": round_sig(g["reward"].iloc[0]),
                "tokens": len(g),
                "mean relevance": round_sig(g["score"].mean()),
                "max relevance": round_sig(g["score"].max()),
                "top token": visible(str(g.loc[top, "token"])),
                "span share": round_sig(in_span),
            }
        )

    return frame.groupby(["id", "verifier"], sort=False)[list(frame.columns)].apply(one).reset_index()
