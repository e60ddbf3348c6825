"""The IFEval instruction table: official id, verifier name, title, kwargs (official names) and description.

The 25 instruction ids of Google's IFEval (``instructions_registry.INSTRUCTION_DICT`` as shipped in lm-eval 0.4.13),
plus one declared extension, ``mrtpo:starts_with`` (``ifeval.starts_with``: the mirror image of the official
``startend:end_checker``; IFEval registers no "starts with a phrase" instruction). Each instruction's description is
the official ``build_description`` text, built here from the kwargs (checked against the official text in the
agreement test). :func:`validate_kwargs` turns a kwargs dict into the checked values or a :class:`KwargsError`.

Departure from the official code: lm-eval's loops (``test_instruction_following_strict``/``_loose``) drop every
falsy kwarg (None, 0, ``""``, ``[]``) before calling ``build_description``, and the classes draw a random value for
a kwarg that is missing (a random threshold, keyword or language), so the verdict would change from run to run.
Here every kwarg is required, and a missing or malformed one is a :class:`KwargsError` (a
:class:`~mrtpo_viz.tasks.base.MissingArguments`). A value that the *class* accepts is accepted here even where the
loop would drop it: a count of 0 (the classes redraw only None or a negative count), any integer for
``capital_frequency`` (redrawn only when None), ``nth_paragraph`` from 1 to ``num_paragraphs``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional
from collections.abc import Callable

from ..base import Argument, MissingArguments
from ..patterns import pattern_problem
from .instruction_checks import AT_LEAST, CONSTRAINED_OPTIONS, LESS, postscript_pattern, section_pattern

# a table, laid out by hand (ruff format would put one item per line)
# fmt: off
LANGUAGES = {
    "en": "English", "es": "Spanish", "pt": "Portuguese", "ar": "Arabic", "hi": "Hindi", "fr": "French",
    "ru": "Russian", "de": "German", "ja": "Japanese", "it": "Italian", "bn": "Bengali", "uk": "Ukrainian",
    "th": "Thai", "ur": "Urdu", "ta": "Tamil", "te": "Telugu", "bg": "Bulgarian", "ko": "Korean", "pl": "Polish",
    "he": "Hebrew", "fa": "Persian", "vi": "Vietnamese", "ne": "Nepali", "sw": "Swahili", "kn": "Kannada",
    "mr": "Marathi", "gu": "Gujarati", "pa": "Punjabi", "ml": "Malayalam", "fi": "Finnish",
}
"""The ISO 639-1 codes the official ``response_language`` accepts, with the names its description uses."""
# fmt: on
RELATIONS = (LESS, AT_LEAST)
"""``less than`` is a strict ``<``; ``at least`` is ``>=``."""
MAX_WORDS = 100
"""Items of a list kwarg (keywords, forbidden words): IFEval's have at most a handful."""
EXTENSION_IDS = frozenset({"mrtpo:starts_with"})
"""Ids of instructions that are ours, not IFEval's."""


class KwargsError(MissingArguments):
    """The kwargs of an instruction are missing, unknown or malformed: the verifier needs input."""


@dataclass(frozen=True)
class Instruction:
    """One IFEval instruction: its official id, our verifier name, and its kwargs (name -> kind)."""

    id: str
    """Official instruction id, e.g. ``punctuation:no_comma`` (``mrtpo:...`` for an extension)."""
    name: str
    """Verifier name, e.g. ``ifeval.no_comma``."""
    title: str
    """Short human title (the ``[Verifier: title]`` of its information block)."""
    params: tuple[tuple[str, str], ...]
    """(kwarg name, kind) in the official order; kinds are the keys of :data:`KINDS`."""
    describe: Callable[[dict], str]
    """Validated kwargs -> the official description."""

    @property
    def official(self) -> bool:
        return self.id not in EXTENSION_IDS

    @property
    def short(self) -> str:
        """The verifier name without ``ifeval.``."""
        return self.name.split(".", 1)[1]


def _sections(k: dict) -> str:
    s = k["section_spliter"].strip()
    return (
        f"Your response must have {k['num_sections']} sections. Mark the beginning of each section with {s} X, "
        f"such as:\n{s} 1\n[content of section 1]\n{s} 2\n[content of section 2]"
    )


def _nth_paragraph(k: dict) -> str:
    return (
        f"There should be {k['num_paragraphs']} paragraphs. Paragraphs and only paragraphs are separated with "
        "each other by two new lines as if it was '\\n\\n' in python. "
        f"Paragraph {k['nth_paragraph']} must start with word {k['first_word'].lower()}."
    )


def _fixed(text: str) -> Callable[[dict], str]:
    return lambda k: text


# a table, laid out by hand (ruff format would put one item per line)
# fmt: off
_I = Instruction
INSTRUCTIONS: tuple[Instruction, ...] = (
    _I("punctuation:no_comma", "ifeval.no_comma", "No commas", (),
       _fixed("In your entire response, refrain from the use of any commas.")),
    _I("change_case:english_lowercase", "ifeval.lowercase", "Lowercase only", (),
       _fixed("Your entire response should be in English, and in all lowercase letters. No capital letters are "
              "allowed.")),
    _I("change_case:english_capital", "ifeval.uppercase", "Capitals only", (),
       _fixed("Your entire response should be in English, and in all capital letters.")),
    _I("length_constraints:number_words", "ifeval.word_count", "Word count",
       (("num_words", "count"), ("relation", "relation")),
       lambda k: f"Answer with {k['relation']} {k['num_words']} words."),
    _I("length_constraints:number_sentences", "ifeval.sentence_count", "Sentence count",
       (("num_sentences", "count"), ("relation", "relation")),
       lambda k: f"Your response should contain {k['relation']} {k['num_sentences']} sentences."),
    _I("detectable_format:number_bullet_lists", "ifeval.bullet_count", "Bullet points", (("num_bullets", "count"),),
       lambda k: f"Your answer must contain exactly {k['num_bullets']} bullet points. Use the markdown bullet points "
                 "such as:\n* This is point 1. \n* This is point 2"),
    _I("keywords:frequency", "ifeval.keyword", "Keyword",
       (("keyword", "regex"), ("frequency", "count"), ("relation", "relation")),
       lambda k: f"In your response, the word {k['keyword'].strip()} should appear {k['relation']} "
                 f"{k['frequency']} times."),
    _I("keywords:forbidden_words", "ifeval.forbidden_words", "Forbidden words", (("forbidden_words", "word_list"),),
       lambda k: f"Do not include keywords {sorted(set(k['forbidden_words']))} in the response."),
    _I("startend:end_checker", "ifeval.ends_with", "Ends with", (("end_phrase", "text"),),
       lambda k: f"Finish your response with this exact phrase {k['end_phrase'].strip()}. No other words should "
                 "follow this phrase."),
    _I("mrtpo:starts_with", "ifeval.starts_with", "Starts with", (("start_phrase", "text"),),
       lambda k: f"Start your response with this exact phrase {k['start_phrase'].strip()}. No other words should "
                 "come before this phrase."),
    _I("detectable_format:title", "ifeval.title", "Title", (),
       _fixed("Your answer must contain a title, wrapped in double angular brackets, such as <<poem of joy>>.")),
    _I("detectable_format:json_format", "ifeval.json_format", "JSON format", (),
       _fixed("Entire output should be wrapped in JSON format. You can use markdown ticks such as ```.")),
    _I("length_constraints:number_paragraphs", "ifeval.paragraph_count", "Paragraphs",
       (("num_paragraphs", "count"),),
       lambda k: f"There should be {k['num_paragraphs']} paragraphs. Paragraphs are separated with the markdown "
                 "divider: ***"),
    _I("detectable_content:postscript", "ifeval.postscript", "Postscript", (("postscript_marker", "marker"),),
       lambda k: "At the end of your response, please explicitly add a postscript starting with "
                 f"{k['postscript_marker'].strip()}"),
    _I("keywords:existence", "ifeval.include_keywords", "Include keywords", (("keywords", "regex_list"),),
       lambda k: f"Include keywords {sorted(k['keywords'])} in the response."),
    _I("keywords:letter_frequency", "ifeval.letter_frequency", "Letter frequency",
       (("letter", "letter"), ("let_frequency", "count"), ("let_relation", "relation")),
       lambda k: f"In your response, the letter {k['letter'].strip().lower()} should appear {k['let_relation']} "
                 f"{k['let_frequency']} times."),
    _I("language:response_language", "ifeval.language", "Response language", (("language", "language"),),
       lambda k: f"Your ENTIRE response should be in {LANGUAGES[k['language']]} language, no other language is "
                 "allowed."),
    _I("length_constraints:nth_paragraph_first_word", "ifeval.paragraph_first_word", "Paragraph first word",
       (("num_paragraphs", "count"), ("nth_paragraph", "position"), ("first_word", "text")), _nth_paragraph),
    _I("detectable_content:number_placeholders", "ifeval.placeholders", "Placeholders",
       (("num_placeholders", "count"),),
       lambda k: f"The response must contain at least {k['num_placeholders']} placeholders represented by square "
                 "brackets, such as [address]."),
    _I("detectable_format:constrained_response", "ifeval.constrained_response", "Constrained answer", (),
       _fixed(f"Answer with one of the following options: {CONSTRAINED_OPTIONS}")),
    _I("detectable_format:number_highlighted_sections", "ifeval.highlights", "Highlighted sections",
       (("num_highlights", "count"),),
       lambda k: f"Highlight at least {k['num_highlights']} sections in your answer with markdown, i.e. "
                 "*highlighted section*."),
    _I("detectable_format:multiple_sections", "ifeval.sections", "Sections",
       (("section_spliter", "splitter"), ("num_sections", "count")), _sections),
    _I("combination:two_responses", "ifeval.two_responses", "Two responses", (),
       _fixed("Give two different responses. Responses and only responses should be separated by 6 asterisk "
              "symbols: ******.")),
    _I("combination:repeat_prompt", "ifeval.repeat_prompt", "Repeat the request", (("prompt_to_repeat", "text"),),
       _fixed("First repeat the request word for word without change, then give your answer (1. do not say any "
              "words or characters before repeating the request; 2. the request you need to repeat does not "
              "include this sentence)")),
    _I("change_case:capital_word_frequency", "ifeval.capital_words", "All-capital words",
       (("capital_frequency", "int"), ("capital_relation", "relation")),
       lambda k: f"In your response, words with all capital letters should appear {k['capital_relation']} "
                 f"{k['capital_frequency']} times."),
    _I("startend:quotation", "ifeval.quotation", "Wrapped in quotes", (),
       _fixed("Wrap your entire response with double quotation marks.")),
)
"""Every instruction, the 14 verifiers of mrtpo-viz 0.2 first (same names), then the other 11 official ids."""
# fmt: on
BY_ID: dict[str, Instruction] = {i.id: i for i in INSTRUCTIONS}
BY_NAME: dict[str, Instruction] = {i.name: i for i in INSTRUCTIONS}
OFFICIAL_IDS: tuple[str, ...] = tuple(i.id for i in INSTRUCTIONS if i.official)
assert len(OFFICIAL_IDS) == 25 and len(BY_NAME) == len(BY_ID) == len(INSTRUCTIONS)


# --- kwargs: what each one is, and its validation ------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _regex_ok(pattern: str, flags: int = 0) -> bool:
    """Passes the user-pattern check and compiles on Python's ``re`` (the official checker's engine)."""
    return pattern_problem(pattern, flags) is None


# a table, laid out by hand (ruff format would put one item per line)
# fmt: off
PATTERNS: dict[str, Callable[[str], tuple[str, int]]] = {
    "keyword": lambda v: (v.strip(), re.I),
    "keywords": lambda v: (v, re.I),
    "forbidden_words": lambda v: (r"\b" + v + r"\b", re.I),
    "postscript_marker": lambda v: (postscript_pattern(v.strip()), re.M),
    "section_spliter": lambda v: (section_pattern(v), 0),
}
"""kwarg name -> (the pattern the checker compiles from one value, its flags)."""


# fmt: on
def _pattern_reason(name: str, value: Any) -> Optional[str]:
    """Why a pattern kwarg (or one item of a list of them) cannot be used, or None."""
    for v in value if isinstance(value, list) else [value]:
        if isinstance(v, str) and v.strip():
            problem = pattern_problem(*PATTERNS[name](v))
            if problem:
                return f"{v[:80]!r}: {problem}"
    return None


def _text_ok(v: Any) -> bool:
    return isinstance(v, str) and bool(v.strip())


# a table, laid out by hand (ruff format would put one item per line)
# fmt: off
KINDS: dict[str, tuple[Callable[[Any], bool], str, str]] = {
    "count": (lambda v: _is_int(v) and v >= 0, "an integer >= 0", "integer"),
    "int": (_is_int, "an integer", "integer"),
    "position": (lambda v: _is_int(v) and v >= 1, "an integer >= 1", "integer"),
    "relation": (lambda v: v in RELATIONS, f"one of {list(RELATIONS)}", "choice"),
    "text": (_text_ok, "a non-blank string", "text"),
    "regex": (lambda v: _text_ok(v) and _regex_ok(v.strip(), re.I),
              "a non-blank string that is a valid regular expression (the official checker uses it as one)", "text"),
    "splitter": (lambda v: _text_ok(v) and _regex_ok(section_pattern(v)),
                 "a non-blank string that is a valid regular expression (the official checker uses it as one)",
                 "text"),
    "marker": (lambda v: _text_ok(v) and _regex_ok(postscript_pattern(v.strip()), re.M),
               "a non-blank string (a valid regex)", "text"),
    "regex_list": (lambda v: isinstance(v, list) and bool(v) and all(_text_ok(w) and _regex_ok(w, re.I) for w in v),
                   "a non-empty list of non-blank strings (each a valid regular expression)", "list"),
    "word_list": (lambda v: isinstance(v, list) and bool(v)
                  and all(_text_ok(w) and _regex_ok(r"\b" + w + r"\b", re.I) for w in v),
                  "a non-empty list of non-blank strings (each a valid regular expression)", "list"),
    "language": (lambda v: v in LANGUAGES, f"a language code among {sorted(LANGUAGES)}", "choice"),
    "letter": (lambda v: isinstance(v, str) and len(v) == 1 and v.isascii() and v.isalpha(),
               "a single ASCII letter", "text"),
}
"""kwarg kind -> (predicate, what a valid value is, the :class:`Argument` kind the app asks with)."""

KWARG_TITLES: dict[str, tuple[str, str]] = {
    "num_words": ("Number of words", "the threshold, e.g. 100"),
    "relation": ("Relation", "'less than' (strictly fewer) or 'at least'"),
    "num_sentences": ("Number of sentences", "the threshold, e.g. 5"),
    "num_bullets": ("Number of bullet points", "exactly this many, e.g. 3"),
    "keyword": ("Keyword", "counted case-insensitively as a regular expression, also inside words"),
    "frequency": ("Frequency", "how many times, e.g. 2"),
    "forbidden_words": ("Forbidden words", "whole words, case-insensitive, e.g. ['very', 'just']"),
    "end_phrase": ("End phrase", "e.g. 'Is there anything else I can help with?'"),
    "start_phrase": ("Start phrase", "e.g. 'Here is my note.'"),
    "num_paragraphs": ("Number of paragraphs", "exactly this many, e.g. 3"),
    "postscript_marker": ("Postscript marker", "e.g. 'P.S.' or 'P.P.S'"),
    "keywords": ("Keywords", "each must appear (case-insensitive regular expressions), e.g. ['river', 'fish']"),
    "letter": ("Letter", "one ASCII letter, counted case-insensitively"),
    "let_frequency": ("Letter frequency", "how many times, e.g. 5"),
    "let_relation": ("Letter relation", "'less than' or 'at least'"),
    "language": ("Language", "an ISO 639-1 code, e.g. 'en'"),
    "nth_paragraph": ("Paragraph number", "which paragraph (from 1) must start with the word"),
    "first_word": ("First word", "the word that paragraph starts with"),
    "num_placeholders": ("Number of placeholders", "at least this many [placeholders]"),
    "num_highlights": ("Number of highlights", "at least this many *highlighted* sections"),
    "section_spliter": ("Section marker", "e.g. 'SECTION' or 'Section' (the official kwarg name is spelled so)"),
    "num_sections": ("Number of sections", "at least this many"),
    "prompt_to_repeat": ("Request to repeat", "the request the response must start with, word for word"),
    "capital_frequency": ("Number of all-capital words", "the threshold, e.g. 3"),
    "capital_relation": ("Capital-word relation", "'less than' or 'at least'"),
}
"""kwarg name -> (field title, what it means): the :class:`Argument` a verifier declares for it."""


# fmt: on
def arguments(inst: Instruction) -> tuple[Argument, ...]:
    """The :class:`Argument` fields of an instruction's kwargs (all required)."""
    out = []
    for name, kind in inst.params:
        title, meaning = KWARG_TITLES[name]
        choices = RELATIONS if kind == "relation" else tuple(LANGUAGES) if kind == "language" else ()
        out.append(Argument(name, title, kind=KINDS[kind][2], description=meaning, choices=choices))
    return tuple(out)


def instruction(key: Any) -> Instruction:
    """The instruction for an official (or extension) id or a verifier name; KwargsError if unknown."""
    found = (BY_ID.get(key) or BY_NAME.get(key)) if isinstance(key, str) else None
    if found is None:
        raise KwargsError(f"unknown IFEval instruction {key!r}; known ids: {', '.join(BY_ID)}")
    return found


def validate_kwargs(key: str, kwargs: Any) -> dict:
    """The kwargs of instruction ``key`` with None values dropped; KwargsError with a readable reason if invalid."""
    inst = instruction(key)
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, dict):
        raise KwargsError(f"{inst.id}: kwargs must be a dict, got {type(kwargs).__name__}")
    given = {k: v for k, v in kwargs.items() if v is not None}
    allowed = dict(inst.params)
    unknown = sorted(map(str, set(given) - set(allowed)))
    if unknown:
        raise KwargsError(f"{inst.id}: unknown kwarg(s) {unknown}; it takes {sorted(allowed) or 'none'}")
    missing = [k for k in allowed if k not in given]
    if missing:
        raise KwargsError(f"{inst.id}: missing kwarg(s) {missing}")
    for name, kind in inst.params:
        ok, what, _ = KINDS[kind]
        value = given[name]
        if isinstance(value, list) and len(value) > MAX_WORDS:  # before any item is compiled or checked
            raise KwargsError(f"{inst.id}: kwarg {name!r} lists {len(value):,} items; at most {MAX_WORDS}")
        if not ok(value):
            why = _pattern_reason(name, value) if name in PATTERNS else None
            got = repr(value) if len(repr(value)) <= 200 else repr(value)[:200] + "..."
            raise KwargsError(f"{inst.id}: kwarg {name!r} must be {what}, got {why or got}")
    if "nth_paragraph" in given and given["nth_paragraph"] > given["num_paragraphs"]:
        raise KwargsError(
            f"{inst.id}: 'nth_paragraph' ({given['nth_paragraph']}) exceeds 'num_paragraphs' "
            f"({given['num_paragraphs']})"
        )
    return given


def describe(key: str, kwargs: Any) -> str:
    """The official instruction text for these kwargs (the verifier information); raises KwargsError."""
    return instruction(key).describe(validate_kwargs(key, kwargs))
