"""How verifier information enters a prompt.

The replay and the bundled policy's training data both use these functions, so the policy sees information
blocks exactly as the replay inserts them.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

from ..names import INFO_POSITIONS, check_choice

DEFAULT_INFO_TEMPLATE = "\n\n[Verifier: {title}] {info}"
"""Appended to the last user message per verifier (``user_end``) or joined into a system message (``system``)."""
MAX_TEMPLATE_CHARS = 1000
"""Longest information template: it wraps a title and a text, and is rendered once per verifier and branch (a
10 MB template took 70 s and kept 2 GB), so it is checked before anything is parsed or rendered."""


def render_info(title: str, info: str, template: str = DEFAULT_INFO_TEMPLATE) -> str:
    """One information block; the template takes ``{title}`` and ``{info}`` (``{info}`` is required).

    A template typed by a user may hold only those two plain fields: no attribute or index access
    (``{info.__class__}``) and no format spec (``{info:>100000000}`` would build a 100 MB string).
    """
    if not isinstance(template, str) or len(template) > MAX_TEMPLATE_CHARS:
        size = f"{len(template):,} characters" if isinstance(template, str) else type(template).__name__
        raise ValueError(
            f"bad information template: {size}; it must be text of at most {MAX_TEMPLATE_CHARS:,} "
            "characters holding {title} and {info}"
        )
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(template) if name is not None]
        bad = [
            "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            for name, spec, conv in fields
            if name not in ("title", "info") or spec or conv
        ]
        if bad:
            raise ValueError(f"not allowed: {', '.join(bad)}")
    except (KeyError, IndexError, ValueError) as e:
        raise ValueError(f"bad information template {template!r}: use only {{title}} and {{info}} ({e})") from None
    if "info" not in {name for name, _, _ in fields}:  # such a block would replay no information at all
        raise ValueError(
            f"bad information template {template!r}: it needs the field {{info}}, where each "
            "verifier's information goes"
        )
    return template.format(title=title, info=info)


def with_info(
    messages: list[dict[str, str]],
    blocks: Sequence[tuple[str, str]],
    position: str = "user_end",
    template: str = DEFAULT_INFO_TEMPLATE,
) -> list[dict[str, str]]:
    """Return a copy of ``messages`` with the information blocks ``(title, info)`` inserted.

    ``user_end`` appends the rendered blocks to the last user message; ``system`` adds them (stripped of leading
    whitespace) as a system message in front, merged into an existing leading system message.
    """
    check_choice("info_position", position, INFO_POSITIONS)
    msgs = [dict(m) for m in messages]
    if not blocks:
        return msgs
    text = "".join(render_info(t, i, template) for t, i in blocks)
    if position == "user_end":
        idx = max((j for j, m in enumerate(msgs) if m.get("role") == "user"), default=None)
        if idx is None:
            raise ValueError("the prompt has no user message to append verifier information to")
        msgs[idx]["content"] = msgs[idx]["content"] + text
        return msgs
    text = text.lstrip()
    if msgs and msgs[0].get("role") == "system":
        msgs[0]["content"] = msgs[0]["content"] + "\n\n" + text
    else:
        msgs.insert(0, {"role": "system", "content": text})
    return msgs
