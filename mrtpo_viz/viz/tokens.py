"""Token HTML: the response as coloured tokens, one row per verifier, with hover text.

Every piece of text that reaches HTML goes through :func:`html.escape` (tokens can contain markup), and whitespace is
made visible.
"""
from __future__ import annotations

import html
from typing import Optional

from plotly.colors import sample_colorscale

from ..relevance.results import Relevance
from .colours import SCALE, _colour, _text_colour, visible


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
