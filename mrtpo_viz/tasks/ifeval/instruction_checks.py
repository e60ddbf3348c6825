"""The official IFEval checks, one pure function per instruction: ``(response, kwargs) -> (passed, reason)``.

``kwargs`` must already be validated by :func:`.instructions.validate_kwargs` (official names, no None values).
Each function reproduces the verdict of the official ``check_following`` of lm-eval 0.4.13 on a non-blank response
(the blank-response rule and loose mode live in :mod:`.evaluation`). Where the official checker uses a kwarg as a
regular expression (keywords, forbidden words, section splitter, custom postscript markers) so does this one, on
Python's ``re`` as the official code, through :mod:`mrtpo_viz.tasks.patterns` (:func:`pattern_run`): a kwarg comes
from data that anyone may upload, so the pattern is checked before it is compiled (length, counted repeats), and a
pattern that could backtrack for long runs in a worker process that is killed after its budget. A search past the
budget raises :class:`PatternTimeout`.
"""

from __future__ import annotations

import collections
import json
import re
from typing import Optional
from collections.abc import Callable

from ..patterns import MATCH_BUDGET_S, PatternError, PatternTimeout, re_run  # noqa: F401 (re-exported)
from . import text_units as text_units
from .matchers import bullet_matches, placeholder_spans, title_spans

Result = tuple[bool, str]
LESS, AT_LEAST = "less than", "at least"
CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")
PARAGRAPH_SEP_RE = re.compile(r"\s?\*\*\*\s?")
HIGHLIGHT_RE = re.compile(r"\*[^\n\*]*\*")
DOUBLE_HIGHLIGHT_RE = re.compile(r"\*\*[^\n\*]*\*\*")
JSON_FENCES = ("```json", "```Json", "```JSON", "```")
REGEX_TIMEOUT_S = MATCH_BUDGET_S
"""Time budget of one match with a kwarg used as a pattern (see :mod:`mrtpo_viz.tasks.patterns`)."""


def pattern_run(op: str, pattern: str, value: str, flags: int = 0):
    """``re``'s answer for a kwarg pattern (``op``: ``search`` -> bool, ``count`` -> ``len(re.findall)``,
    ``split`` -> ``len(re.split)``, ``spans`` -> non-empty match spans), within the budget."""
    return re_run(op, pattern, value, flags)


def compare(n: int, relation: str, threshold: int) -> bool:
    """The official comparison: ``less than`` is ``<``, anything else (``at least``) is ``>=``."""
    return n < threshold if relation == LESS else n >= threshold


def _counted(n: int, unit: str, relation: str, threshold: int) -> Result:
    ok = compare(n, relation, threshold)
    return ok, f"{n} {unit}; need {relation} {threshold}"


def _language(value: str) -> Optional[str]:
    """langdetect's language code for ``value`` (seed 0), None when langdetect finds no features."""
    try:
        import langdetect
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the IFEval language checks need the 'langdetect' package") from e
    langdetect.DetectorFactory.seed = 0
    try:
        return langdetect.detect(value)
    except langdetect.LangDetectException:
        return None


# --- keywords ----------------------------------------------------------------------------------------------------


def keyword_existence(value: str, kw: dict) -> Result:
    missing = [k for k in kw["keywords"] if not pattern_run("search", k, value, re.I)]
    return not missing, "all keywords present" if not missing else f"missing keywords: {missing}"


def keyword_frequency(value: str, kw: dict) -> Result:
    keyword = kw["keyword"].strip()
    n = pattern_run("count", keyword, value, re.I)
    return _counted(n, f"occurrence(s) of {keyword!r}", kw["relation"], kw["frequency"])


def forbidden_words(value: str, kw: dict) -> Result:
    found = [w for w in sorted(set(kw["forbidden_words"])) if pattern_run("search", r"\b" + w + r"\b", value, re.I)]
    return not found, "no forbidden words" if not found else f"uses forbidden words: {found}"


def letter_frequency(value: str, kw: dict) -> Result:
    letter = kw["letter"].strip().lower()
    n = collections.Counter(value.lower())[letter]
    return _counted(n, f"letter(s) {letter!r}", kw["let_relation"], kw["let_frequency"])


# --- language and case -------------------------------------------------------------------------------------------


def response_language(value: str, kw: dict) -> Result:
    lang = _language(value)
    if lang is None:
        return True, "language not detectable (counts as followed)"
    return lang == kw["language"], f"detected language {lang!r}, need {kw['language']!r}"


def _case_and_english(value: str, case_ok: bool, case_name: str) -> Result:
    if not case_ok:
        return False, f"not all {case_name}"
    lang = _language(value)
    if lang is None:
        return True, f"all {case_name}; language not detectable (counts as followed)"
    return lang == "en", f"all {case_name}; detected language {lang!r}, need 'en'"


def english_lowercase(value: str, kw: dict) -> Result:
    return _case_and_english(value, value.islower(), "lowercase")


def english_capital(value: str, kw: dict) -> Result:
    return _case_and_english(value, value.isupper(), "capital letters")


def capital_word_frequency(value: str, kw: dict) -> Result:
    n = len(text_units.capital_word_spans(value))
    return _counted(n, "all-capital word(s)", kw["capital_relation"], kw["capital_frequency"])


def no_comma(value: str, kw: dict) -> Result:
    n = value.count(",")
    return n == 0, "no commas" if n == 0 else f"found {n} comma(s)"


# --- length ------------------------------------------------------------------------------------------------------


def number_sentences(value: str, kw: dict) -> Result:
    return _counted(text_units.count_sentences(value), "sentence(s)", kw["relation"], kw["num_sentences"])


def number_words(value: str, kw: dict) -> Result:
    return _counted(text_units.count_words(value), "word(s)", kw["relation"], kw["num_words"])


def paragraph_count(value: str) -> Optional[int]:
    """Paragraphs between ``***`` dividers (empty first/last ones dropped); None if an inner one is empty."""
    parts = PARAGRAPH_SEP_RE.split(value)
    n = len(parts)
    for i, part in enumerate(parts):
        if not part.strip():
            if i not in (0, len(parts) - 1):
                return None
            n -= 1
    return n


def number_paragraphs(value: str, kw: dict) -> Result:
    n = paragraph_count(value)
    if n is None:
        return False, "an empty paragraph between two *** dividers"
    return n == kw["num_paragraphs"], f"{n} paragraph(s); need exactly {kw['num_paragraphs']}"


def first_word(paragraph: str) -> str:
    """The official first word: the first whitespace token without leading quotes, cut at the first punctuation."""
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    out = ""
    for ch in word:
        if ch in ".,?!'\"":
            break
        out += ch.lower()
    return out


def nth_paragraph_first_word(value: str, kw: dict) -> Result:
    parts = value.split("\n\n")
    n = sum(1 for p in parts if p.strip())
    nth, want = kw["nth_paragraph"], kw["first_word"].lower()
    if nth > n:
        return False, f"only {n} paragraph(s) separated by blank lines; paragraph {nth} is missing"
    paragraph = parts[nth - 1].strip()
    if not paragraph:
        return False, f"paragraph {nth} (counting empty chunks) is empty"
    got = first_word(paragraph)
    ok = n == kw["num_paragraphs"] and got == want
    return ok, f"{n} paragraph(s) (need {kw['num_paragraphs']}); paragraph {nth} starts with {got!r} (need {want!r})"


# --- detectable content and format -------------------------------------------------------------------------------


def number_placeholders(value: str, kw: dict) -> Result:
    return _counted(len(placeholder_spans(value)), "placeholder(s)", AT_LEAST, kw["num_placeholders"])


def postscript_pattern(marker: str) -> str:
    """The official pattern (applied to the lower-cased response) for a postscript ``marker``."""
    if marker == "P.P.S":
        return r"\s*p\.\s?p\.\s?s.*$"
    if marker == "P.S.":
        return r"\s*p\.\s?s\..*$"
    return r"\s*" + marker.lower() + r".*$"


def postscript(value: str, kw: dict) -> Result:
    marker = kw["postscript_marker"].strip()
    ok = pattern_run("search", postscript_pattern(marker), value.lower(), re.M)
    return ok, f"{'has' if ok else 'no'} postscript marked {marker!r}"


def number_bullet_lists(value: str, kw: dict) -> Result:
    n = len(bullet_matches(value))
    return n == kw["num_bullets"], f"{n} bullet point(s); need exactly {kw['num_bullets']}"


def constrained_response(value: str, kw: dict) -> Result:
    found = [o for o in CONSTRAINED_OPTIONS if o in value.strip()]
    return bool(found), f"contains {found[0]!r}" if found else "contains none of the allowed answers"


def highlight_matches(value: str) -> list[re.Match]:
    """The highlights the official checker counts: ``*x*`` and ``**x**`` with non-blank text (both may count)."""
    single = [m for m in HIGHLIGHT_RE.finditer(value) if m.group().strip("*").strip()]
    double = [m for m in DOUBLE_HIGHLIGHT_RE.finditer(value) if m.group()[2:-2].strip()]
    return single + double


def number_highlighted_sections(value: str, kw: dict) -> Result:
    return _counted(len(highlight_matches(value)), "highlighted section(s)", AT_LEAST, kw["num_highlights"])


def section_pattern(splitter: str) -> str:
    return r"\s?" + splitter.strip() + r"\s?\d+\s?"


def multiple_sections(value: str, kw: dict) -> Result:
    n = pattern_run("split", section_pattern(kw["section_spliter"]), value) - 1
    return _counted(n, f"section(s) marked {kw['section_spliter'].strip()!r}", AT_LEAST, kw["num_sections"])


def json_body(value: str) -> str:
    """The response without surrounding whitespace and markdown fences, as the official checker strips them."""
    body = value.strip()
    for fence in JSON_FENCES:
        body = body.removeprefix(fence)
    return body.removesuffix("```").strip()


def json_format(value: str, kw: dict) -> Result:
    try:
        json.loads(json_body(value))
    except ValueError as e:
        return False, f"not valid JSON ({e})"
    except RecursionError:
        return False, "JSON nested too deeply to parse"
    return True, "valid JSON"


def title(value: str, kw: dict) -> Result:
    found = title_spans(value)
    return bool(found), f"title {value[slice(*found[0])]!r}" if found else "no <<title>>"


# --- combination and start/end -----------------------------------------------------------------------------------


def two_responses(value: str, kw: dict) -> Result:
    parts = value.split("******")
    kept = []
    for i, part in enumerate(parts):
        if part.strip():
            kept.append(part)
        elif i not in (0, len(parts) - 1):
            return False, "an empty response between two ****** separators"
    ok = len(kept) == 2 and kept[0].strip() != kept[1].strip()
    return ok, f"{len(kept)} response(s)" + ("" if len(kept) != 2 or ok else ", both the same")


def repeat_prompt(value: str, kw: dict) -> Result:
    ok = value.strip().lower().startswith(kw["prompt_to_repeat"].strip().lower())
    return ok, "starts with the request" if ok else "does not start with the request, word for word"


def end_checker(value: str, kw: dict) -> Result:
    phrase = kw["end_phrase"].strip()
    ok = value.strip().strip('"').lower().endswith(phrase.lower())
    return ok, f"{'ends' if ok else 'does not end'} with {phrase!r}"


def start_checker(value: str, kw: dict) -> Result:
    """Extension (no official id): the mirror image of ``end_checker``."""
    phrase = kw["start_phrase"].strip()
    ok = value.strip().strip('"').lower().startswith(phrase.lower())
    return ok, f"{'starts' if ok else 'does not start'} with {phrase!r}"


def quotation(value: str, kw: dict) -> Result:
    v = value.strip()
    ok = len(v) > 1 and v[0] == '"' and v[-1] == '"'
    return ok, "wrapped in double quotes" if ok else "not wrapped in double quotes"


Checker = Callable[[str, dict], Result]
CHECKS: dict[str, Checker] = {
    "keywords:existence": keyword_existence,
    "keywords:frequency": keyword_frequency,
    "keywords:forbidden_words": forbidden_words,
    "keywords:letter_frequency": letter_frequency,
    "language:response_language": response_language,
    "length_constraints:number_sentences": number_sentences,
    "length_constraints:number_paragraphs": number_paragraphs,
    "length_constraints:number_words": number_words,
    "length_constraints:nth_paragraph_first_word": nth_paragraph_first_word,
    "detectable_content:number_placeholders": number_placeholders,
    "detectable_content:postscript": postscript,
    "detectable_format:number_bullet_lists": number_bullet_lists,
    "detectable_format:constrained_response": constrained_response,
    "detectable_format:number_highlighted_sections": number_highlighted_sections,
    "detectable_format:multiple_sections": multiple_sections,
    "detectable_format:json_format": json_format,
    "detectable_format:title": title,
    "combination:two_responses": two_responses,
    "combination:repeat_prompt": repeat_prompt,
    "startend:end_checker": end_checker,
    "change_case:capital_word_frequency": capital_word_frequency,
    "change_case:english_capital": english_capital,
    "change_case:english_lowercase": english_lowercase,
    "punctuation:no_comma": no_comma,
    "startend:quotation": quotation,
    "mrtpo:starts_with": start_checker,
}
"""Instruction id -> checker (the 25 official ids and the ``mrtpo:starts_with`` extension)."""
