"""Readable errors: any exception of a handler becomes a ``gr.Error`` with a message a user can act on."""

from __future__ import annotations

import functools
import inspect
import logging
from pathlib import Path

import gradio as gr

log = logging.getLogger(__name__)


MAX_MESSAGE_CHARS = 500
"""Characters of an error message shown on the page."""


def _message(err: BaseException) -> str:
    """The message a user sees: the error's own text, cut to ``MAX_MESSAGE_CHARS``; an operating-system error
    names its file, never the folder (a server path says nothing a user can act on and tells an attacker much);
    a recursion error says what it means."""
    if isinstance(err, OSError) and (err.filename or err.filename2):
        text = f"{err.strerror or type(err).__name__} ({Path(str(err.filename or err.filename2)).name[:80]!r})"
    elif isinstance(err, RecursionError):
        text = "the input is nested too deeply to read"
    else:
        text = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
    text = str(text) or type(err).__name__
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 3] + "..."


def readable(fn):
    """Turn any exception of a handler into a ``gr.Error`` with a readable message (no traceback reaches users).

    Works for plain functions and generators; expected errors (bad input, missing files) keep their message,
    anything else is logged and reported by type and message.
    """

    def convert(err: Exception) -> gr.Error:
        if isinstance(err, gr.Error):
            return err
        if not isinstance(err, (ValueError, KeyError, FileNotFoundError, OSError, ImportError)):
            log.exception("handler %s failed", fn.__name__)
        return gr.Error(_message(err), print_exception=False)

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except Exception as err:
                raise convert(err) from None

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as err:
            raise convert(err) from None

    return wrapper
