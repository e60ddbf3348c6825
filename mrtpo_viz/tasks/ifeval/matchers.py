"""Linear-time matchers for three official IFEval patterns that take quadratic time in Python's ``re``.

Each gives exactly the matches of the official pattern (the test compares them with the regexes on fuzzed strings):
``^\\s*\\*[^\\*].*$`` and ``^\\s*-.*$`` (bullets, ``re.M``) over many blank lines, ``\\[.*?\\]`` (placeholders) over
many ``[`` without a ``]``, and ``<<[^\\n]+>>`` (titles) over many ``<<``. A response of 50,000 such characters took the
regexes tens of seconds; here it takes milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable

BULLET_STAR_RE = re.compile(r"^\s*\*[^\*].*$", re.M)
BULLET_DASH_RE = re.compile(r"^\s*-.*$", re.M)
"""The official bullet patterns (:func:`bullet_matches` finds their matches)."""
PLACEHOLDER_RE = re.compile(r"\[.*?\]")
"""The official placeholder pattern (:func:`placeholder_spans` finds its matches)."""
TITLE_RE = re.compile(r"<<[^\n]+>>")
"""The official title pattern (:func:`title_spans` finds its matches whose inside is not blank)."""


def _next_index(value: str, stop: Callable[[str], bool]) -> list[int]:
    """``out[i]``: the first index ``>= i`` whose character satisfies ``stop`` (``len(value)`` if none)."""
    n = len(value)
    out = [n] * (n + 1)
    for i in range(n - 1, -1, -1):
        out[i] = i if stop(value[i]) else out[i + 1]
    return out


def bullet_matches(value: str) -> list[tuple[int, int, int]]:
    r"""(start, marker, end) of each match of the official ``^\s*\*[^\*].*$``, then of ``^\s*-.*$`` (``re.M``).

    Linear time, where the regexes take quadratic time on many blank lines (``\s*`` runs over newlines from each
    line start). A match starts at a line start, skips whitespace, which may span lines, to the marker; a ``*``
    must be followed by any character but ``*``, a newline included; it ends at the end of the line that
    character is on (``.*$``). The scan goes on from there, as ``re.finditer`` does."""
    n, starts = len(value), [0] + [i + 1 for i, c in enumerate(value) if c == "\n"]
    non_space = _next_index(value, lambda c: not c.isspace())
    found = []
    for marker in "*-":
        pos = 0
        for p in starts:
            q = non_space[p] if pos <= p < n else n
            if q < n and value[q] == marker and (marker == "-" or q + 1 < n and value[q + 1] != "*"):
                end = value.find("\n", q + (2 if marker == "*" else 1))
                pos = n if end < 0 else end
                found.append((p, q, pos))
    return found


def placeholder_spans(value: str) -> list[tuple[int, int]]:
    r"""The matches of the official ``\[.*?\]`` (a ``[`` and the first ``]`` after it on its line), in linear time
    (the regex is quadratic on many ``[`` without a ``]``)."""
    stop = _next_index(value, lambda c: c in "]\n")
    out, i, n = [], 0, len(value)
    while i < n:
        r = stop[i + 1] if value[i] == "[" else n
        if r < n and value[r] == "]":
            out.append((i, r + 1))
            i = r + 1
        else:
            i += 1
    return out


def title_spans(value: str) -> list[tuple[int, int]]:
    r"""The matches of the official ``<<[^\n]+>>`` whose inside (``<``/``>`` stripped) is not blank, in linear time.

    ``re.findall`` costs quadratic time on a line of many ``<<``; the same matches follow from the pattern itself:
    on each line the greedy match runs from the first ``<<`` to the last ``>>``, if there is a character between
    them, and then nothing is left of that line for another match."""
    out, start = [], 0
    for line in value.split("\n"):
        first, last = line.find("<<"), line.rfind(">>")
        if first >= 0 and last >= first + 3 and line[first : last + 2].lstrip("<").rstrip(">").strip():
            out.append((start + first, start + last + 2))
        start += len(line) + 1
    return out
