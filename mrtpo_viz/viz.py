"""Rendering: a :class:`~mrtpo_viz.results.Relevance` becomes token HTML or a plotly figure.

Pure functions of the data: no model, no gradio. Colours come from colour-blind-safe scales (Viridis for relevance,
a red-blue diverging scale centred on 0 for differences, Okabe-Ito for one colour per reward). Every piece of text
that reaches HTML goes through :func:`html.escape` (tokens can contain markup), and whitespace is made visible.
"""
from __future__ import annotations

import functools
import html
from dataclasses import dataclass
from typing import Optional, Sequence

import plotly.graph_objects as go
import torch
from plotly.colors import get_colorscale, sample_colorscale
from plotly.subplots import make_subplots

from .advantages import gdpo_advantages, mrtpo_token_advantages, mrtpo_token_weights
from .results import Relevance

SCALE = "Viridis"
"""Sequential, colour-blind-safe scale for relevance."""
DIVERGING = "RdBu_r"
"""Diverging scale centred on 0 for A/B differences (blue: B lower, red: B higher)."""
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
"""One colour per reward in the stacked advantage bars."""
VISIBLE_WHITESPACE = {"\n": "\u21b5", "\t": "\u21e5", "\r": "\u240d"}


# ----------------------------------------------------------------------------------------------- token HTML

def visible(token: str) -> str:
    """The token's text with newlines, tabs and all-space tokens made visible (not escaped)."""
    if token and not token.strip(" "):
        return "\u00b7" * len(token)
    return "".join(VISIBLE_WHITESPACE.get(ch, ch if ch.isprintable() else f"\\x{ord(ch):02x}") for ch in token)


def _text_colour(rgb: str) -> str:
    """Black or white, whichever reads better on the ``rgb(r, g, b)`` background."""
    r, g, b = (float(v) for v in rgb[rgb.index("(") + 1:rgb.index(")")].split(","))
    return "#000" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "#fff"


@functools.lru_cache(maxsize=8)
def _stops(name: str) -> tuple[tuple[float, str], ...]:
    """A named scale's (position, colour) stops, looked up once: plotly resolves a name on every
    ``sample_colorscale`` call (~0.7 ms, most of the token HTML's time for a 128-token, 3-verifier replay)."""
    return tuple((float(p), c) for p, c in get_colorscale(name))


def _colour(value: float, vmax: float) -> str:
    x = 0.0 if vmax <= 0 else min(max(value / vmax, 0.0), 1.0)
    return sample_colorscale([list(s) for s in _stops(SCALE)], [x])[0]


def _top(preds, n: int = 3) -> str:
    return ", ".join(f"{visible(tok)!r} {p:.2f}" for tok, p in list(preds)[:n]) or "n/a"


def _tip_parts(rel: Relevance, t: int, raw: bool) -> tuple[list[str], list[str]]:
    """The lines of token ``t``'s hover text shared by every verifier's row: (before, after) the log-probs with."""
    scores = rel.raw_scores if raw else rel.scores
    before = [f"token {t}: {visible(rel.tokens[t])!r} (id {rel.token_ids[t]})",
              f"{'raw ' if raw else ''}{rel.metric} relevance"
              + ("" if raw or rel.control == "none" else f" (control: {rel.control})") + ":"]
    before += [f"  {name}: {float(scores[k, t]):.4f}" for k, name in enumerate(rel.verifiers)]
    if rel.logp_without is not None:
        before.append(f"log p(token) without information: {float(rel.logp_without[t]):.3f}")
    after = []
    if rel.entropy is not None:
        after.append(f"entropy without information: {float(rel.entropy[t]):.3f} nats")
    if len(rel.top_without) > t:
        after.append(f"top without: {_top(rel.top_without[t])}")
    return before, after


def _tip_own(rel: Relevance, t: int, k: int) -> tuple[list[str], list[str]]:
    """Verifier k's own lines of token t's hover text: (log-prob with its information, its top predictions)."""
    name = rel.verifiers[k]
    logp = [f"log p(token) with {name}: {float(rel.logp_with[k, t]):.3f}"] if rel.logp_with is not None else []
    top = [f"top with {name}: {_top(rel.top_with[k][t])}"] if len(rel.top_with) > k and len(rel.top_with[k]) > t else []
    return logp, top


def tooltip(rel: Relevance, t: int, raw: bool = False, verifier: Optional[int] = None) -> str:
    """Hover text of token ``t``: the token, its relevance to every verifier, log-probs, top predictions.

    With ``verifier`` (a row index), the log-prob and top predictions with information are that verifier's only (the
    hover text of its row in the token view); otherwise every verifier's.
    """
    return _tip_text(_tip_parts(rel, t, raw), [_tip_own(rel, t, k) for k in
                                               (range(rel.K) if verifier is None else [verifier])])


def _tip_text(parts: tuple[list[str], list[str]], own: list[tuple[list[str], list[str]]]) -> str:
    """Shared lines and the verifiers' own lines in their order: token, relevance, log-probs, entropy, tops."""
    before, after = parts
    return "\n".join(before + [x for logp, _ in own for x in logp] + after + [x for _, top in own for x in top])


def _token_span(token: str, value: float, vmax: float, title: str) -> str:
    """One coloured token; ``title`` is the escaped hover text of its row.

    The span's shape (white-space, padding, font) comes from the view's one ``<style>`` block: K x T inline copies
    of it made the HTML of a 128-token, 3-verifier replay ~25% larger.
    """
    bg = _colour(value, vmax)
    br = "<br>" if "\n" in token else ""
    return (f'<span class="mrtpo-tok" data-score="{value:.4f}" title="{title}" '
            f'style="background:{bg};color:{_text_colour(bg)}">{html.escape(visible(token))}</span>{br}')


TOKEN_STYLE = ("<style>.mrtpo-token-view .mrtpo-tok{white-space:pre;border-radius:3px;padding:1px 1px;"
               "margin:0 1px 2px 0;display:inline-block;font-family:monospace}</style>")
"""Shape of every token span, once per token view (the view also reads right outside the app's stylesheet)."""


def legend_html(vmax: float, label: str) -> str:
    """A colour bar from 0 to ``vmax`` for the token rows."""
    stops = ", ".join(sample_colorscale(SCALE, [i / 10 for i in range(11)]))
    return (f'<div class="mrtpo-legend" style="display:flex;align-items:center;gap:6px;font-size:12px">'
            f'<span>0</span><span style="width:160px;height:10px;background:linear-gradient(to right, {stops})">'
            f'</span><span>{vmax:.3g}</span><span>{html.escape(label)}</span></div>')


def token_rows_html(rel: Relevance, raw: bool = False, vmax: Optional[float] = None) -> str:
    """The response as coloured tokens, one row per verifier; colour = relevance on one scale for all rows.

    Args:
        rel: the replay result (K verifiers, T tokens).
        raw: colour by ``raw_scores`` (the plain with-vs-without metric) instead of ``scores`` (after the control).
        vmax: value of the brightest colour (default: the largest score shown).
    """
    scores = rel.raw_scores if raw else rel.scores
    if vmax is None:
        vmax = float(scores.max()) if scores.numel() else 0.0
    rows, values = [], scores.tolist()  # (K, T) as floats once, not a tensor index per span
    # a row's hover text holds every verifier's relevance but only its own verifier's log-prob and top predictions
    # (all K of them in every row made the HTML of a 128-token, 3-verifier replay ~330 KB); shared lines built once
    parts = [_tip_parts(rel, t, raw) for t in range(rel.T)]
    for k, name in enumerate(rel.verifiers):
        reward = rel.rewards.get(name)
        badge = "" if reward is None else f" &middot; reward {reward:.2f}"
        titles = [html.escape(_tip_text(parts[t], [_tip_own(rel, t, k)]), quote=True) for t in range(rel.T)]
        tokens = "".join(_token_span(rel.tokens[t], values[k][t], vmax, titles[t]) for t in range(rel.T))
        rows.append(f'<div class="mrtpo-row"><div class="mrtpo-row-label" style="font-weight:600;margin:6px 0 2px">'
                    f'{html.escape(name)}{badge}</div><div class="mrtpo-tokens" style="line-height:1.9">{tokens}</div></div>')
    what = f"{'raw ' if raw or rel.control == 'none' else ''}{rel.metric}"
    what += "" if raw or rel.control == "none" else f" minus {rel.control} control"
    return f'<div class="mrtpo-token-view">{TOKEN_STYLE}{legend_html(vmax, what)}{"".join(rows)}</div>'


# ----------------------------------------------------------------------------------------------- heatmaps

def _token_axis(tokens: Sequence[str]) -> list[str]:
    """Unique x labels ``"t: token"`` (tokens repeat, positions do not)."""
    return [f"{t}: {visible(tok)}" for t, tok in enumerate(tokens)]


def _heatmap(z, tokens, rows, colorscale, zmid=None, colorbar_title="", colorbar_y=0.5, colorbar_len=1.0):
    return go.Heatmap(z=z, x=_token_axis(tokens), y=list(rows), colorscale=colorscale, zmid=zmid,
                      colorbar=dict(title=dict(text=colorbar_title), y=colorbar_y, len=colorbar_len),
                      hovertemplate="%{y}<br>token %{x}<br>value %{z:.4f}<extra></extra>", xgap=1, ygap=1)


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(title=dict(text=title), height=height, margin=dict(l=10, r=10, t=50, b=10),
                      template="plotly_white")
    fig.update_xaxes(showticklabels=False)
    return fig


def placeholder_figure(text: str, height: int = 200) -> go.Figure:
    """An empty chart with a hint. Shown before the first result, it also makes the page load the plotting
    library at once, not on the first click (that load took ~1-1.5 s of the click-to-heatmap time)."""
    fig = go.Figure()
    fig.add_annotation(text=text, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
                       font=dict(size=14, color="#777"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig.update_layout(height=height, margin=dict(l=10, r=10, t=10, b=10), template="plotly_white")


def relevance_heatmap(rel: Relevance, raw: bool = False, title: Optional[str] = None) -> go.Figure:
    """Verifiers x tokens heatmap of ``scores`` (or ``raw_scores``), ``z`` of shape (K, T)."""
    scores = rel.raw_scores if raw else rel.scores
    label = f"{'raw ' if raw else ''}{rel.metric}"
    fig = go.Figure(_heatmap(scores.tolist(), rel.tokens, rel.verifiers, SCALE, colorbar_title=label))
    fig.update_traces(zmin=0.0)
    fig.update_yaxes(autorange="reversed")  # first verifier on top, as in the token rows
    default = f"Relevance ({label}{'' if raw or rel.control == 'none' else ', control ' + rel.control})"
    return _layout(fig, title or default, 140 + 45 * rel.K)


def difference_heatmap(rel_a: Relevance, rel_b: Relevance, verifier: str) -> go.Figure:
    """A, B and B - A relevance of one verifier over the same response tokens (three rows)."""
    if rel_a.token_ids != rel_b.token_ids:
        raise ValueError("A and B must be replays of the same response tokens")
    a = rel_a.scores[rel_a.verifiers.index(verifier)]  # (T,)
    b = rel_b.scores[rel_b.verifiers.index(verifier)]  # (T,)
    zmax = float(torch.maximum(a.max(), b.max())) if a.numel() else 1.0
    diff_max = float((b - a).abs().max()) if a.numel() else 1.0
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.6, 0.4], vertical_spacing=0.08,
                        subplot_titles=("A and B", "B - A"))
    fig.add_trace(_heatmap([a.tolist(), b.tolist()], rel_a.tokens, ["A", "B"], SCALE, colorbar_title=rel_a.metric,
                           colorbar_y=0.75, colorbar_len=0.5), row=1, col=1)
    fig.add_trace(_heatmap([(b - a).tolist()], rel_a.tokens, ["B - A"], DIVERGING, zmid=0.0,
                           colorbar_title="B - A", colorbar_y=0.2, colorbar_len=0.4), row=2, col=1)
    fig.data[0].update(zmin=0.0, zmax=zmax)
    fig.update_yaxes(autorange="reversed", row=1, col=1)  # A above B
    fig.data[1].update(zmin=-diff_max, zmax=diff_max)
    return _layout(fig, f"{verifier}: information A vs B", 330)


# ----------------------------------------------------------------------------------------------- advantages

@dataclass(frozen=True)
class AdvantageBreakdown:
    """Per-token advantages of one response (row ``row`` of its group) under GDPO and MRTPO.

    ``parts[k].sum(0) + baseline == mrtpo`` holds exactly: ``parts[k, t] = lambda_k w[k, t] Ahat_k / (std S + eps)``
    and ``baseline`` is the rest (``-mean_batch S / (std S + eps)``, 0 for a single group up to rounding).
    """

    gdpo: float
    """The response's GDPO advantage, the same on every token."""
    mrtpo: torch.Tensor
    """(T,) MRTPO token advantages."""
    parts: torch.Tensor
    """(K, T) each reward's share of the MRTPO advantage."""
    baseline: torch.Tensor
    """(T,) what the batch centering adds to every token."""
    per_reward: torch.Tensor
    """(G, K) the group's per-reward advantages ``Ahat``."""
    group_gdpo: torch.Tensor
    """(G,) the group's GDPO advantages."""


def advantage_breakdown(rewards, relevance, alpha: float = 1.0, gamma: float = 1.0, weights=None,
                        row: int = 0) -> AdvantageBreakdown:
    """Split row ``row``'s MRTPO token advantages into one stack per reward, for display.

    Args:
        rewards: (G, K) the group's rewards; row ``row`` is the replayed response.
        relevance: (K, T) that response's relevance (other rows' relevance does not change its advantages).
        alpha, gamma: MRTPO's weighting (see :func:`mrtpo_viz.advantages.mrtpo_token_weights`).
        weights: (K,) reward weights, default 1.
    """
    rewards = torch.as_tensor(rewards, dtype=torch.float32)
    relevance = torch.as_tensor(relevance, dtype=torch.float32)
    G, K = rewards.shape
    T = relevance.shape[-1]
    if relevance.shape != (K, T):
        raise ValueError(f"relevance must be (K={K}, T), got {tuple(relevance.shape)}")
    if not 0 <= row < G:
        raise ValueError(f"row {row} is outside the group of {G}")
    lam = torch.ones(K) if weights is None else torch.as_tensor(weights, dtype=torch.float32)
    d = torch.ones(1, G, K, T)  # (N=1, G, K, T): other rows' relevance does not enter row `row`'s advantages
    d[0, row] = relevance
    mask = torch.ones(1, G, T)  # (N=1, G, T)
    ahat, final = gdpo_advantages(rewards[None], lam)  # (1, G, K), (1, G)
    adv = mrtpo_token_advantages(rewards[None], d, mask, lam, alpha, gamma)[0, row]  # (T,)
    w = mrtpo_token_weights(d, mask, alpha, gamma)[0, row]  # (K, T)
    S = (ahat[0] * lam).sum(-1)  # (G,)
    scale = 1.0 / (float(S.std()) + 1e-4) if G > 1 else 1.0 / 1e-4
    parts = lam[:, None] * w * ahat[0, row, :, None] * scale  # (K, T)
    return AdvantageBreakdown(float(final[0, row]), adv, parts, adv - parts.sum(0), ahat[0], final[0])


def advantage_bars(tokens: Sequence[str], verifiers: Sequence[str], br: AdvantageBreakdown) -> go.Figure:
    """Per-token advantage: MRTPO stacked per reward (bars), GDPO's uniform advantage and MRTPO's total (lines)."""
    x = _token_axis(tokens)
    fig = go.Figure()
    for k, name in enumerate(verifiers):
        fig.add_bar(x=x, y=br.parts[k].tolist(), name=f"MRTPO: {name}", marker_color=OKABE_ITO[k % len(OKABE_ITO)],
                    hovertemplate=f"{name}<br>%{{x}}<br>%{{y:.3f}}<extra></extra>")
    if float(br.baseline.abs().max()) > 1e-6:
        fig.add_bar(x=x, y=br.baseline.tolist(), name="batch centering", marker_color="#999999")
    fig.add_scatter(x=x, y=br.mrtpo.tolist(), mode="markers", name="MRTPO total", marker=dict(color="#000", size=5))
    fig.add_scatter(x=x, y=[br.gdpo] * len(x), mode="lines", name=f"GDPO (uniform) {br.gdpo:.3f}",
                    line=dict(color="#D55E00", dash="dash"))
    fig.update_layout(barmode="relative", legend=dict(orientation="h", y=-0.15), yaxis_title="advantage")
    return _layout(fig, "Per-token advantage: GDPO (uniform) vs MRTPO (stacked per reward)", 360)


# ----------------------------------------------------------------------------------------------- summaries

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


# ----------------------------------------------------------------------------------------------- rollouts

def mean_relevance_bars(frame) -> go.Figure:
    """Mean relevance per verifier over all scored tokens, controlled and raw side by side.

    Args:
        frame: long per-token table (``Relevance.to_frame`` rows of many rollouts): ``verifier``, ``score``,
            ``raw_score``.
    """
    means = frame.groupby("verifier", sort=False)[["score", "raw_score"]].mean()
    fig = go.Figure()
    fig.add_bar(x=list(means.index), y=means["score"].tolist(), name="relevance (after control)",
                marker_color=OKABE_ITO[0])
    fig.add_bar(x=list(means.index), y=means["raw_score"].tolist(), name="raw relevance", marker_color=OKABE_ITO[1])
    fig.update_layout(barmode="group", yaxis_title="mean relevance per token",
                      legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"))
    fig = _layout(fig, "Mean relevance per verifier", 340)
    fig.update_xaxes(showticklabels=True)
    return fig


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
