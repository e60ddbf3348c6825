"""The linear-time matchers give exactly the matches of the three official regexes they replace, on fuzzed strings,
and stay linear where the regexes are not."""

import random

from mrtpo_viz.tasks.ifeval.matchers import (
    BULLET_DASH_RE,
    BULLET_STAR_RE,
    PLACEHOLDER_RE,
    TITLE_RE,
    bullet_matches,
    placeholder_spans,
    title_spans,
)

PIECES = [
    "*",
    "-",
    "**",
    "\n",
    "\n\n",
    " ",
    "\t",
    "a",
    "[",
    "]",
    "\r",
    "\u00a0",
    "* a",
    "- b",
    "\x0b",
    "<",
    ">",
    "<<",
    ">>",
    "x y",
]


def test_linear_matchers_find_what_the_official_regexes_find():
    rng = random.Random(0)
    for _ in range(20_000):
        t = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
        bullets = [
            (m.start(), m.start() + len(m.group()) - len(m.group().lstrip()), m.end())
            for m in [*BULLET_STAR_RE.finditer(t), *BULLET_DASH_RE.finditer(t)]
        ]
        assert bullet_matches(t) == bullets, repr(t)
        assert placeholder_spans(t) == [m.span() for m in PLACEHOLDER_RE.finditer(t)], repr(t)
        assert title_spans(t) == [
            m.span() for m in TITLE_RE.finditer(t) if m.group().lstrip("<").rstrip(">").strip()
        ], repr(t)
    many = "\n" * 100_000 + "* a"  # the regexes take minutes on these
    assert bullet_matches(many) == [(0, 100_000, 100_003)]
    assert placeholder_spans("[" * 100_000 + "]") == [(0, 100_001)]  # lazy, from the first "["
    assert title_spans("<<" * 50_000 + "x>>") == [(0, 100_003)]
