"""A chat template's implicit default system prompt, made explicit.

Some chat templates (SmolLM2's, Qwen2.5's) render a default system prompt when the first message is not a system
message, and drop it when there is one. Verifier information in the ``system`` position adds a system message, so
without care the "with" branches of a replay would lose the default while the "without" branch keeps it: the two
would differ by more than the information, the relevance would partly measure the lost default, and the shared
prompt prefix would shrink to nothing. :func:`with_default_system` puts the default in front as an explicit system
message, which renders byte-identically; the ``system`` position then merges the information into it
(``"<default>\\n\\n[Verifier: ...] ..."``). ``Policy.messages`` applies it, and both generation and the replay go
through ``Policy.messages``, so they see the same prompt. Templates without a default are left alone.
"""

from __future__ import annotations

from typing import Optional

# Invisible separators around the sentinels, so they cannot occur in a template's own text.
_SYSTEM = "\u2063SYSTEM\u2063"
_USER = "\u2063USER\u2063"


def _render(tokenizer, messages: list[dict]) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def default_system_prompt(tokenizer) -> Optional[str]:
    """The system prompt the chat template renders when a conversation has no system message; None if it renders
    none (or the template refuses system messages).

    Found by rendering ``[system, user]`` and ``[user]`` with sentinel contents: the default is what stands in the
    second rendering where the first has the system sentinel.
    """
    try:
        with_system = _render(tokenizer, [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": _USER}])
        plain = _render(tokenizer, [{"role": "user", "content": _USER}])
    except Exception:  # jinja raises TemplateError (or anything the template's raise_exception gives)
        return None
    if with_system.count(_SYSTEM) != 1:
        return None
    before, after = with_system.split(_SYSTEM)
    if len(plain) <= len(before) + len(after) or not (plain.startswith(before) and plain.endswith(after)):
        return None
    return plain[len(before) : len(plain) - len(after)]


def with_default_system(tokenizer, messages: list[dict], default: Optional[str]) -> list[dict]:
    """A copy of ``messages`` with ``default`` (from :func:`default_system_prompt`) as an explicit first system
    message, when there is a default and the conversation has no system message of its own.

    The result renders exactly as ``messages`` do (checked); if a template renders it differently, ``messages``
    come back unchanged.
    """
    msgs = [dict(m) for m in messages]
    if default is None or not msgs or msgs[0].get("role") == "system":
        return msgs
    explicit = [{"role": "system", "content": default}] + msgs
    return explicit if _render(tokenizer, explicit) == _render(tokenizer, msgs) else msgs
