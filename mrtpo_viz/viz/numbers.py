"""Numbers as people read them: 3 significant digits in tables, hover text and the token view, and one minus sign
everywhere (ASCII ``-``, as tables and plotly write it; the token view's script does the same)."""

from __future__ import annotations

import math
from typing import Any, Optional

SIG = 3
"""Significant digits of every number the app shows."""


def round_sig(x: Any, sig: int = SIG) -> Optional[float]:
    """``x`` rounded to ``sig`` significant digits (``0.123456 -> 0.123``, ``1234.5 -> 1230.0``); None for missing,
    NaN or infinite values. Integral results come back as ``int`` (``1`` is shorter than ``1.0`` in JSON)."""
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x):
        return None
    r = float(f"{x:.{sig}g}")
    return int(r) if r.is_integer() and abs(r) < 1e15 else r


def fmt_sig(x: Any, sig: int = SIG, signed: bool = False, missing: str = "n/a") -> str:
    """``x`` as text with ``sig`` significant digits (``+`` in front of non-negative values when ``signed``)."""
    r = round_sig(x, sig)
    if r is None:
        return missing
    text = f"{float(r):.{sig}g}"
    return f"+{text}" if signed and r >= 0 else text


def sig_frame(frame):
    """A copy of a pandas frame with every float column rounded to :data:`SIG` significant digits (NaN stays NaN);
    other columns are unchanged."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype.kind == "f":
            out[col] = [float(f"{v:.{SIG}g}") for v in out[col].to_numpy(dtype=float)]
    return out
