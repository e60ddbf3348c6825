"""Relevant spans per instruction: the characters of the response that decide the official verdict.

As for the other families: violating characters where a constraint forbids something
(commas; capitals for lowercase; lower-case letters for capitals) so a passing response gets ``[]``; the counted units
otherwise (words, sentence ends, bullet markers, ``***`` dividers, placeholders, highlights, capital words, keyword
occurrences, letters); the compared text for start/end/quotation/repeat checks; the ``<<title>>``; the postscript;
the outer characters of a JSON body (or the character where parsing failed). Spans are ``[start, end)`` offsets in
the response as given (loose-mode variants are not mapped back). ``kwargs`` must be validated.

Decision spans (the credit study's oracle) are these plus the end-of-sequence token, ``[len(response),
len(response) + 1)``, where ending the response decides the verdict (:func:`ending_decides`); the relevant spans
stay the localization benchmark's ground truth.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable

from . import instruction_checks as C
from . import text_units as T

Span = tuple[int, int]


def _matches(pattern: str, value: str, flags: int = 0) -> list[Span]:
    """Non-empty matches; a kwarg pattern runs within the checks' time budget (may raise ``PatternTimeout``)."""
    return C.pattern_run("spans", pattern, value, flags)


def _stripped(value: str) -> Span:
    """Span of ``value`` without its surrounding whitespace."""
    start = len(value) - len(value.lstrip())
    return start, max(start, len(value.rstrip()))


def _edges(value: str) -> list[Span]:
    start, end = _stripped(value)
    return [] if start == end else sorted({(start, start + 1), (end - 1, end)})


def _unquoted(value: str) -> Span:
    """Span compared by the start/end checks: stripped of whitespace, then of double quotes."""
    start, end = _stripped(value)
    while start < end and value[start] == '"':
        start += 1
    while end > start and value[end - 1] == '"':
        end -= 1
    return start, end


def _sorted(spans) -> list[Span]:
    return sorted(set(spans))


def keyword_spans(value: str, kw: dict) -> list[Span]:
    return _sorted(s for k in kw["keywords"] for s in _matches(k, value, re.I))


def forbidden_spans(value: str, kw: dict) -> list[Span]:
    return _sorted(s for w in kw["forbidden_words"] for s in _matches(r"\b" + w + r"\b", value, re.I))


def letter_spans(value: str, kw: dict) -> list[Span]:
    letter = kw["letter"].strip().lower()
    return T.char_runs(value, lambda c: letter in c.lower())


def sentence_ends(value: str, kw: dict) -> list[Span]:
    return [(e - 1, e) for s, e in T.sentences(value) if e > s]


def paragraph_first_word_spans(value: str, kw: dict) -> list[Span]:
    seps = _matches(r"\n\n", value)
    starts = [0] + [e for _, e in seps]
    nth = kw["nth_paragraph"]
    if nth > len(starts):
        return seps
    chunk_start = starts[nth - 1]
    m = re.compile(r"\S+").search(value, chunk_start, seps[nth - 1][0] if nth - 1 < len(seps) else len(value))
    return _sorted(seps + ([m.span()] if m else []))


def postscript_spans(value: str, kw: dict) -> list[Span]:
    pattern = C.postscript_pattern(kw["postscript_marker"].strip())
    out = []
    for m_start, m_end in C.pattern_run("spans", pattern, value, re.M | re.I):
        text = value[m_start:m_end]
        start = m_start + len(text) - len(text.lstrip())
        if m_end > start:
            out.append((start, m_end))
    return out


def bullet_spans(value: str, kw: dict) -> list[Span]:
    return _sorted((q, q + 1) for _, q, _ in C.bullet_matches(value))


def constrained_spans(value: str, kw: dict) -> list[Span]:
    return _sorted(s for o in C.CONSTRAINED_OPTIONS for s in _matches(re.escape(o), value))


def json_spans(value: str, kw: dict) -> list[Span]:
    body = C.json_body(value)
    offset = value.find(body) if body else -1
    try:
        json.loads(body)
    except json.JSONDecodeError as e:
        pos = max(offset, 0) + e.pos
        return [(pos, pos + 1)] if pos < len(value) else []
    except (ValueError, RecursionError):
        return []
    if offset < 0 or not body:
        return []
    return _sorted([(offset, offset + 1), (offset + len(body) - 1, offset + len(body))])


def two_response_spans(value: str, kw: dict) -> list[Span]:
    return _matches(re.escape("******"), value)


def prefix_span(value: str, kw: dict) -> list[Span]:
    start, end = _stripped(value)
    n = len(kw["prompt_to_repeat"].strip())
    return [(start, min(end, start + n))] if end > start else []


def end_span(value: str, kw: dict) -> list[Span]:
    start, end = _unquoted(value)
    n = len(kw["end_phrase"].strip())
    return [(max(start, end - n), end)] if end > start else []


def start_span(value: str, kw: dict) -> list[Span]:
    start, end = _unquoted(value)
    n = len(kw["start_phrase"].strip())
    return [(start, min(end, start + n))] if end > start else []


def _whole(value: str, kw: dict) -> list[Span]:
    start, end = _stripped(value)
    return [(start, end)] if end > start else []


def _not_lower(c: str) -> bool:
    """A cased character that breaks ``str.islower()``: upper or title case."""
    return c.isupper() or unicodedata.category(c) == "Lt"


def _not_upper(c: str) -> bool:
    """A cased character that breaks ``str.isupper()``: lower or title case."""
    return c.islower() or unicodedata.category(c) == "Lt"


SpanFn = Callable[[str, dict], list[Span]]
SPANS: dict[str, SpanFn] = {
    "keywords:existence": keyword_spans,
    "keywords:frequency": lambda v, kw: _matches(kw["keyword"].strip(), v, re.I),
    "keywords:forbidden_words": forbidden_spans,
    "keywords:letter_frequency": letter_spans,
    "language:response_language": _whole,
    "length_constraints:number_sentences": sentence_ends,
    "length_constraints:number_paragraphs": lambda v, kw: _matches(r"\*\*\*", v),
    "length_constraints:number_words": lambda v, kw: T.word_spans(v),
    "length_constraints:nth_paragraph_first_word": paragraph_first_word_spans,
    "detectable_content:number_placeholders": lambda v, kw: C.placeholder_spans(v),
    "detectable_content:postscript": postscript_spans,
    "detectable_format:number_bullet_lists": bullet_spans,
    "detectable_format:constrained_response": constrained_spans,
    "detectable_format:number_highlighted_sections": lambda v, kw: _sorted(m.span() for m in C.highlight_matches(v)),
    "detectable_format:multiple_sections": lambda v, kw: _matches(kw["section_spliter"].strip() + r"\s?\d+", v),
    "detectable_format:json_format": json_spans,
    "detectable_format:title": lambda v, kw: C.title_spans(v),
    "combination:two_responses": two_response_spans,
    "combination:repeat_prompt": prefix_span,
    "startend:end_checker": end_span,
    "mrtpo:starts_with": start_span,
    "change_case:capital_word_frequency": lambda v, kw: T.capital_word_spans(v),
    "change_case:english_capital": lambda v, kw: T.char_runs(v, _not_upper),
    "change_case:english_lowercase": lambda v, kw: T.char_runs(v, _not_lower),
    "punctuation:no_comma": lambda v, kw: T.char_runs(v, lambda c: c == ","),
    "startend:quotation": lambda v, kw: _edges(v),
}
"""Instruction id -> spans function."""


ENDS: frozenset[str] = frozenset(
    {
        "startend:end_checker",
        "startend:quotation",
        "detectable_format:json_format",
        "length_constraints:number_paragraphs",
        "length_constraints:nth_paragraph_first_word",
        "detectable_format:number_bullet_lists",
        "combination:two_responses",
    }
)
"""Instructions whose verdict ending the response always decides: what must come last (an end phrase, the closing
quote, the end of a JSON body) or an exact count of units that text after the end could add to (paragraphs, bullet
points, responses)."""
UPPER_BOUNDS: dict[str, str] = {
    "length_constraints:number_words": "relation",
    "length_constraints:number_sentences": "relation",
    "keywords:frequency": "relation",
    "keywords:letter_frequency": "let_relation",
    "change_case:capital_word_frequency": "capital_relation",
}
"""Counts where ending decides when their relation is an upper bound (``less than``): instruction id -> the kwarg
that holds the relation."""


def ending_decides(inst_id: str, kw: dict) -> bool:
    """Whether ending the response decides instruction ``inst_id`` with (validated) kwargs ``kw``: one of
    :data:`ENDS`, or a count of :data:`UPPER_BOUNDS` whose relation is ``less than``."""
    return inst_id in ENDS or (inst_id in UPPER_BOUNDS and kw.get(UPPER_BOUNDS[inst_id]) == C.LESS)
