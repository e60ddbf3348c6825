"""The ``<tool_call>`` response format: finding the blocks, decoding their calls, and locating keys and values.

A response is one or more ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks, one per call. Parsing
uses plain string search and :mod:`json` (no regular expressions, so nothing can backtrack), and a small scanner that
records where each key and value of a call object sits in the response (for the relevant spans).
"""

from __future__ import annotations

import json
from typing import Any, Optional
from collections.abc import Iterator

from ..base import Span
from ..tool_catalog import CLOSE_TAG, OPEN_TAG

_WS = " \t\n\r"
_DECODER = json.JSONDecoder()
Block = tuple[int, int, int, int]
"""``(tag_start, inner_start, inner_end, block_end)`` of one block."""
Scanned = dict[str, tuple[Span, Span, Any]]
"""``{key: (key span with its quotes, value span, value)}`` of one JSON object; a string's value span excludes its
quotes, any other value's is the value as written."""


def block_bounds(text: str) -> list[Block]:
    """Every opening tag's block. The inner text ends at the closing tag (``block_end`` is then after it) or, without
    one, at the next opening tag or the end of the text (then ``block_end == inner_end``)."""
    out, i = [], text.find(OPEN_TAG)
    while i != -1:
        inner = i + len(OPEN_TAG)
        nxt, close = text.find(OPEN_TAG, inner), text.find(CLOSE_TAG, inner)
        if close != -1 and (nxt == -1 or close < nxt):
            out.append((i, inner, close, close + len(CLOSE_TAG)))
        else:
            end = len(text) if nxt == -1 else nxt
            out.append((i, inner, end, end))
        i = nxt
    return out


def layout_error(text: str, blocks: list[Block], single: bool = False) -> Optional[str]:
    """Why the text is not closed blocks with only whitespace around and between them (exactly one block when
    ``single``), or None."""
    if not blocks:
        return "no <tool_call> block"
    if single and len(blocks) > 1:
        return f"{len(blocks)} <tool_call> blocks; exactly one is allowed"
    pos = 0
    for k, (start, _, end, block_end) in enumerate(blocks, 1):
        if text[pos:start].strip():
            return "text outside the <tool_call> block" + ("s" if len(blocks) > 1 else "")
        if block_end == end:
            return "missing </tool_call> closing tag" + (f" (block {k})" if len(blocks) > 1 else "")
        pos = block_end
    return ("text outside the <tool_call> block" + ("s" if len(blocks) > 1 else "")) if text[pos:].strip() else None


def _decode(text: str, inner: int, end: int, where: str, strict: bool) -> tuple[Optional[dict], str]:
    try:
        obj = json.loads(text[inner:end])
    except (ValueError, RecursionError):
        return None, f"{where} is not valid JSON"
    if not (isinstance(obj, dict) and isinstance(obj.get("name"), str) and isinstance(obj.get("arguments"), dict)):
        return None, f'{where} is not {{"name": string, "arguments": object}}'
    if strict and set(obj) != {"name", "arguments"}:
        return None, f"unexpected keys {sorted(set(obj) - {'name', 'arguments'})} in the call object of {where}"
    return obj, ""


def parse_calls(response: Any, strict: bool = True, single: bool = False) -> tuple[Optional[list[dict]], str]:
    """The calls ``[{"name", "arguments"}]`` of all blocks, or ``(None, why not)``.

    ``strict`` (the format rule) also wants the layout of :func:`layout_error` and no keys besides ``name`` and
    ``arguments``; otherwise text around the blocks, a missing closing tag and extra keys are ignored.
    """
    text = response if isinstance(response, str) else ""
    blocks = block_bounds(text)
    why = layout_error(text, blocks, single) if strict else (None if blocks else "no <tool_call> block")
    if why:
        return None, why
    calls = []
    for k, (_, inner, end, _) in enumerate(blocks, 1):
        obj, why = _decode(text, inner, end, f"block {k}" if len(blocks) > 1 else "the block", strict)
        if obj is None:
            return None, why
        calls.append(obj)
    return calls, ""


def render_calls(calls: list[tuple[str, dict]]) -> str:
    """Calls ``[(name, arguments)]`` as ``<tool_call>`` blocks, one per line (``json.dumps`` default separators, as
    the bundled references)."""
    return "\n".join(
        OPEN_TAG + json.dumps({"name": n, "arguments": a}, ensure_ascii=False) + CLOSE_TAG for n, a in calls
    )


# --- locating keys and values ------------------------------------------------------------------------------------


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def scan_object(text: str, i: int) -> Optional[Scanned]:
    """The keys and values of the JSON object that starts at ``text[i] == "{"``, one level deep, or None if it is not
    a well-formed object. A repeated key keeps its last occurrence (as :func:`json.loads`)."""
    if i >= len(text) or text[i] != "{":
        return None
    found: Scanned = {}
    i = _skip_ws(text, i + 1)
    if i < len(text) and text[i] == "}":
        return found
    try:
        while i < len(text) and text[i] == '"':
            key, k_end = json.decoder.scanstring(text, i + 1)
            j = _skip_ws(text, k_end)
            if j >= len(text) or text[j] != ":":
                return None
            v_start = _skip_ws(text, j + 1)
            value, v_end = _DECODER.raw_decode(text, v_start)
            quoted = isinstance(value, str)
            found[key] = ((i, k_end), (v_start + quoted, v_end - quoted), value)
            i = _skip_ws(text, v_end)
            if i < len(text) and text[i] == "}":
                return found
            if i >= len(text) or text[i] != ",":
                return None
            i = _skip_ws(text, i + 1)
    except (ValueError, RecursionError):
        return None
    return None


def scanned_blocks(text: str) -> Iterator[tuple[Block, Optional[int], Optional[Scanned]]]:
    """Per block: its bounds, the index of its first ``{`` (None when the inner text does not start with one after
    whitespace) and its scanned call object (None when it is not a well-formed object)."""
    for block in block_bounds(text):
        _, inner, end, _ = block
        brace = _skip_ws(text, inner)
        brace = brace if brace < end and text[brace] == "{" else None
        yield block, brace, None if brace is None else scan_object(text[:end], brace)


def argument_scan(text: str, scanned: Scanned) -> Scanned:
    """The scanned ``arguments`` object of a scanned call (empty when it has none)."""
    args = scanned.get("arguments")
    return (scan_object(text, args[1][0]) or {}) if args is not None and isinstance(args[2], dict) else {}
