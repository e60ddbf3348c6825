"""Multi-constraint instruction-following examples (IFEval style).

A prompt asks for a short note on a topic under 2-4 constraints that do not conflict (see :data:`CONFLICTS`). The
gold reference is built from simple sentence templates about the topic, shaped by the chosen constraints (title,
opening phrase, bullets or ``***`` paragraphs, closing phrase, postscript, JSON wrapper, letter case, commas
removed). The counting constraints (words, sentences) take their arguments from the gold text itself, counted with
the verifier's own text units, so every gold reference passes by construction.

``meta = {"topic": str, "constraints": [{"name": ..., "args": {...}}, ...]}``.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass

from ..base import Example
from . import draw_unique
from ..ifeval import CONSTRAINTS, occurrences, sentence_ends, words

TOPICS = {
    "rivers": ("water", "fish"), "mountains": ("snow", "trails"), "coffee": ("beans", "mornings"),
    "bicycles": ("wheels", "roads"), "libraries": ("books", "silence"), "the ocean": ("waves", "salt"),
    "gardens": ("flowers", "soil"), "winter": ("snow", "coats"), "trains": ("tracks", "stations"),
    "bees": ("honey", "flowers"), "music": ("songs", "rhythm"), "the moon": ("tides", "night"),
    "forests": ("trees", "birds"), "bread": ("flour", "ovens"), "cats": ("naps", "whiskers"),
    "rain": ("clouds", "puddles"),
}
"""Topic -> two related words used by the sentence templates."""

SENTENCES = (
    "{T} can be part of daily life for many people.", "I like to learn about {t}.",
    "When I think of {t}, I think of {a} and {b}.", "There is always something new to see in {t}.",
    "{A} and {t} go well together.", "People write many stories about {t}.", "{t} can be calm, loud, or just quiet.",
    "Children often ask questions about {t}.", "A good book about {t} is really nice to read.",
    "Without {a}, {t} would feel very different.", "I want to spend more time with {t}.",
    "Some say {t} can teach us to be patient.", "{B} can make {t} feel alive.", "Every season changes {t} a little.",
)
"""Body sentences; ``{t}`` topic, ``{a}``/``{b}`` related words (capitalized forms ``{T}``/``{A}``/``{B}``)."""

STARTS = ("Here is my note.", "Let me tell you.", "Sure thing.", "Here we go.")
ENDS = ("That is all.", "Thank you for reading.", "See you soon.", "Any other questions?")
FORBIDDEN_POOL = ("very", "many", "always", "really", "just", "often", "good")
"""Words that some templates use, so avoiding them takes a choice."""

CONFLICTS = {frozenset(p) for p in (
    ("lowercase", "uppercase"), ("starts_with", "title"), ("ends_with", "postscript"),
    ("bullet_count", "paragraph_count"), ("bullet_count", "sentence_count"), ("sentence_count", "postscript"),
    *(("json_format", c) for c in ("title", "bullet_count", "paragraph_count", "postscript", "sentence_count",
                                   "starts_with", "ends_with", "word_count", "uppercase")),
)}
"""Pairs of constraints never combined in one prompt."""

PHRASES = {
    "no_comma": lambda a: "Do not use any commas.",
    "lowercase": lambda a: "Use only lowercase letters.",
    "uppercase": lambda a: "Write everything in capital letters.",
    "word_count": lambda a: {(True, True): f"Use between {a.get('min')} and {a.get('max')} words.",
                             (True, False): f"Use at least {a.get('min')} words.",
                             (False, True): f"Use at most {a.get('max')} words."}[("min" in a, "max" in a)],
    "sentence_count": lambda a: f"Write exactly {a['n']} sentences.",
    "bullet_count": lambda a: f"Use exactly {a['n']} bullet points starting with '* '.",
    "keyword": lambda a: f"Use the word '{a['word']}' at least {a['min_count']} times.",
    "forbidden_words": lambda a: f"Do not use the words {' or '.join(a['words'])}.",
    "ends_with": lambda a: f"End your response with the phrase \"{a['phrase']}\"",
    "starts_with": lambda a: f"Start your response with \"{a['phrase']}\"",
    "title": lambda a: "Give it a title in double angular brackets, like <<title>>.",
    "json_format": lambda a: "Wrap the whole response in JSON.",
    "paragraph_count": lambda a: f"Write {a['n']} paragraphs separated by ***.",
    "postscript": lambda a: "Add a postscript starting with P.S.",
}
"""Constraint name -> its instruction in the prompt."""
assert set(PHRASES) == set(CONSTRAINTS)
COUNTED = ("word_count", "sentence_count")
"""Constraints whose arguments are read off the gold text."""


@dataclass(frozen=True)
class Plan:
    """The chosen constraints with the arguments fixed before the text is written."""

    names: tuple[str, ...]
    """Constraint names, in prompt order."""
    args: dict
    """Constraint name -> arguments, for the constraints whose arguments do not depend on the text."""


def choose_constraints(rng: random.Random) -> tuple[str, ...]:
    """2-4 constraint names, pairwise free of :data:`CONFLICTS`, in prompt order."""
    k = rng.randint(2, 4)
    pool = list(CONSTRAINTS)
    rng.shuffle(pool)
    chosen: list[str] = []
    for name in pool:
        if len(chosen) < k and all(frozenset((name, c)) not in CONFLICTS for c in chosen):
            chosen.append(name)
    return tuple(chosen)


def _fixed_args(name: str, rng: random.Random, topic: str, case: str | None) -> dict:
    """Arguments chosen before writing (the counted ones are filled in from the gold text)."""
    recase = {"lower": str.lower, "upper": str.upper}.get(case, lambda s: s)
    table = {
        "bullet_count": lambda: {"n": rng.randint(3, 5)},
        "paragraph_count": lambda: {"n": rng.randint(2, 3)},
        "keyword": lambda: {"word": rng.choice(TOPICS[topic]), "min_count": rng.randint(1, 2)},
        "forbidden_words": lambda: {"words": rng.sample(FORBIDDEN_POOL, 2)},
        "starts_with": lambda: {"phrase": recase(rng.choice(STARTS))},
        "ends_with": lambda: {"phrase": recase(rng.choice(ENDS))},
        "postscript": lambda: {"marker": "P.S."},
    }
    return table[name]() if name in table else {}


def _sentences(rng: random.Random, topic: str, plan: Plan, n: int) -> list[str]:
    """``n`` body sentences about the topic that honour the keyword and forbidden-words constraints."""
    a, b = TOPICS[topic]
    fill = dict(t=topic, a=a, b=b, T=topic[0].upper() + topic[1:], A=a.capitalize(), B=b.capitalize())
    banned = plan.args.get("forbidden_words", {}).get("words", [])
    ok = [s.format(**fill) for s in SENTENCES]
    ok = [s[0].upper() + s[1:] for s in ok if not any(occurrences(s, w) for w in banned)]
    kw = plan.args.get("keyword")
    with_kw = [s for s in ok if kw and occurrences(s, kw["word"])] or ok
    first = rng.sample(with_kw, min(len(with_kw), kw["min_count"] if kw else 0))
    rest = rng.sample([s for s in ok if s not in first], n - len(first))
    picked = first + rest
    rng.shuffle(picked)
    return [s.replace(",", "") if "no_comma" in plan.names else s for s in picked]


def _body(rng: random.Random, topic: str, plan: Plan) -> str:
    """The main text: bullet lines, ``***``-separated paragraphs of two sentences, or one paragraph."""
    if "bullet_count" in plan.args:
        return "\n".join("* " + s for s in _sentences(rng, topic, plan, plan.args["bullet_count"]["n"]))
    if "paragraph_count" in plan.args:
        n = plan.args["paragraph_count"]["n"]
        sents = _sentences(rng, topic, plan, 2 * n)
        return "\n***\n".join(" ".join(sents[2 * i:2 * i + 2]) for i in range(n))
    return " ".join(_sentences(rng, topic, plan, rng.randint(3, 5)))


def write_gold(rng: random.Random, topic: str, plan: Plan) -> str:
    """The gold response for ``plan`` (about 20-60 words): [title] [opening] body [closing] [P.S.], then case."""
    has = set(plan.names)
    if "json_format" in has:
        text = json.dumps({"note": " ".join(_sentences(rng, topic, plan, rng.randint(3, 4)))}, ensure_ascii=False)
    else:
        body = _body(rng, topic, plan)
        parts = [f"<<{topic.title()}>>"] if "title" in has else []
        glue = "\n" if "bullet_count" in has else " "
        parts.append(plan.args["starts_with"]["phrase"] + glue + body if "starts_with" in has else body)
        if "ends_with" in has:
            parts.append(plan.args["ends_with"]["phrase"])
        text = "\n".join(parts)
        if "postscript" in has:
            text += f"\n\nP.S. I will write more about {topic} soon."
    if "lowercase" in has:
        text = text.lower()
    if "uppercase" in has:
        text = text.upper()
    return text


def _counted_args(name: str, rng: random.Random, gold: str) -> dict:
    """Arguments read off the gold text: a word range around its length, its exact sentence count."""
    if name == "sentence_count":
        return {"n": len(sentence_ends(gold))}
    n = len(words(gold))
    lo, hi = max(5, (n - rng.randint(0, 10)) // 5 * 5), -(-(n + rng.randint(0, 10)) // 5) * 5
    return rng.choice(({"min": lo}, {"max": hi}, {"min": lo, "max": hi}))


def make_example(rng: random.Random) -> Example:
    """One example: a topic, a conflict-free set of constraints, the prompt and the gold reference."""
    topic = rng.choice(sorted(TOPICS))
    names = choose_constraints(rng)
    case = "lower" if "lowercase" in names else "upper" if "uppercase" in names else None
    plan = Plan(names, {n: _fixed_args(n, rng, topic, case) for n in names if n not in COUNTED})
    gold = write_gold(rng, topic, plan)
    args = {n: plan.args[n] if n in plan.args else _counted_args(n, rng, gold) for n in names}
    constraints = [{"name": n, "args": args[n]} for n in names]
    prompt = " ".join([f"Write a short note about {topic}."] + [PHRASES[n](args[n]) for n in names])
    return Example(task="instruction_following", prompt=prompt, meta={"topic": topic, "constraints": constraints},
                   reference=gold, verifiers=tuple(f"ifeval.{n}" for n in names))


def generate(n: int, seed: int = 0) -> list[Example]:
    """``n`` examples, deterministic for ``(n, seed)``."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng, seen = random.Random(seed), set()
    return [draw_unique(lambda: make_example(rng), seen) for _ in range(n)]
