"""Guards for work driven by untrusted input: a time budget for Python code, and depth and size checks of JSON-like
values. Standard library only; every layer may use them.

- :func:`time_budget` stops *Python-level* work (a chat template's loops, the ``regex`` module's pure-Python
  compiler) once its wall-clock budget has passed: a trace function checks the clock on every line and call event
  and raises :class:`BudgetExceeded` into the running code. It cannot stop one long C call (``'x' * 10**10``), so
  the callers also bound the sizes such a call could build (see ``policy/template_sandbox.py`` and ``tasks/custom.py``).
- :func:`nesting_depth` measures a parsed JSON value without recursion, so a 100,000-deep document (which Python's
  own ``json`` only parses up to its recursion limit) is measured, not crashed on.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Any
from collections.abc import Iterator

_CHECK_EVERY = 256
"""Trace events between clock reads (a clock read costs about as much as the event itself)."""


class BudgetExceeded(RuntimeError):
    """Python-level work that ran past its time budget (raised into that work by :func:`time_budget`)."""


@contextmanager
def time_budget(seconds: float, what: str = "the work") -> Iterator[None]:
    """Run the body under a wall-clock budget for this thread's Python code; nests (the inner budget counts).

    Raises:
        BudgetExceeded: the body's Python code still ran after ``seconds``.
    """
    deadline = time.monotonic() + seconds
    previous = sys.gettrace()
    events = [0]

    def tracer(frame, event, arg):
        events[0] += 1
        if events[0] % _CHECK_EVERY == 0 and time.monotonic() > deadline:
            raise BudgetExceeded(f"{what} ran past its time budget of {seconds:g} s and was stopped")
        return tracer

    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)


def nesting_depth(value: Any, limit: int) -> int:
    """Depth of nested lists and dicts in ``value`` (a scalar is 0), counting at most to ``limit + 1``.

    Iterative, so any depth is measured without recursion; stops early once ``limit`` is exceeded.
    """
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, tuple, dict)):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children if isinstance(child, (list, tuple, dict)))
    return deepest


def unpaired_surrogate(text: str) -> int:
    """Index of the first lone UTF-16 surrogate in ``text`` (JSON's ``"\\ud800"``), or -1. Such a string is not
    text: it cannot be encoded as UTF-8, so a tokenizer refuses it."""
    try:
        text.encode("utf-8")
        return -1
    except UnicodeEncodeError as e:
        return e.start
