"""Colours and visible whitespace shared by every view: colour-blind-safe scales (Viridis for relevance, a red-blue
diverging scale centred on 0 for differences, Okabe-Ito for one colour per reward)."""
from __future__ import annotations

import functools

from plotly.colors import get_colorscale, sample_colorscale

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
