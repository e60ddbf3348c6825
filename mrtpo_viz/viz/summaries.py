"""Summary numbers and tables of replays and rollouts (no figures): relevance concentration, verdict rows, top tokens,
per-rollout tables."""
from __future__ import annotations

import torch

from ..relevance.results import Relevance
from .colours import visible


def relevance_summary(rel: Relevance, verifier: str, top: int = 5) -> dict:
    """Numbers that compare information texts: span mass, concentration, top tokens of one verifier's relevance.

    ``span_mass``: share of the relevance on tokens inside the verifier's relevant spans (None where unknown);
    ``top10_mass``: share on the top 10% of tokens; ``effective_tokens``: ``exp`` of the entropy of the normalized
    relevance (T when uniform, 1 when all on one token).
    """
    d = rel.scores[rel.verifiers.index(verifier)].clamp_min(0.0)  # (T,)
    total = float(d.sum())
    p = d / total if total > 0 else torch.full_like(d, 1.0 / max(len(d), 1))
    n_top = max(1, round(0.1 * len(d)))
    in_span = rel.token_in_span(verifier)
    span_mass = None if in_span is None or total <= 0 else float(p[torch.tensor(in_span, dtype=torch.bool)].sum())
    order = torch.argsort(d, descending=True)[:top].tolist()
    entropy = float(-(p[p > 0] * p[p > 0].log()).sum())
    return {"mean": float(d.mean()) if len(d) else 0.0, "max": float(d.max()) if len(d) else 0.0,
            "span_mass": span_mass, "top10_mass": float(p.sort(descending=True).values[:n_top].sum()),
            "effective_tokens": float(torch.tensor(entropy).exp()),
            "top_tokens": [(rel.tokens[t], float(d[t])) for t in order]}


def verdict_rows(rel: Relevance) -> list[list]:
    """One row per verifier: name, reward, reason, mean and max relevance."""
    return [[name, rel.rewards.get(name), rel.reasons.get(name, ""), float(rel.scores[k].mean()),
             float(rel.scores[k].max())] for k, name in enumerate(rel.verifiers)] if rel.T else []


def top_tokens(frame, n: int = 10, min_count: int = 1):
    """Per verifier, the ``n`` token strings with the highest mean relevance (seen at least ``min_count`` times).

    Returns a pandas frame: ``verifier``, ``token``, ``mean relevance``, ``count``.
    """
    g = frame.groupby(["verifier", "token"], sort=False)["score"].agg(["mean", "count"]).reset_index()
    g = g[g["count"] >= min_count].sort_values(["verifier", "mean"], ascending=[True, False])
    out = g.groupby("verifier", sort=False).head(n).rename(columns={"mean": "mean relevance"})
    out["token"] = out["token"].map(visible)
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
        in_span = None if span is None or span.isna().any() or total <= 0 else \
            float(g["score"].clip(lower=0)[span.fillna(False)].sum() / total)
        return pd.Series({"reward": g["reward"].iloc[0], "tokens": len(g), "mean relevance": g["score"].mean(),
                          "max relevance": g["score"].max(), "top token": visible(str(g.loc[top, "token"])),
                          "span share": in_span})

    return frame.groupby(["id", "verifier"], sort=False)[list(frame.columns)].apply(one).reset_index()
