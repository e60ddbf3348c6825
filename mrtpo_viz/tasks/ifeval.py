"""IFEval-style instruction-following verifiers: one verifier ``ifeval.<name>`` per constraint.

Each constraint reads its arguments from ``example.meta["constraints"]`` (a list of ``{"name", "args"}``); missing
or malformed arguments give score 0 with a reason, never an exception. A blank response scores 0 on every
constraint (even the ones it would satisfy vacuously, such as ``no_comma``): the prompt asks for a text.

Text units, used by the checkers and by the task generator (so gold arguments are counted the same way):

- word: a run of letters or digits, with inner apostrophes (``don't`` is one word);
- sentence: text closed by a run of ``.``, ``!`` or ``?`` (optionally followed by closing quotes or brackets) that
  is followed by whitespace or the end; an unterminated trailing fragment is not counted;
- bullet: a line starting with ``*`` or ``-`` followed by a space (``***`` is not a bullet);
- paragraph: a non-blank chunk between separator lines that hold only ``***`` (blank lines do not separate).

Relevant spans (the localization ground truth) are the characters that decide the verdict, per constraint: the
violating characters (commas; capitals for ``lowercase``; lower-case letters for ``uppercase``), so a passing
response has *no* positive evidence and gets ``[]``; the counted units (words, sentence terminators, bullet markers,
``***`` separators); keyword and forbidden-word occurrences; the compared text for ``starts_with`` / ``ends_with``
(the first / last ``len(phrase)`` characters after stripping); the ``<<title>>``; the postscript line; the outer
brackets of a JSON response (or the character where parsing failed).
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .base import Span, Verdict, Verifier, register

WORD_RE = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
SENTENCE_END_RE = re.compile(r"(?<![.!?])[.!?]+[\"')\]\u201d]*(?=\s|\Z)")
"""The lookbehind starts a match only at the first mark of a run, so a long run of dots costs linear time."""
BULLET_RE = re.compile(r"^[ \t]*([*-])[ \t]+\S", re.M)
SEPARATOR_RE = re.compile(r"^[ \t]*\*\*\*[ \t]*$", re.M)
TITLE_RE = re.compile(r"<<([^<>\n]+)>>")
COMMAS = (",", "\uff0c")


class BadArgs(ValueError):
    """The example's meta lacks a usable argument for a constraint."""


def words(text: str) -> list[Span]:
    """Spans of the words of ``text``."""
    return [m.span() for m in WORD_RE.finditer(text)]


def sentence_ends(text: str) -> list[Span]:
    """Spans of the sentence terminators of ``text`` (one per counted sentence)."""
    return [m.span() for m in SENTENCE_END_RE.finditer(text)]


def paragraphs(text: str) -> list[str]:
    """The non-blank chunks of ``text`` between ``***`` separator lines."""
    return [p for p in SEPARATOR_RE.split(text) if p.strip()]


@functools.lru_cache(maxsize=1024)
def _word_pattern(word: str) -> re.Pattern:
    return re.compile(r"(?<!\w)" + re.escape(word.strip()) + r"(?!\w)", re.I)


def occurrences(text: str, word: str) -> list[Span]:
    """Case-insensitive whole-word occurrences of ``word`` (a word or phrase) in ``text``."""
    return [m.span() for m in _word_pattern(word).finditer(text)]


def char_runs(text: str, pred: Callable[[str], bool]) -> list[Span]:
    """Spans of maximal runs of characters satisfying ``pred``."""
    spans: list[Span] = []
    for i, c in enumerate(text):
        if pred(c):
            if spans and spans[-1][1] == i:
                spans[-1] = (spans[-1][0], i + 1)
            else:
                spans.append((i, i + 1))
    return spans


# --- argument access -------------------------------------------------------------------------------------------

def _arg(args: dict, key: str, kind: type, default: Any = None) -> Any:
    value = args.get(key, default)
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok or (isinstance(value, str) and not value.strip()):
        raise BadArgs(f"argument {key!r} missing or not a {kind.__name__}")
    return value


def _word_list(args: dict) -> list[str]:
    ws = args.get("words")
    if not isinstance(ws, list) or not ws or not all(isinstance(w, str) and w.strip() for w in ws):
        raise BadArgs("argument 'words' missing or not a list of words")
    return ws


def _bounds(args: dict) -> tuple[Optional[int], Optional[int]]:
    lo, hi = args.get("min"), args.get("max")
    for v in (lo, hi):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise BadArgs("word bounds 'min'/'max' must be integers")
    if lo is None and hi is None:
        raise BadArgs("argument 'min' or 'max' needed")
    return lo, hi


def _bounds_text(lo: Optional[int], hi: Optional[int]) -> str:
    if lo is not None and hi is not None:
        return f"between {lo} and {hi}"
    return f"at least {lo}" if lo is not None else f"at most {hi}"


def _json_body(text: str) -> tuple[str, int]:
    """The response without surrounding whitespace and an optional ```json fence, and its offset in ``text``."""
    start = len(text) - len(text.lstrip())
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        nl = body.find("\n")
        if nl != -1:
            inner = body[nl + 1:-3]
            return inner.strip(), start + nl + 1 + (len(inner) - len(inner.lstrip()))
    return body, start


def _parse_json(text: str) -> tuple[Any, Optional[int]]:
    """(value, None) if the response is JSON, else (None, offset of the error in ``text``)."""
    body, offset = _json_body(text)
    try:
        return json.loads(body), None
    except json.JSONDecodeError as e:
        return None, offset + e.pos
    except (ValueError, RecursionError):
        return None, offset


# --- the constraints: check (text, args) -> Verdict, spans (text, args) -> spans, describe (args) -> plain words ---

def _count_verdict(n: int, want: int, unit: str) -> Verdict:
    return Verdict(float(n == want), f"found {n} {unit}, need exactly {want}")


def _no_comma(text, args):
    n = sum(c in COMMAS for c in text)
    return Verdict(float(n == 0), "no commas" if n == 0 else f"found {n} comma(s)")


def _lowercase(text, args):
    n = sum(c.isupper() for c in text)
    return Verdict(float(n == 0), "all lowercase" if n == 0 else f"found {n} capital letter(s)")


def _uppercase(text, args):
    n = sum(c.islower() for c in text)
    return Verdict(float(n == 0), "all capitals" if n == 0 else f"found {n} lower-case letter(s)")


def _word_count(text, args):
    lo, hi = _bounds(args)
    n = len(words(text))
    ok = (lo is None or n >= lo) and (hi is None or n <= hi)
    return Verdict(float(ok), f"{n} words; need {_bounds_text(lo, hi)}")


def _starts_with(text, args):
    phrase = _arg(args, "phrase", str)
    ok = text.lstrip().startswith(phrase)
    return Verdict(float(ok), f"{'starts' if ok else 'does not start'} with {phrase!r}")


def _ends_with(text, args):
    phrase = _arg(args, "phrase", str)
    ok = text.rstrip().endswith(phrase)
    return Verdict(float(ok), f"{'ends' if ok else 'does not end'} with {phrase!r}")


def _keyword(text, args):
    word, k = _arg(args, "word", str), _arg(args, "min_count", int, 1)
    n = len(occurrences(text, word))
    return Verdict(float(n >= k), f"{word!r} appears {n} time(s); need at least {k}")


def _forbidden(text, args):
    found = [w for w in _word_list(args) if occurrences(text, w)]
    return Verdict(float(not found), "no forbidden words" if not found else f"uses forbidden: {', '.join(found)}")


def _title(text, args):
    m = next((m for m in TITLE_RE.finditer(text) if m.group(1).strip()), None)
    return Verdict(float(m is not None), "no <<title>>" if m is None else f"title {m.group(0)!r}")


def _postscript(text, args):
    ok = bool(_ps_spans(text, args))
    return Verdict(float(ok), f"{'has' if ok else 'no'} line starting with {_arg(args, 'marker', str, 'P.S.')!r}")


def _ps_spans(text, args):
    marker = _arg(args, "marker", str, "P.S.")
    pattern = re.compile(r"^[ \t]*" + re.escape(marker) + r"[^\n]*", re.I | re.M)
    return [(m.start() + len(m.group(0)) - len(m.group(0).lstrip()), m.end()) for m in pattern.finditer(text)]


def _json_format(text, args):
    value, err = _parse_json(text)
    if err is not None:
        return Verdict(0.0, f"not valid JSON (error at character {err})")
    ok = isinstance(value, (dict, list))
    return Verdict(float(ok), "valid JSON" if ok else "JSON but not an object or array")


def _json_spans(text, args):
    value, err = _parse_json(text)
    if err is not None:
        return [(err, err + 1)] if err < len(text) else []
    body, offset = _json_body(text)
    return [(offset, offset + 1), (offset + len(body) - 1, offset + len(body))]


def _edge(text: str, phrase: str, at_end: bool) -> list[Span]:
    """The ``len(phrase)`` characters compared with the phrase, at the start or the end of the stripped text."""
    if at_end:
        end = len(text.rstrip())
        return [(max(0, end - len(phrase)), end)] if end else []
    start = len(text) - len(text.lstrip())
    return [(start, min(len(text), start + len(phrase)))] if start < len(text) else []


@dataclass(frozen=True)
class Constraint:
    """One IFEval-style constraint."""

    title: str
    """Short human title (the ``[Verifier: title]`` of its information block)."""
    check: Callable[[str, dict], Verdict]
    """(non-blank response, args) -> Verdict; may raise :class:`BadArgs`."""
    spans: Callable[[str, dict], list[Span]]
    """(response, args already validated by ``describe``) -> relevant spans."""
    describe: Callable[[dict], str]
    """args -> the constraint in plain words (the verifier information); raises :class:`BadArgs` on bad args."""


CONSTRAINTS: dict[str, Constraint] = {
    "no_comma": Constraint(
        "No commas", _no_comma, lambda t, a: char_runs(t, lambda c: c in COMMAS),
        lambda a: "The response must not contain any commas."),
    "lowercase": Constraint(
        "Lowercase only", _lowercase, lambda t, a: char_runs(t, str.isupper),
        lambda a: "The whole response must be in lowercase letters; no capital letters at all."),
    "uppercase": Constraint(
        "Capitals only", _uppercase, lambda t, a: char_runs(t, str.islower),
        lambda a: "The whole response must be in capital letters; no lower-case letters at all."),
    "word_count": Constraint(
        "Word count", _word_count, lambda t, a: words(t),
        lambda a: f"The response must have {_bounds_text(*_bounds(a))} words."),
    "sentence_count": Constraint(
        "Sentence count", lambda t, a: _count_verdict(len(sentence_ends(t)), _arg(a, "n", int), "sentences"),
        lambda t, a: sentence_ends(t),
        lambda a: f"The response must have exactly {_arg(a, 'n', int)} sentences, each ending with . ! or ?."),
    "bullet_count": Constraint(
        "Bullet points", lambda t, a: _count_verdict(len(BULLET_RE.findall(t)), _arg(a, "n", int), "bullet points"),
        lambda t, a: [m.span(1) for m in BULLET_RE.finditer(t)],
        lambda a: f"The response must have exactly {_arg(a, 'n', int)} bullet points, each a line starting with '* '."),
    "paragraph_count": Constraint(
        "Paragraphs", lambda t, a: _count_verdict(len(paragraphs(t)), _arg(a, "n", int), "paragraphs"),
        lambda t, a: [m.span() for m in SEPARATOR_RE.finditer(t)],
        lambda a: f"The response must have exactly {_arg(a, 'n', int)} paragraphs separated by lines of ***."),
    "keyword": Constraint(
        "Keyword", _keyword, lambda t, a: occurrences(t, _arg(a, "word", str)),
        lambda a: f"The word {_arg(a, 'word', str)!r} must appear at least {_arg(a, 'min_count', int, 1)} times."),
    "forbidden_words": Constraint(
        "Forbidden words", _forbidden, lambda t, a: sorted(s for w in _word_list(a) for s in occurrences(t, w)),
        lambda a: f"The response must not use the words: {', '.join(_word_list(a))}."),
    "starts_with": Constraint(
        "Starts with", _starts_with, lambda t, a: _edge(t, _arg(a, "phrase", str), at_end=False),
        lambda a: f"The response must start with the exact phrase {_arg(a, 'phrase', str)!r}."),
    "ends_with": Constraint(
        "Ends with", _ends_with, lambda t, a: _edge(t, _arg(a, "phrase", str), at_end=True),
        lambda a: f"The response must end with the exact phrase {_arg(a, 'phrase', str)!r}, nothing after it."),
    "title": Constraint(
        "Title", _title, lambda t, a: [m.span() for m in TITLE_RE.finditer(t) if m.group(1).strip()],
        lambda a: "The response must contain a title wrapped in double angular brackets, like <<my title>>."),
    "json_format": Constraint(
        "JSON format", _json_format, _json_spans,
        lambda a: "The entire response must be valid JSON (an object or array), optionally in a ```json fence."),
    "postscript": Constraint(
        "Postscript", _postscript, _ps_spans,
        lambda a: f"The response must end with a postscript: a line starting with "
                  f"{_arg(a, 'marker', str, 'P.S.')!r}."),
}
"""Constraint name -> Constraint; each becomes the verifier ``ifeval.<name>``."""


def constraint_args(example, name: str) -> dict:
    """The arguments of constraint ``name`` in ``example.meta["constraints"]``; raises BadArgs when absent."""
    items = (getattr(example, "meta", None) or {}).get("constraints")
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and item.get("name") == name:
            args = item.get("args", {})
            if isinstance(args, dict):
                return args
    raise BadArgs(f"the example has no arguments for constraint {name!r}")


def _constraint_values(verifier: Verifier, example) -> dict:
    """``args_fn`` of an ``ifeval.*`` verifier: its constraint's arguments in ``meta["constraints"]`` (``{}`` when
    the example has no entry for it)."""
    try:
        return dict(constraint_args(example, verifier.name.removeprefix("ifeval.")))
    except BadArgs:
        return {}


def _with_constraint(verifier: Verifier, example, values: dict):
    """``with_args_fn``: the example with ``values`` merged into this constraint's entry (as the default merges them
    into ``meta``), the entry added when absent, so a free prompt takes an argument-less constraint with
    ``with_args(example, {})`` (``lowercase`` then scores)."""
    from dataclasses import replace

    name = verifier.name.removeprefix("ifeval.")
    items = (example.meta or {}).get("constraints")
    kept = [i for i in (items if isinstance(items, list) else []) if not (isinstance(i, dict) and i.get("name") == name)]
    entry = {"name": name, "args": {**_constraint_values(verifier, example), **values}}
    return replace(example, meta={**example.meta, "constraints": kept + [entry]})


def _make_verifier(name: str, c: Constraint) -> Verifier:
    def check(response: str, example) -> Verdict:
        try:
            args = constraint_args(example, name)
            c.describe(args)  # validates the arguments even where the check ignores them
            if not isinstance(response, str) or not response.strip():
                return Verdict(0.0, "empty response")
            return c.check(response, args)
        except BadArgs as e:
            return Verdict(0.0, str(e))

    def info(example) -> str:
        try:
            return c.describe(constraint_args(example, name))
        except BadArgs as e:
            return f"(unavailable: {e})"

    def spans(response: str, example) -> Optional[list[Span]]:
        try:
            args = constraint_args(example, name)
            c.describe(args)
            return c.spans(response if isinstance(response, str) else "", args)
        except BadArgs:
            return None

    return Verifier(name=f"ifeval.{name}", task="instruction_following", title=c.title,
                    description=f"1 if the response follows the constraint '{c.title}' (arguments in the example's "
                                "meta), else 0; a blank response scores 0.",
                    info_fn=info, check_fn=check, spans_fn=spans, args_fn=_constraint_values,
                    with_args_fn=_with_constraint)


for _name, _c in CONSTRAINTS.items():
    register(_make_verifier(_name, _c), replace=True)
