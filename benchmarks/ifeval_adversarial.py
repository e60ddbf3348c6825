"""A deterministic adversarial set for the IFEval instructions: ``generate(seed=0) -> list[Case]``.

Per official instruction id: the hand-written edge cases of :mod:`ifeval_adversarial_cases`, each also under two seeded
mutations (CRLF line ends, blank-line padding, a chatty first/last line that only loose mode removes, ``**``
wrapping, curly quotes, unicode noise, doubled text); counting instructions at thresholds exactly at, one below and
one above the response's own count; blank responses; and seeded fuzz from a pool of tricky pieces (abbreviations,
initials, numbered lists, contractions, quotes, brackets, markdown). Thresholds come from our own text units, so
the agreement test also checks those units against the official ones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from mrtpo_viz.tasks.ifeval import instruction_checks as C
from mrtpo_viz.tasks.ifeval import text_units as T
from ifeval_adversarial_cases import BASES

MIN_PER_INSTRUCTION = 25


@dataclass(frozen=True)
class Case:
    id: str
    kwargs: dict = field(hash=False)
    response: str
    label: str


MUTATIONS = {
    "crlf": lambda r: r.replace("\n", "\r\n"),
    "padded": lambda r: "\n\n" + r + "  \n\t",
    "chatty": lambda r: "Sure! Here is my answer:\n" + r + "\nHope this helps!",
    "bold": lambda r: "**" + r + "**",
    "curly": lambda r: r.replace('"', "\u201d").replace("'", "\u2019"),
    "unicode": lambda r: "\u00c9t\u00e9 \U0001f600 " + r + " \u00a0\u2014 fin",
    "doubled": lambda r: r + "\n\n" + r,
    "stars": lambda r: "* " + r.replace("\n", "\n* "),
}

PIECES = [
    "Dr.",
    "Smith",
    "U.S.A.",
    "The",
    "the",
    "end.",
    "1.",
    "2.",
    "J.",
    "Bach",
    "etc.",
    "...",
    "!",
    "?",
    '"',
    "'",
    ")",
    "(",
    "\u201c",
    "\u201d",
    "\n",
    "\n\n",
    "\r\n",
    "hello",
    "World",
    "Mr.",
    "e.g.",
    "No.",
    "3.14",
    "--",
    "*",
    "**",
    "-",
    "P.S.",
    "Inc.",
    "He",
    "It",
    "I'm",
    "DON'T",
    "CANNOT",
    "IT'S",
    "AT&T",
    "NASA",
    ",",
    ":",
    ";",
    ".",
    "***",
    "******",
    "<<T>>",
    "[x]",
    "Section 1",
    "SECTION 2",
    "caf\u00e9",
    "\u00c9COLE",
    "{",
    "}",
    "```",
    "\u2019",
    "I",
    "a.m.",
    "Any other questions?",
    "cat",
    "CAT",
    "banana",
    "\t",
    "\u00a0",
]

COUNTS = {
    "length_constraints:number_words": ("num_words", T.count_words, "relation"),
    "length_constraints:number_sentences": ("num_sentences", T.count_sentences, "relation"),
    "change_case:capital_word_frequency": ("capital_frequency", T.count_capital_words, "capital_relation"),
    "detectable_format:number_bullet_lists": ("num_bullets", lambda r: len(C.bullet_matches(r)), None),
    "length_constraints:number_paragraphs": ("num_paragraphs", lambda r: C.paragraph_count(r) or 0, None),
    "detectable_content:number_placeholders": ("num_placeholders", lambda r: len(C.placeholder_spans(r)), None),
    "detectable_format:number_highlighted_sections": ("num_highlights", lambda r: len(C.highlight_matches(r)), None),
}
"""Counting instruction -> (threshold kwarg, our count of the response, relation kwarg or None)."""

FUZZ_KWARGS = {
    "keywords:frequency": {"keyword": "cat", "frequency": 2, "relation": "at least"},
    "keywords:existence": {"keywords": ["cat", "the"]},
    "keywords:forbidden_words": {"forbidden_words": ["the", "smith"]},
    "keywords:letter_frequency": {"letter": "e", "let_frequency": 3, "let_relation": "less than"},
    "language:response_language": {"language": "en"},
    "length_constraints:nth_paragraph_first_word": {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "the"},
    "detectable_content:postscript": {"postscript_marker": "P.S."},
    "detectable_format:multiple_sections": {"section_spliter": "Section", "num_sections": 1},
    "combination:repeat_prompt": {"prompt_to_repeat": "Dr. Smith"},
    "startend:end_checker": {"end_phrase": "Any other questions?"},
}


def _threshold_cases(iid: str, kwargs: dict, response: str, label: str) -> list[Case]:
    key, count, rel_key = COUNTS[iid]
    n = count(response)
    out = []
    for t in sorted({max(1, n - 1), max(1, n), n + 1}):
        for rel in ("less than", "at least") if rel_key else (None,):
            kw = dict(kwargs, **{key: t})
            if rel_key:
                kw[rel_key] = rel
            out.append(Case(iid, kw, response, f"{label}/threshold {rel or '=='} {t} (count {n})"))
    return out


def _fuzz_text(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) + rng.choice(["", " ", " ", "\n"]) for _ in range(rng.randint(1, 18)))


def _fuzz_kwargs(iid: str, kwargs: dict, response: str) -> dict:
    if iid in FUZZ_KWARGS:
        return dict(FUZZ_KWARGS[iid])
    if iid in COUNTS:
        key, count, rel_key = COUNTS[iid]
        kw = dict(kwargs, **{key: max(1, count(response))})
        return dict(kw, **{rel_key: "at least"}) if rel_key else kw
    return dict(kwargs)


def cases_for(iid: str, rng: random.Random, n_fuzz: int = 12) -> list[Case]:
    """All cases of one instruction, at least :data:`MIN_PER_INSTRUCTION`."""
    bases = BASES[iid]()
    out = [Case(iid, bases[0][0], "", "blank/empty"), Case(iid, bases[0][0], " \r\n\t ", "blank/whitespace")]
    for k, (kwargs, response) in enumerate(bases):
        out.append(Case(iid, kwargs, response, f"hand {k}"))
        for name in rng.sample(sorted(MUTATIONS), 2):
            out.append(Case(iid, kwargs, MUTATIONS[name](response), f"hand {k}/{name}"))
        if iid in COUNTS:
            out += _threshold_cases(iid, kwargs, response, f"hand {k}")
    for k in range(max(n_fuzz, MIN_PER_INSTRUCTION - len(out))):
        text = _fuzz_text(rng)
        out.append(Case(iid, _fuzz_kwargs(iid, bases[0][0], text), text, f"fuzz {k}"))
    return out


def generate(seed: int = 0, n_fuzz: int = 12) -> list[Case]:
    """The adversarial set, deterministic for ``(seed, n_fuzz)``; cases of all 25 official ids."""
    rng = random.Random(seed)
    return [c for iid in sorted(BASES) for c in cases_for(iid, rng, n_fuzz)]


if __name__ == "__main__":
    import collections

    counts = collections.Counter(c.id for c in generate())
    for iid, n in sorted(counts.items()):
        print(f"{n:5d}  {iid}")
    print(f"{sum(counts.values()):5d}  total")
