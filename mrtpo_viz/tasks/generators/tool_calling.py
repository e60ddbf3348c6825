"""Tool-calling examples: a catalogue of tools with JSON-schema parameters and templated user requests.

Each example is one short user request with exactly one gold call. The gold response is
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` written with ``json.dumps`` (default separators) and the
arguments in the order of the tool's schema. Optional arguments appear in the gold call only when the request
mentions them, so a policy must learn both the required keys and when to add the optional ones.

``meta`` is BFCL's form: ``{"category": "simple", "functions": [the tool's schema], "possible_answer":
[{name: {argument: [gold value]}}]}`` (:func:`gold_call` reads the one call back).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Optional
from collections.abc import Callable

from ..base import Example
from ..tool_catalog import (
    CITIES,
    CLOSE_TAG,
    CONTACTS,
    CUISINES,
    CURRENCIES,
    EVENTS,
    LABELS,
    LANGUAGES,
    MESSAGES,
    MONTHS,
    NEWS_TOPICS,
    OPEN_TAG,
    PHRASES,
    SYMBOLS,
    TOOLS,
    UNITS,
)
from . import draw_unique

VERIFIERS = ("tool_call.format", "tool_call.correctness")


@dataclass(frozen=True)
class Request:
    """A user request and the gold arguments it asks for."""

    prompt: str
    """The user message."""
    arguments: dict[str, Any]
    """Gold arguments (any key order; the example puts them in schema order)."""


def _date(rng: random.Random) -> tuple[str, str]:
    """A date in 2026 as (spoken, ISO): ("March 7", "2026-03-07")."""
    m, d = rng.randrange(12), rng.randint(1, 28)
    return f"{MONTHS[m]} {d}", f"2026-{m + 1:02d}-{d:02d}"


def _time(rng: random.Random) -> tuple[str, str]:
    """A time as (spoken, HH:MM): ("7:30 pm", "19:30") or ("06:15", "06:15")."""
    h, m = rng.randrange(24), rng.choice((0, 15, 30, 45))
    if rng.random() < 0.5:
        return f"{h:02d}:{m:02d}", f"{h:02d}:{m:02d}"
    suffix, h12 = ("am", h % 12 or 12) if h < 12 else ("pm", h % 12 or 12)
    return f"{h12}:{m:02d} {suffix}", f"{h:02d}:{m:02d}"


def _amount(rng: random.Random) -> int | float:
    return rng.choice((rng.randint(5, 2000), round(rng.uniform(1, 500), 2)))


def _weather(rng):
    city = rng.choice(CITIES)
    unit = rng.choice((None, "celsius", "fahrenheit"))
    tail, use = ("", "") if unit is None else (f" in {unit}", f" Use {unit}.")
    text = rng.choice(
        (
            f"What's the weather in {city}{tail}?",
            f"How warm is it in {city} right now{tail}?",
            f"Weather for {city}{tail}, please.",
            f"Is it cold in {city} today?{use}",
        )
    )
    return Request(text, {"city": city} | ({} if unit is None else {"unit": unit}))


def _currency(rng):
    amount = _amount(rng)
    src, dst = rng.sample(CURRENCIES, 2)
    text = rng.choice(
        (
            f"Convert {amount} {src} to {dst}.",
            f"How much is {amount} {src} in {dst}?",
            f"I have {amount} {src}. What is that in {dst}?",
            f"Change {amount} {src} into {dst}.",
        )
    )
    return Request(text, {"amount": amount, "from_currency": src, "to_currency": dst})


def _flights(rng):
    a, b = rng.sample(CITIES, 2)
    spoken, iso = _date(rng)
    n = rng.choice((None, 1, 2, 3, 4))
    who = "" if n is None else f" for {n} {'person' if n == 1 else 'people'}"
    text = rng.choice(
        (
            f"Find flights from {a} to {b} on {spoken}{who}.",
            f"Any flights {a} to {b} on {spoken}{who}?",
            f"I need to fly from {a} to {b} on {spoken}{who}.",
        )
    )
    return Request(text, {"origin": a, "destination": b, "date": iso} | ({} if n is None else {"passengers": n}))


def _event(rng):
    title, (sd, iso), (st, hm) = rng.choice(EVENTS), _date(rng), _time(rng)
    mins = rng.choice((None, 15, 30, 45, 60, 90))
    dur = "" if mins is None else f" for {mins} minutes"
    text = rng.choice(
        (
            f"Add '{title}' to my calendar on {sd} at {st}{dur}.",
            f"Schedule '{title}' on {sd} at {st}{dur}.",
            f"Put '{title}' on {sd}, {st}{dur}.",
        )
    )
    args = {"title": title, "date": iso, "time": hm} | ({} if mins is None else {"duration_minutes": mins})
    return Request(text, args)


def _alarm(rng):
    (st, hm), label = _time(rng), rng.choice((None,) + LABELS)
    daily = rng.choice((None, True))
    lab = "" if label is None else f" labeled '{label}'"
    rep = "" if daily is None else " every day"
    text = rng.choice(
        (f"Set an alarm for {st}{lab}{rep}.", f"Wake me at {st}{rep}{lab}.", f"Alarm at {st}{lab}{rep}, please.")
    )
    return Request(
        text,
        {"time": hm} | ({} if label is None else {"label": label}) | ({} if daily is None else {"repeat_daily": True}),
    )


def _timer(rng):
    m = rng.randint(1, 90)
    return Request(
        rng.choice(
            (
                f"Set a timer for {m} minutes.",
                f"Start a {m} minute timer.",
                f"Timer, {m} minutes.",
                f"Remind me in {m} minutes with a timer.",
            )
        ),
        {"minutes": m},
    )


def _units(rng):
    kind = rng.choice(tuple(UNITS))
    src, dst = rng.sample(UNITS[kind], 2)
    v = _amount(rng)
    text = rng.choice((f"Convert {v} {src} to {dst}.", f"How many {dst} is {v} {src}?", f"What is {v} {src} in {dst}?"))
    return Request(text, {"value": v, "from_unit": src, "to_unit": dst})


def _translate(rng):
    phrase, lang = rng.choice(PHRASES), rng.choice(LANGUAGES)
    text = rng.choice(
        (
            f"Translate '{phrase}' into {lang}.",
            f"How do you say '{phrase}' in {lang}?",
            f"{lang} for '{phrase}', please.",
        )
    )
    return Request(text, {"text": phrase, "target_language": lang})


def _stock(rng):
    sym, ex = rng.choice(SYMBOLS), rng.choice((None, "NASDAQ", "NYSE"))
    on = "" if ex is None else f" on the {ex}"
    text = rng.choice(
        (f"What is {sym} trading at{on}?", f"Get the stock price of {sym}{on}.", f"Price check: {sym}{on}.")
    )
    return Request(text, {"symbol": sym} | ({} if ex is None else {"exchange": ex}))


def _message(rng):
    who, msg = rng.choice(CONTACTS), rng.choice(MESSAGES)
    text = rng.choice(
        (f"Text {who}: '{msg}'.", f"Send {who} a message saying '{msg}'.", f"Tell {who} '{msg}' by text.")
    )
    return Request(text, {"recipient": who, "message": msg})


def _news(rng):
    topic, k = rng.choice(NEWS_TOPICS), rng.choice((None, rng.randint(2, 10)))
    plain = (f"Latest news on {topic}?", f"What's new in {topic}?", f"Show me {topic} headlines.")
    counted = (f"Give me the top {k} {topic} headlines.", f"Show {k} news items on {topic}.")
    text = rng.choice(plain if k is None else counted)
    return Request(text, {"topic": topic} | ({} if k is None else {"limit": k}))


def _restaurant(rng):
    city, n, (st, hm) = rng.choice(CITIES), rng.randint(1, 8), _time(rng)
    cuisine = rng.choice((None,) + CUISINES)
    food = "" if cuisine is None else f" {cuisine}"
    art = "an" if food[1:2] in ("i", "a", "e", "o", "u") else "a"
    text = rng.choice(
        (
            f"Book {art}{food} table for {n} in {city} at {st}.",
            f"Reserve {art}{food} restaurant in {city} for {n} people at {st}.",
            f"Table for {n} at {st} in {city}{',' + food + ' food' if food else ''}.",
        )
    )
    args = {"city": city, "party_size": n, "time": hm} | ({} if cuisine is None else {"cuisine": cuisine})
    return Request(text, args)


REQUESTS: dict[str, Callable[[random.Random], Request]] = {
    "get_weather": _weather,
    "convert_currency": _currency,
    "search_flights": _flights,
    "create_calendar_event": _event,
    "set_alarm": _alarm,
    "set_timer": _timer,
    "convert_units": _units,
    "translate_text": _translate,
    "get_stock_price": _stock,
    "send_message": _message,
    "get_news": _news,
    "book_restaurant": _restaurant,
}
"""Tool name -> request sampler (several phrasings each; values drawn from the lists above)."""
assert set(REQUESTS) == set(TOOLS)


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """The gold response: one ``<tool_call>`` block, arguments in schema order, ``json.dumps`` separators."""
    order = list(TOOLS[name]["parameters"]["properties"])
    ordered = {k: arguments[k] for k in order if k in arguments}
    return OPEN_TAG + json.dumps({"name": name, "arguments": ordered}, ensure_ascii=False) + CLOSE_TAG


def make_example(name: str, rng: random.Random) -> Example:
    """One example of tool ``name`` with a request drawn from ``rng``."""
    req = REQUESTS[name](rng)
    reference = format_call(name, req.arguments)
    gold = json.loads(reference[len(OPEN_TAG) : -len(CLOSE_TAG)])["arguments"]
    meta = {
        "category": "simple",
        "functions": [TOOLS[name]],
        "possible_answer": [{name: {k: [v] for k, v in gold.items()}}],
    }
    return Example(task="tool_calling", prompt=req.prompt, meta=meta, reference=reference, verifiers=VERIFIERS)


def gold_call(meta: dict) -> Optional[tuple[str, dict[str, Any]]]:
    """``(tool, arguments)`` of a generated example's one gold call (each argument's one accepted value); None for
    a meta that is not one call of a catalogue tool with one value per argument (BFCL's data, say)."""
    answers = meta.get("possible_answer")
    if not isinstance(answers, list) or len(answers) != 1 or not isinstance(answers[0], dict) or len(answers[0]) != 1:
        return None
    ((name, accepted),) = answers[0].items()
    if (
        name not in TOOLS
        or not isinstance(accepted, dict)
        or not all(isinstance(v, list) and len(v) == 1 for v in accepted.values())
    ):
        return None
    return name, {k: v[0] for k, v in accepted.items()}


def generate(n: int, seed: int = 0) -> list[Example]:
    """``n`` examples, deterministic for ``(n, seed)``; tools cycle in a shuffled order so each appears ~n/12 times."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    names, seen, out = list(TOOLS), set(), []
    for i in range(n):
        if i % len(names) == 0:
            rng.shuffle(names)
        out.append(draw_unique(lambda i=i: make_example(names[i % len(names)], rng), seen))
    return out
