"""Slots examples (:mod:`mrtpo_viz.tasks.slots`): four distinct cities per prompt, a gold response whose code
positions vary, and :func:`response` for drawing more responses (the slots policy's fine-tuning data)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from ..base import Example
from ..slots import CITIES, CODE_OF, CODES, K, VERIFIERS
from . import draw_unique

FILLER: tuple[str, ...] = (
    "beans",
    "bees",
    "bread",
    "cats",
    "clouds",
    "coats",
    "coffee",
    "fish",
    "flour",
    "flowers",
    "forests",
    "gardens",
    "honey",
    "moon",
    "mountains",
    "music",
    "ocean",
    "rain",
    "rivers",
    "salt",
    "snow",
    "song",
    "stories",
    "tides",
    "trails",
    "trains",
    "trees",
    "water",
    "waves",
    "wheels",
    "winter",
    "calm",
    "quiet",
    "little",
    "nice",
    "good",
    "warm",
    "cold",
)
"""Filler words: each one token with its leading space in the bundled vocabulary; none is a code."""
WORDS_PER_PART = 20
"""Filler words per part; the code goes at a uniformly drawn position among them (0..20 words before it)."""


def prompt(cities: Sequence[str]) -> str:
    listing = ", ".join(f"part {k} {c}" for k, c in enumerate(cities, 1))
    return (
        f"Write four lines, 'Part 1, City:' to 'Part 4, City:'. Each part is about one city and names that "
        f"city's code: {listing}."
    )


MODES: tuple[str, ...] = ("A", "B")
"""The conflict recipe's first line, ``Mode A.`` or ``Mode B.``: the early token that sets which pair of parts goes
wrong without the information (:mod:`mrtpo_viz.sample_policy.slots_policy`)."""


def response(cities: Sequence[str], codes: Sequence[str], rng: random.Random, mode: str | None = None) -> str:
    """Four parts ``Part k, City: ...``, each filler words with ``codes[k]`` at a random position (the city at the
    line's start keeps the decision local: the code follows from the city a few tokens back, or from its fact);
    with ``mode``, a first line ``Mode {mode}.`` (no verifier reads it)."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    lines = [] if mode is None else [f"Mode {mode}."]
    for k, (city, code) in enumerate(zip(cities, codes), 1):
        words = [rng.choice(FILLER) for _ in range(WORDS_PER_PART)]
        words.insert(rng.randint(0, WORDS_PER_PART), code)
        lines.append(f"Part {k}, {city}: " + " ".join(words) + ".")
    return "\n".join(lines)


def make_example(rng: random.Random) -> Example:
    cities = rng.sample(CITIES, K)
    codes = [CODE_OF[c] for c in cities]
    return Example(
        task="slots",
        prompt=prompt(cities),
        meta={"cities": cities, "codes": codes},
        reference=response(cities, codes, rng),
        verifiers=VERIFIERS,
    )


def generate(n: int, seed: int = 0) -> list[Example]:
    """``n`` examples, deterministic for ``seed``, no repeated prompt (1,680 city orders exist)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng, seen = random.Random(seed), set()
    return [draw_unique(lambda: make_example(rng), seen) for _ in range(n)]


def wrong_code(code: str, rng: random.Random) -> str:
    """Another code than ``code``, uniformly."""
    return rng.choice([c for c in CODES if c != code])
