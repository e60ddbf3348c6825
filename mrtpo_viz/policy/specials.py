"""Special tokens typed by a user are text; only the chat template's own specials are control tokens.

A chat template writes specials (``<|im_start|>``, ``<|im_end|>``) around the messages; a user can type the same
strings into a prompt, an information text or a rollout row. Tokenizing the rendered prompt would turn both into
control tokens, so a typed ``<|im_end|><|im_start|>system`` could end the user turn. Here:

1. :func:`mark` replaces every special typed in a message (and every typed marker character) with a marker
   ``\\ue000<n>\\ue001`` (private-use characters) before the template renders the messages;
2. :func:`encode` tokenizes a rendered text: where it holds no marker (nothing special was typed) it is the
   tokenizer's own call, so every prompt without typed specials keeps its ids exactly; otherwise the text is cut
   at the template's specials (each becomes its id, as the tokenizer would split it out first) and each piece
   between them, markers restored to the typed text, is tokenized with ``split_special_tokens=True``, the way the
   response is (:func:`mrtpo_viz.relevance.branches.tokenize_response`).

The pieces are tokenized the way the tokenizer tokenizes the text between two specials, so for byte-level BPE
(GPT-2, Llama 3, Qwen, the bundled policy) the ids equal a whole-text tokenization wherever nothing was typed; a
SentencePiece tokenizer that adds a prefix space only at the start of a text may differ right after a special on
that path, never on the ordinary one. Whitespace that a special strips (``lstrip``/``rstrip``) is stripped too.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..guards import unpaired_surrogate

MARK, END = "\ue000", "\ue001"
_MARKED = re.compile(f"{MARK}(\\d+){END}")


@lru_cache(maxsize=16)
def _tables(tokenizer) -> tuple[tuple[str, ...], re.Pattern, re.Pattern]:
    """(specials longest first, a pattern of the specials or the marker, a pattern of the specials)."""
    found = {t.content for t in getattr(tokenizer, "added_tokens_decoder", {}).values() if t.special}
    found |= set(getattr(tokenizer, "all_special_tokens", []))
    specials = tuple(sorted((s for s in found if s), key=len, reverse=True))
    alternatives = "|".join(map(re.escape, specials))
    typed = re.compile(f"{alternatives}|{MARK}" if specials else MARK)
    return specials, typed, re.compile(f"({alternatives})" if specials else "(?!)")


def mark(tokenizer, value: Any) -> Any:
    """``value`` (a string, or messages: lists and dicts of strings) with every typed special and marker marked."""
    specials, typed, _ = _tables(tokenizer)
    table = {s: i for i, s in enumerate(specials + (MARK,))}
    if isinstance(value, str):
        return typed.sub(lambda m: f"{MARK}{table[m.group()]}{END}", value)
    if isinstance(value, dict):
        return {k: mark(tokenizer, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mark(tokenizer, v) for v in value]
    return value


def restore(tokenizer, text: str) -> str:
    """The text with markers back to what was typed."""
    table = _tables(tokenizer)[0] + (MARK,)
    return _MARKED.sub(lambda m: table[int(m.group(1))] if int(m.group(1)) < len(table) else m.group(), text)


def _plain(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"] if text else []


def encode(tokenizer, text: str) -> list[int]:
    """Ids of a rendered text whose typed specials were :func:`mark`-ed: typed ones as text, the template's as
    control tokens. A text without markers is tokenized as the tokenizer does (same ids as before)."""
    bad = unpaired_surrogate(text)
    if bad >= 0:
        raise ValueError(
            f"the text holds an unpaired surrogate (\\u{ord(text[bad]):04x} at character {bad}), "
            "which is not valid Unicode: remove it"
        )
    if MARK not in text:
        return _plain(tokenizer, text)
    added = getattr(tokenizer, "added_tokens_decoder", {})
    flags = {t.content: t for t in added.values()}
    pieces = _tables(tokenizer)[2].split(text)  # [text, special, text, special, ..., text]
    ids: list[int] = []
    for i, piece in enumerate(pieces):
        if i % 2:
            ids.append(tokenizer.convert_tokens_to_ids(piece))
            continue
        before, after = (
            (flags.get(pieces[i - 1]) if i else None),
            (flags.get(pieces[i + 1]) if i + 1 < len(pieces) else None),
        )
        piece = piece.lstrip() if getattr(before, "rstrip", False) else piece
        piece = piece.rstrip() if getattr(after, "lstrip", False) else piece
        piece = restore(tokenizer, piece)
        if piece:
            ids += tokenizer(piece, add_special_tokens=False, split_special_tokens=True)["input_ids"]
    return ids
