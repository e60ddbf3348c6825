"""Readable errors: any exception of a handler becomes a message a user can act on, never a traceback.

On the app's page a failed request is a message in place (:func:`in_place`: its status line, or a warning toast),
never Gradio's error state; through the API it is a ``gr.Error`` with the same message (:func:`readable`)."""

from __future__ import annotations

import functools
import inspect
import logging
import re
from pathlib import Path

import gradio as gr

log = logging.getLogger(__name__)

EXPECTED = (ValueError, KeyError, FileNotFoundError, OSError, ImportError)
"""Errors of what a user gave (bad input, missing files, a missing extra): reported without a logged traceback."""


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
        if not isinstance(err, EXPECTED):
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


STATUS_ID = re.compile(r"-(status|note)$")
"""A handler's status line: the first of its outputs whose ``elem_id`` ends in ``-status`` or ``-note``."""


def on_page() -> bool:
    """Whether the request being served comes from the app's own page (Gradio's page sends ``x-gradio-user: app``;
    ``gradio_client`` sends ``api``, the MCP server ``mcp``); False outside a request."""
    try:
        from gradio.context import LocalContext

        request = LocalContext.request.get(None)
        headers = getattr(request, "headers", None) or {}
        return headers.get("x-gradio-user") == "app"
    except Exception:  # noqa: BLE001 -- Gradio's internals moved: report errors the API's way
        return False


def problem_line(message: str) -> str:
    """The status line of a request that could not be done (the results below, if any, are from before)."""
    return f"**⚠ {message}**"


def _status_index(outputs) -> int | None:
    return next((i for i, c in enumerate(outputs) if STATUS_ID.search(getattr(c, "elem_id", None) or "")), None)


def _in_place(message: str, n: int, status: int | None):
    """The outputs of a failed request on the page: the message on the status line (or a warning toast where the
    handler has none), every other output unchanged."""
    if status is None:
        gr.Warning(message)
    values = [problem_line(message) if i == status else gr.update() for i in range(n)]
    return values[0] if n == 1 else tuple(values)


def in_place(fn, outputs):
    """``fn`` (a handler, a function or a generator function) whose errors, on the app's page, become a message in
    place instead of Gradio's error state (an "Error" badge on every output, blanked plots, a dropdown that takes no
    clicks): the message goes on the status line among ``outputs`` (:data:`STATUS_ID`), else into a warning toast,
    and every other output keeps what it shows. The API and the MCP tools still get the error (``gr.Error``).
    :func:`mrtpo_viz.ui.build_app` applies this to every handler of the app, so a handler only raises."""
    n, status = len(outputs), _status_index(outputs)

    def message(err: Exception) -> str:
        if isinstance(err, gr.Error):
            return str(err.message)
        if not isinstance(err, EXPECTED):
            log.exception("handler %s failed", getattr(fn, "__name__", "fn"))
        return _message(err)

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except Exception as err:
                if not on_page():
                    raise
                yield _in_place(message(err), n, status)

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as err:
            if not on_page():
                raise
            return _in_place(message(err), n, status)

    return wrapper
