"""The SQL lexer and fenced-block reader behind the text-to-SQL verifiers (:mod:`.sql`): tokens with their
character offsets, the response's fenced blocks, statements and each statement's main verb."""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

FENCE = "```"
_VERBS = frozenset(
    {"select", "insert", "update", "delete", "replace", "values", "create", "drop", "pragma", "attach", "alter"}
)
_TOKEN = re.compile(
    r"""
    (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>'(?:[^']|'')*(?:'|\Z))
  | (?P<ident>"(?:[^"]|"")*(?:"|\Z)|`[^`]*(?:`|\Z)|\[[^\]]*(?:\]|\Z))
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<punct>\S)
""",
    re.VERBOSE | re.DOTALL,
)


class Token(NamedTuple):
    kind: str
    text: str
    start: int
    end: int


def tokenize(sql: str, offset: int = 0) -> list[Token]:
    """SQL tokens with positions shifted by ``offset`` (comments included, whitespace dropped)."""
    return [Token(m.lastgroup, m.group(), m.start() + offset, m.end() + offset) for m in _TOKEN.finditer(sql)]


class Block(NamedTuple):
    """One fenced block of a response (positions are character offsets in the response)."""

    open_start: int
    """Position of the opening fence."""
    label: str
    """Its info string (``sql``, ``python``, or empty)."""
    body_start: int
    """Position of the text after the fence and its info string."""
    body: str
    close_start: Optional[int]
    """Position of the closing fence; None when the block runs unclosed to the end of the response."""


_LABEL = re.compile(r"([A-Za-z0-9_+-]*)[ \t]*(?=\n)|(sql)(?=\s)", re.IGNORECASE)
"""An info string: a word alone on the fence's line, or ``sql`` followed by the query on the same line."""


def fenced_blocks(response: str) -> list[Block]:
    """The fenced blocks in order; an odd last fence opens a block that runs to the end of the response."""
    marks = [m.start() for m in re.finditer(re.escape(FENCE), response)]
    blocks = []
    for open_at, close_at in zip(marks[0::2], marks[1::2] + [None]):
        end = len(response) if close_at is None else close_at
        m = _LABEL.match(response, open_at + len(FENCE), end)
        label, start = (m.group(1) or m.group(2) or "", m.end()) if m else ("", open_at + len(FENCE))
        blocks.append(Block(open_at, label, start, response[start:end], close_at))
    return blocks


def query_block(response: str) -> Optional[Block]:
    """The block whose query ``sql.execution`` runs: the first marked ``sql``, else the first of any kind.

    Lenient on purpose, so that a broken form (no label, no closing fence, a second block) costs ``sql.format``
    and not ``sql.execution``: the two rewards stay separate."""
    blocks = fenced_blocks(response)
    return next((b for b in blocks if b.label.lower() == "sql"), blocks[0] if blocks else None)


def statements(tokens: list[Token]) -> list[list[Token]]:
    """Split code tokens (comments dropped) on ``;`` into non-empty statements."""
    out: list[list[Token]] = [[]]
    for t in tokens:
        if t.kind == "comment":
            continue
        if t.text == ";":
            out.append([])
        else:
            out[-1].append(t)
    return [s for s in out if s]


def main_verb(stmt: list[Token]) -> Optional[Token]:
    """The verb that decides what a statement does: its first word, or after WITH the first top-level verb."""
    if not stmt or stmt[0].kind != "word":
        return None
    if stmt[0].text.lower() != "with":
        return stmt[0]
    depth = 0
    for t in stmt[1:]:
        depth += (t.text == "(") - (t.text == ")")
        if depth == 0 and t.kind == "word" and t.text.lower() in _VERBS:
            return t
    return None
