"""Colours and visible whitespace shared by every view: colour-blind-safe scales (Viridis for relevance, a red-blue
diverging scale centred on 0 for differences, Okabe-Ito for one colour per reward)."""

from __future__ import annotations

SCALE = "Viridis"
"""Sequential, colour-blind-safe scale for relevance."""
DIVERGING = "RdBu_r"
"""Diverging scale centred on 0 for A/B differences (blue: B lower, red: B higher)."""
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
"""One colour per reward in the stacked advantage bars."""
VISIBLE_WHITESPACE = {"\n": "\u21b5", "\t": "\u21e5", "\r": "\u240d"}


def visible(token: str) -> str:
    """The token's text with newlines, tabs and all-space tokens made visible (not escaped)."""
    if token and not token.strip(" "):
        return "\u00b7" * len(token)
    return "".join(VISIBLE_WHITESPACE.get(ch, ch if ch.isprintable() else f"\\x{ord(ch):02x}") for ch in token)
