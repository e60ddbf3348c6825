"""Instruction-following violations for the tiny policy's training data and the localization benchmark.

Each function breaks one constraint at one known place of a gold response (a comma inserted after a word, one
word re-cased, a sentence dropped or repeated, the start or end phrase removed, ...) and returns None where it
cannot. It reads the constraint's official IFEval kwargs (``num_words`` + ``relation``, ``end_phrase``, ...). The
caller checks with the verifier that the result really fails.
"""

from __future__ import annotations

import random
import re
from typing import Optional
from collections.abc import Callable

from ..tasks.ifeval.instruction_checks import AT_LEAST
from ..tasks.ifeval.text_units import count_sentences, count_words

SENTENCE_RE = re.compile(r"[^.!?\n]+[.!?]+")


def _recase(word: str, text: str) -> str:
    """``word`` in the case the text uses (all capitals, all lowercase, or as given)."""
    letters = [c for c in text if c.isalpha()]
    if letters and all(c.isupper() for c in letters):
        return word.upper()
    return word.lower() if letters and all(c.islower() for c in letters) else word


def _pick(spans: list, rng: random.Random):
    return rng.choice(spans) if spans else None


def _insert_comma(text, args, rng):
    at = _pick([m.end() for m in re.finditer(r"[A-Za-z](?= [A-Za-z])", text)], rng)
    return None if at is None else text[:at] + "," + text[at:]


def _capitalize_word(text, args, rng):
    at = _pick([m.start() for m in re.finditer(r"\b[a-z]", text)], rng)
    return None if at is None else text[:at] + text[at].upper() + text[at + 1 :]


def _lower_word(text, args, rng):
    m = _pick(list(re.finditer(r"\b[A-Z]{2,}\b", text)), rng)
    return None if m is None else text[: m.start()] + m.group(0).lower() + text[m.end() :]


def _drop_sentence(text, args, rng):
    m = _pick(list(SENTENCE_RE.finditer(text))[1:-1], rng)
    return None if m is None else text[: m.start()] + text[m.end() :].lstrip(" ")


def _repeat_sentence(text, args, rng):
    sents = list(SENTENCE_RE.finditer(text))[1:-1]
    m, at = _pick(sents, rng), _pick(sents, rng)
    return None if m is None else text[: at.end()] + " " + m.group(0).strip() + text[at.end() :]


def _cross(count: Callable[[str], int], key: str):
    """Below an ``at least`` threshold by dropping sentences, up to a ``less than`` one by repeating them."""

    def violate(text, args, rng):
        at_least = args.get("relation") == AT_LEAST
        change = _drop_sentence if at_least else _repeat_sentence
        for _ in range(8):  # a few sentences until the threshold is crossed (the oracle checks the result)
            text = change(text, args, rng) or text
            n = count(text)
            if (n < args[key]) if at_least else (n >= args[key]):
                return text
        return None

    return violate


def _drop_line(pattern: str):
    def violate(text, args, rng):
        m = _pick(list(re.finditer(pattern, text, re.M | re.I)), rng)
        return None if m is None else text[: m.start()] + text[m.end() :]

    return violate


def _replace_keyword(text, args, rng):
    """Every word that holds the keyword (IFEval counts it inside words too) becomes "it"."""
    keyword = re.escape(str(args.get("keyword", "")).strip())
    if not keyword:
        return None
    return re.sub(r"\w*" + keyword + r"\w*", lambda m: _recase("it", text), text, flags=re.I)


def _insert_forbidden(text, args, rng):
    at = _pick([m.start() for m in re.finditer(r"(?<= )[A-Za-z]{4,}\b", text)], rng)
    word = _recase(rng.choice(args.get("forbidden_words") or ["very"]), text)
    return None if at is None else text[:at] + word + " " + text[at:]


def _drop_start(text, args, rng):
    """The opening phrase removed (compared case-insensitively, as the checker does)."""
    phrase, body = str(args.get("start_phrase", "")).strip(), text.lstrip()
    return body[len(phrase) :].lstrip() if phrase and body.lower().startswith(phrase.lower()) else None


def _drop_end(text, args, rng):
    """The closing phrase removed (compared case-insensitively, as the checker does)."""
    phrase, body = str(args.get("end_phrase", "")).strip(), text.rstrip()
    return body[: -len(phrase)].rstrip() if phrase and body.lower().endswith(phrase.lower()) else None


VIOLATIONS: dict[str, Callable[[str, dict, random.Random], Optional[str]]] = {
    "no_comma": _insert_comma,
    "lowercase": _capitalize_word,
    "uppercase": _lower_word,
    "word_count": _cross(count_words, "num_words"),
    "sentence_count": _cross(count_sentences, "num_sentences"),
    "bullet_count": _drop_line(r"^[*-] [^\n]*\n?"),
    "paragraph_count": _drop_line(r"^\*\*\*\n"),
    "keyword": _replace_keyword,
    "forbidden_words": _insert_forbidden,
    "starts_with": _drop_start,
    "ends_with": _drop_end,
    "title": lambda t, a, r: t.replace("<<", "", 1).replace(">>", "", 1) if "<<" in t else None,
    "json_format": lambda t, a, r: t.rstrip()[:-1] if t.rstrip().endswith("}") else None,
    "postscript": _drop_line(r"\n*^P\.S\.[^\n]*"),
}
"""Constraint name (verifier ``ifeval.<name>``) -> ``(text, kwargs, rng) -> violated text`` (None where it cannot);
each breaks one known place."""
