"""Caps on user input, so one request cannot hold the shared model for minutes: the operator settings
(``MRTPO_*``, :mod:`mrtpo_viz.settings`) read per request, and the checks that apply them."""

from __future__ import annotations

from ..settings import Settings, get_settings

MAX_VERIFIERS = 6
"""Information boxes in the relevance tab (verifiers replayed at once)."""


def rollout_limits():
    """The caps on an uploaded rollouts file and its rows, read from the operator settings now (MRTPO_MAX_UPLOAD_MB,
    MRTPO_MAX_ROLLOUTS, MRTPO_MAX_CHARS, MRTPO_MAX_TOKENS; at most ``MAX_VERIFIERS`` verifiers per row)."""
    return get_settings().row_limits(max_verifiers=MAX_VERIFIERS)


def limits() -> Settings:
    """The caps of this request: the operator settings (``MRTPO_*``), read now (not frozen at import)."""
    return get_settings()


def check_text(label: str, text: str | None, max_chars: int, required: bool = True) -> str:
    """``text`` if it is within ``max_chars``; a ValueError that names the field otherwise."""
    text = text or ""
    if required and not text.strip():
        raise ValueError(f"The {label} is empty: type or generate one first.")
    if len(text) > max_chars:
        raise ValueError(f"The {label} is too long: {len(text):,} characters, at most {max_chars:,} here.")
    return text


def check_token_count(policy, *texts: str) -> None:
    """Refuse a request whose texts (prompt, response, verifier information) exceed ``limits().max_tokens``."""
    n = sum(
        len(policy.tokenizer(t, add_special_tokens=False, split_special_tokens=True)["input_ids"]) for t in texts if t
    )  # typed specials count as the text they are replayed as
    cap = limits().max_tokens
    if n > cap:
        raise ValueError(
            f"The request has {n:,} tokens (prompt, response and verifier information); at most "
            f"{cap:,} are replayed here (MRTPO_MAX_TOKENS)."
        )
