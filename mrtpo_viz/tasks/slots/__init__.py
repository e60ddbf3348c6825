"""The ``slots`` family: a task with headroom for token credit by construction (the credit study's main arm).

The prompt names four cities, one per part; the response has four lines ``Part k, City: <filler> CODE <filler>.``,
about 120 tokens, and each city has a fixed code (:data:`CODE_OF`, the same map in every prompt). Reward ``k``
(``slots.part<k>``) is 1 iff part ``k`` carries city ``k``'s code. Its verifier information is that one fact
(``Part 2 must name Lima's code, which is CHF.``), and its relevant spans are the two tokens that decide it: the
header's city (``Part k, City:`` must name city ``k``: the code a policy writes follows from the city it wrote, so
an oracle that credited the code alone left the header to drift) and the first code word of part ``k`` (where part
``k`` holds no code word, the part's text: its absence decided; a missing part, none).
The rewards are independent by design: each reads one token of its own line, and the filler decides nothing.

Codes and cities are single tokens (with their leading space) in the bundled policy's vocabulary, so each
decision is exactly one token of the response.

``meta = {"cities": [4 names], "codes": [4 codes]}``: the codes are what the verifiers compare with.
"""

from __future__ import annotations

import re
from typing import Optional

from ..base import Argument, Example, Span, Verdict, Verifier, register

K = 4
CODE_OF: dict[str, str] = {
    "Berlin": "GBP",
    "Denver": "JPY",
    "Lima": "CHF",
    "Lisbon": "USD",
    "Madrid": "INR",
    "Nairobi": "AUD",
    "Seoul": "NYSE",
    "Sydney": "NASDAQ",
}
"""The fixed city -> code map (arbitrary on purpose: a policy learns it from the information or from reward)."""
CITIES: tuple[str, ...] = tuple(CODE_OF)
CODES: tuple[str, ...] = tuple(CODE_OF.values())
VERIFIERS: tuple[str, ...] = tuple(f"slots.part{k}" for k in range(1, K + 1))

_LINE = re.compile(r"^Part (\d+)(?:, *([A-Za-z]+))? *:(.*)$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z]+")


def _line(response: str, k: int):
    for m in _LINE.finditer(response):
        if int(m.group(1)) == k:
            return m
    return None


def part_span(response: str, k: int) -> Optional[Span]:
    """Character span of the text of part ``k`` (after ``Part k, City:``) in the first such line, or None."""
    m = _line(response, k)
    return None if m is None else m.span(3)


def header_city(response: str, k: int) -> tuple[Optional[str], Optional[Span]]:
    """The city that part ``k``'s header names (``Part k, City:``) and its span, or (None, None)."""
    m = _line(response, k)
    return (None, None) if m is None or m.group(2) is None else (m.group(2), m.span(2))


def decision(response: str, k: int) -> tuple[Optional[str], Optional[Span]]:
    """Part ``k``'s decision: (its first code word, that word's span), (None, the part's span) when the part holds
    no code word, (None, None) when there is no part ``k``."""
    part = part_span(response, k)
    if part is None:
        return None, None
    for w in _WORD.finditer(response, *part):
        if w.group() in CODES:
            return w.group(), w.span()
    return None, part


def _expected(example: Example, k: int) -> tuple[str, str]:
    cities, codes = example.meta.get("cities"), example.meta.get("codes")
    if not cities or not codes or len(cities) < k or len(codes) < k:
        raise ValueError(f"a slots example needs meta 'cities' and 'codes' with at least {k} entries")
    return cities[k - 1], codes[k - 1]


def _verifier(k: int) -> Verifier:
    def info(example: Example) -> str:
        city, code = _expected(example, k)
        return f"Part {k} must name {city}'s code, which is {code}."

    def check(response: str, example: Example) -> Verdict:
        city, code = _expected(example, k)
        word, _ = decision(response, k)
        named = header_city(response, k)[0]
        if part_span(response, k) is None:
            return Verdict(0.0, f"no line 'Part {k}, City:'")
        if named != city:
            return Verdict(0.0, f"part {k}'s header names {named or 'no city'}, not {city}")
        if word is None:
            return Verdict(0.0, f"part {k} names no code")
        if word != code:
            return Verdict(0.0, f"part {k} names {word}, but {city}'s code is {code}")
        return Verdict(1.0, f"part {k} names {city} and its code {code}")

    def spans(response: str, example: Example) -> list[Span]:
        city_span, code_span = header_city(response, k)[1], decision(response, k)[1]
        return [sp for sp in (city_span, code_span) if sp is not None]

    return Verifier(
        name=f"slots.part{k}",
        task="slots",
        title=f"Part {k}",
        description=f"1 iff line 'Part {k}, City:' names the prompt's city {k} and its code (its first code word).",
        info_fn=info,
        check_fn=check,
        spans_fn=spans,
        arguments=(
            Argument("cities", "Cities (one per part)", "json"),
            Argument("codes", "Codes (one per part)", "json"),
        ),
    )


for _k in range(1, K + 1):
    register(_verifier(_k))


WEATHER: tuple[str, ...] = ("clouds", "cold", "rain", "snow", "tides", "warm", "waves", "winter")
"""Eight of the filler words (:data:`.generators.slots.FILLER`): the whole-response reward counts them."""
WEATHER_MIN = 17
"""At least this many weather words in the whole response: the slots policy, drawing its 80 filler words uniformly
from 38, writes 16.7 on average (sd 3.1), so about half of its responses pass (0.48 of 96 samples on the 2026-12-04
build)."""


def weather_words(response: str) -> list[tuple[str, Span]]:
    """The weather words of the response's four parts, with their spans."""
    found = []
    for k in range(1, K + 1):
        part = part_span(response, k)
        if part is not None:
            found += [(w.group(), w.span()) for w in _WORD.finditer(response, *part) if w.group() in WEATHER]
    return found


def _weather_verifier() -> Verifier:
    """A whole-response reward (the credit study's control arm): every filler word of every part decides the count,
    so its relevant spans are the four parts' texts; no single token decides it."""

    def info(example: Example) -> str:
        return f"Use at least {WEATHER_MIN} of the words {', '.join(WEATHER)} across the whole response."

    def check(response: str, example: Example) -> Verdict:
        n = len(weather_words(response))
        ok = n >= WEATHER_MIN
        return Verdict(float(ok), f"{n} weather words ({'at least' if ok else 'fewer than'} {WEATHER_MIN})")

    def spans(response: str, example: Example) -> list[Span]:
        return [sp for sp in (part_span(response, k) for k in range(1, K + 1)) if sp is not None]

    return Verifier(
        name="slots.weather",
        task="slots",
        title="Weather words (whole response)",
        description=f"1 iff the four parts together use at least {WEATHER_MIN} of the words {', '.join(WEATHER)}.",
        info_fn=info,
        check_fn=check,
        spans_fn=spans,
    )


register(_weather_verifier())
