"""Multi-constraint instruction-following examples (IFEval instructions, official kwargs and semantics).

A prompt asks for a short note on a topic under 2-4 constraints that do not conflict (see :data:`CONFLICTS`: IFEval's
own conflicts plus the pairs this gold writer cannot combine). The gold reference is built from simple sentence
templates about the topic, shaped by the chosen constraints (title, opening phrase, bullets or ``***`` paragraphs,
closing phrase, postscript, JSON wrapper, letter case, commas removed). The counting constraints (words, sentences)
take their thresholds from the gold text itself, counted with the checkers' own text units. Every gold is then
checked by the verifiers and the example is drawn again when one fails (``uppercase``/``lowercase`` also need
langdetect to read the text as English, which it does not always do for short capitalized text).

``meta = {"topic": str, "constraints": [{"id": <official IFEval id>, "kwargs": {...}}, ...]}``; the verifiers are
``ifeval.<name>`` for the short names below.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

from ..base import Example, get_verifier
from . import draw_unique
from ..ifeval import BY_NAME
from ..ifeval.instruction_checks import AT_LEAST, LESS
from ..ifeval.text_units import count_sentences, count_words

TOPICS = {
    "rivers": ("water", "fish"),
    "mountains": ("snow", "trails"),
    "coffee": ("beans", "mornings"),
    "bicycles": ("wheels", "roads"),
    "libraries": ("books", "silence"),
    "the ocean": ("waves", "salt"),
    "gardens": ("flowers", "soil"),
    "winter": ("snow", "coats"),
    "trains": ("tracks", "stations"),
    "bees": ("honey", "flowers"),
    "music": ("songs", "rhythm"),
    "the moon": ("tides", "night"),
    "forests": ("trees", "birds"),
    "bread": ("flour", "ovens"),
    "cats": ("naps", "whiskers"),
    "rain": ("clouds", "puddles"),
}
"""Topic -> two related words used by the sentence templates."""

SENTENCES = (
    "{T} can be part of daily life for many people.",
    "I like to learn about {t}.",
    "When I think of {t}, I think of {a} and {b}.",
    "There is always something new to see in {t}.",
    "{A} and {t} go well together.",
    "People write many stories about {t}.",
    "{t} can be calm, loud, or just quiet.",
    "Children often ask questions about {t}.",
    "A good book about {t} is really nice to read.",
    "Without {a}, {t} would feel very different.",
    "I want to spend more time with {t}.",
    "Some say {t} can teach us to be patient.",
    "{B} can make {t} feel alive.",
    "Every season changes {t} a little.",
)
"""Body sentences; ``{t}`` topic, ``{a}``/``{b}`` related words (capitalized forms ``{T}``/``{A}``/``{B}``)."""

STARTS = ("Here is my note.", "Let me tell you.", "Sure thing.", "Here we go.")
ENDS = ("That is all.", "Thank you for reading.", "See you soon.", "Any other questions?")
FORBIDDEN_POOL = ("very", "many", "always", "really", "just", "often", "good")
"""Words that some templates use, so avoiding them takes a choice."""

NAMES = (
    "no_comma",
    "lowercase",
    "uppercase",
    "word_count",
    "sentence_count",
    "bullet_count",
    "keyword",
    "forbidden_words",
    "ends_with",
    "starts_with",
    "title",
    "json_format",
    "paragraph_count",
    "postscript",
)
"""The constraints the generator uses (verifier ``ifeval.<name>``); the other IFEval instructions are not drawn."""
ID = {n: BY_NAME[f"ifeval.{n}"].id for n in NAMES}
"""Short name -> official instruction id."""

CONFLICTS = {
    frozenset(p)
    for p in (
        # IFEval's own INSTRUCTION_CONFLICTS among these instructions
        ("lowercase", "uppercase"),
        ("paragraph_count", "sentence_count"),
        *(
            ("json_format", c)
            for c in (
                "bullet_count",
                "ends_with",
                "keyword",
                "lowercase",
                "no_comma",
                "paragraph_count",
                "postscript",
                "sentence_count",
                "title",
                "uppercase",
                "word_count",
            )
        ),
        # what this gold writer cannot combine
        ("starts_with", "title"),
        ("ends_with", "postscript"),
        ("bullet_count", "paragraph_count"),
        ("bullet_count", "sentence_count"),
        ("sentence_count", "postscript"),
        ("json_format", "starts_with"),
    )
}
"""Pairs of constraints never combined in one prompt."""


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


PHRASES = {
    "no_comma": lambda k: "Do not use any commas.",
    "lowercase": lambda k: "Use only lowercase letters.",
    "uppercase": lambda k: "Write everything in capital letters.",
    "word_count": lambda k: (
        f"Use at least {k['num_words']} words."
        if k["relation"] == AT_LEAST
        else f"Use fewer than {k['num_words']} words."
    ),
    "sentence_count": lambda k: (
        f"Write at least {k['num_sentences']} sentences."
        if k["relation"] == AT_LEAST
        else f"Write fewer than {k['num_sentences']} sentences."
    ),
    "bullet_count": lambda k: f"Use exactly {k['num_bullets']} bullet points starting with '* '.",
    "keyword": lambda k: f"Use the word '{k['keyword']}' at least {_times(k['frequency'])}.",
    "forbidden_words": lambda k: f"Do not use the words {' or '.join(k['forbidden_words'])}.",
    "ends_with": lambda k: f'End your response with the phrase "{k["end_phrase"]}"',
    "starts_with": lambda k: f'Start your response with "{k["start_phrase"]}"',
    "title": lambda k: "Give it a title in double angular brackets, like <<title>>.",
    "json_format": lambda k: "Wrap the whole response in JSON.",
    "paragraph_count": lambda k: f"Write {k['num_paragraphs']} paragraphs separated by ***.",
    "postscript": lambda k: f"Add a postscript starting with {k['postscript_marker']}",
}
"""Constraint name -> its instruction in the prompt (the verifier information is IFEval's own description)."""
assert set(PHRASES) == set(NAMES)
COUNTED = ("word_count", "sentence_count")
"""Constraints whose thresholds are read off the gold text."""
TRIES = 50
"""Draws of one example before giving up (a gold fails its verifiers in a few percent of draws)."""


@dataclass(frozen=True)
class Plan:
    """The chosen constraints with the arguments fixed before the text is written."""

    names: tuple[str, ...]
    """Constraint names, in prompt order."""
    args: dict
    """Constraint name -> official kwargs, for the constraints whose kwargs do not depend on the text."""


def choose_constraints(rng: random.Random) -> tuple[str, ...]:
    """2-4 constraint names, pairwise free of :data:`CONFLICTS`, in prompt order."""
    k = rng.randint(2, 4)
    pool = list(NAMES)
    rng.shuffle(pool)
    chosen: list[str] = []
    for name in pool:
        if len(chosen) < k and all(frozenset((name, c)) not in CONFLICTS for c in chosen):
            chosen.append(name)
    return tuple(chosen)


def _fixed_args(name: str, rng: random.Random, topic: str) -> dict:
    """Official kwargs chosen before writing (the counted ones are filled in from the gold text)."""
    table = {
        "bullet_count": lambda: {"num_bullets": rng.randint(3, 5)},
        "paragraph_count": lambda: {"num_paragraphs": rng.randint(2, 3)},
        "keyword": lambda: {"keyword": rng.choice(TOPICS[topic]), "frequency": rng.randint(1, 2), "relation": AT_LEAST},
        "forbidden_words": lambda: {"forbidden_words": rng.sample(FORBIDDEN_POOL, 2)},
        "starts_with": lambda: {"start_phrase": rng.choice(STARTS)},
        "ends_with": lambda: {"end_phrase": rng.choice(ENDS)},
        "postscript": lambda: {"postscript_marker": "P.S."},
    }
    return table[name]() if name in table else {}


def _uses(sentence: str, word: str) -> bool:
    """The official forbidden-word test: ``\\bword\\b``, case-insensitive."""
    return re.search(r"\b" + re.escape(word) + r"\b", sentence, re.I) is not None


def _sentences(rng: random.Random, topic: str, plan: Plan, n: int) -> list[str]:
    """``n`` body sentences about the topic that honour the keyword and forbidden-words constraints."""
    a, b = TOPICS[topic]
    fill = dict(t=topic, a=a, b=b, T=topic[0].upper() + topic[1:], A=a.capitalize(), B=b.capitalize())
    banned = plan.args.get("forbidden_words", {}).get("forbidden_words", [])
    ok = [s.format(**fill) for s in SENTENCES]
    ok = [s[0].upper() + s[1:] for s in ok if not any(_uses(s, w) for w in banned)]
    kw = plan.args.get("keyword")
    with_kw = [s for s in ok if kw and re.search(re.escape(kw["keyword"]), s, re.I)] or ok
    first = rng.sample(with_kw, min(len(with_kw), kw["frequency"] if kw else 0))
    rest = rng.sample([s for s in ok if s not in first], n - len(first))
    picked = first + rest
    rng.shuffle(picked)
    return [s.replace(",", "") if "no_comma" in plan.names else s for s in picked]


def _body(rng: random.Random, topic: str, plan: Plan) -> str:
    """The main text: bullet lines, ``***``-separated paragraphs of two sentences, or one paragraph."""
    if "bullet_count" in plan.args:
        return "\n".join("* " + s for s in _sentences(rng, topic, plan, plan.args["bullet_count"]["num_bullets"]))
    if "paragraph_count" in plan.args:
        n = plan.args["paragraph_count"]["num_paragraphs"]
        sents = _sentences(rng, topic, plan, 2 * n)
        return "\n***\n".join(" ".join(sents[2 * i : 2 * i + 2]) for i in range(n))
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
        parts.append(plan.args["starts_with"]["start_phrase"] + glue + body if "starts_with" in has else body)
        if "ends_with" in has:
            parts.append(plan.args["ends_with"]["end_phrase"])
        text = "\n".join(parts)
        if "postscript" in has:
            text += f"\n\nP.S. I will write more about {topic} soon."
    if "lowercase" in has:
        text = text.lower()
    if "uppercase" in has:
        text = text.upper()
    return text


def _counted_args(name: str, rng: random.Random, gold: str) -> dict:
    """Official kwargs read off the gold text: a word or sentence threshold the gold meets, with some slack."""
    relation = rng.choice((AT_LEAST, LESS))
    if name == "sentence_count":
        n = count_sentences(gold)
        return {
            "num_sentences": max(1, n - rng.randint(0, 1)) if relation == AT_LEAST else n + rng.randint(1, 2),
            "relation": relation,
        }
    n = count_words(gold)
    lo, hi = max(5, (n - rng.randint(0, 10)) // 5 * 5), -(-(n + rng.randint(1, 10)) // 5) * 5
    return {"num_words": lo if relation == AT_LEAST else hi, "relation": relation}


def _draw(rng: random.Random) -> Example:
    topic = rng.choice(sorted(TOPICS))
    names = choose_constraints(rng)
    plan = Plan(names, {n: _fixed_args(n, rng, topic) for n in names if n not in COUNTED})
    gold = write_gold(rng, topic, plan)
    kwargs = {n: plan.args[n] if n in plan.args else _counted_args(n, rng, gold) for n in names}
    constraints = [{"id": ID[n], "kwargs": kwargs[n]} for n in names]
    prompt = " ".join([f"Write a short note about {topic}."] + [PHRASES[n](kwargs[n]) for n in names])
    return Example(
        task="instruction_following",
        prompt=prompt,
        meta={"topic": topic, "constraints": constraints},
        reference=gold,
        verifiers=tuple(f"ifeval.{n}" for n in names),
    )


def gold_passes(ex: Example) -> bool:
    """Every verifier of the example gives its gold reference score 1 (the official strict verdict)."""
    return all(get_verifier(n).score(ex.reference, ex) == 1.0 for n in ex.verifiers)


def make_example(rng: random.Random) -> Example:
    """One example: a topic, a conflict-free set of constraints, the prompt and a gold reference that passes."""
    for _ in range(TRIES):
        ex = _draw(rng)
        if gold_passes(ex):
            return ex
    raise RuntimeError(f"no passing gold reference in {TRIES} draws")  # never seen: ~3% of draws fail


def generate(n: int, seed: int = 0) -> list[Example]:
    """``n`` examples, deterministic for ``(n, seed)``."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng, seen = random.Random(seed), set()
    return [draw_unique(lambda: make_example(rng), seen) for _ in range(n)]
