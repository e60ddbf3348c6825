"""Chat templates rendered in a sandbox with limits: a checkpoint's template is untrusted code.

transformers renders templates in jinja's ``ImmutableSandboxedEnvironment``, which stops attribute escapes but not
work: ``{% for i in range(100000) %}{% for j in range(100000) %}`` runs for hours and ``{{ 'x' * 10**10 }}``
allocates 10 GB. :class:`LimitedEnvironment` is the same sandbox (the same options, filters and globals as
transformers' ``apply_chat_template``, so a template renders to the same text) with limits:

- time: the whole render (and the compile) runs under :func:`mrtpo_viz.guards.time_budget`, which stops loops;
- size: every value an operator, a filter, a method call, a macro argument, a namespace or ``~`` builds is checked
  before it is built where its size can be known (``'x' * n``, ``s.replace(a, b)``, ``center(n)``, joins) and
  after otherwise, against ``MAX_VALUE_CHARS``; numbers passed to any call are capped (``MAX_NUMBER``); ``**``
  is capped; ``str.format`` is refused (its width specs allocate); the rendered text is capped too;
- the template itself is capped at ``MAX_TEMPLATE_CHARS``.

A template that breaks a limit, or fails (``raise_exception``, an undefined attribute, a recursion), raises
:class:`TemplateLimitError`, a ``ValueError`` that says so.
"""

from __future__ import annotations

import functools
import json
import re
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
from jinja2.compiler import CodeGenerator
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

from ..guards import BudgetExceeded, time_budget

MAX_TEMPLATE_CHARS = 64 * 1024
"""Longest chat template accepted (real ones are a few KB)."""
MAX_VALUE_CHARS = 4_000_000
"""Largest string or list any expression of a template may build, and the longest rendered prompt."""
MAX_NUMBER = 1_000_000
"""Largest number passed to a function, filter or range (a width, a count)."""
RENDER_BUDGET_S = 2.0
"""Time budget of one render (a real template needs well under a millisecond)."""
_BIG_WIDTH = re.compile(r"\d{7,}")


class TemplateLimitError(ValueError):
    """A chat template that broke a limit or failed while rendering."""


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple, dict)) else 0


def _check_value(value: Any, what: str = "a value") -> Any:
    if _size(value) > MAX_VALUE_CHARS:
        raise TemplateLimitError(
            f"the chat template builds {what} of {_size(value):,} items; at most {MAX_VALUE_CHARS:,}"
        )
    return value


def _check_args(args, kwargs, what: str) -> None:
    for a in (*args, *kwargs.values()):
        if isinstance(a, int) and not isinstance(a, bool) and abs(a) > MAX_NUMBER:
            raise TemplateLimitError(
                f"the chat template passes {a:,} to {what}; numbers there are capped at {MAX_NUMBER:,}"
            )
        _check_value(a, f"an argument of {what}")


def _join_size(items, sep: str = "") -> int:
    items = list(items)
    return sum(len(str(x)) for x in items) + len(sep) * max(len(items) - 1, 0)


def _replace_size(s: str, old: str, new: str, count: int = -1) -> int:
    n = s.count(old) if old else len(s) + 1
    n = n if count is None or count < 0 else min(n, count)
    return len(s) + n * (len(new) - len(old))


def _precheck(obj: Any, args: tuple, kwargs: dict) -> None:
    """Sizes a call would build, known before it runs: str.replace, str.join, str.format (refused)."""
    owner, name = getattr(obj, "__self__", None), getattr(obj, "__name__", "")
    if getattr(obj, "__qualname__", "") in ("str.format", "str.format_map"):  # the sandbox wraps str.format
        raise TemplateLimitError("the chat template calls str.format, which is not available here")
    if not isinstance(owner, str):
        return
    if name == "replace" and len(args) >= 2 and all(isinstance(a, str) for a in args[:2]):
        if _replace_size(owner, args[0], args[1], args[2] if len(args) > 2 else -1) > MAX_VALUE_CHARS:
            raise TemplateLimitError("the chat template's replace() would build an oversized string")
    if name == "join" and args and _join_size(args[0], owner) > MAX_VALUE_CHARS:
        raise TemplateLimitError("the chat template's join() would build an oversized string")


def _limited_filter(name: str, fn):
    """A filter with its numeric arguments capped and its result size checked (``join``/``replace`` before)."""

    @functools.wraps(fn)
    def limited(*args, **kwargs):
        values = [
            a for a in args if not isinstance(a, (jinja2.Environment, jinja2.runtime.Context, jinja2.nodes.EvalContext))
        ]
        _check_args(values[1:], kwargs, f"the filter {name}")
        if (
            name == "join"
            and values
            and _join_size(values[0], str(values[1]) if len(values) > 1 else "") > MAX_VALUE_CHARS
        ):
            raise TemplateLimitError("the chat template's join would build an oversized string")
        if (
            name == "replace"
            and len(values) >= 3
            and all(isinstance(v, str) for v in values[:3])
            and _replace_size(*values[:3]) > MAX_VALUE_CHARS
        ):
            raise TemplateLimitError("the chat template's replace would build an oversized string")
        if name == "format" and values and isinstance(values[0], str) and _BIG_WIDTH.search(values[0]):
            raise TemplateLimitError("the chat template formats with a huge width")
        return _check_value(fn(*args, **kwargs), f"the result of the filter {name}")

    return limited


class _LimitedNamespace(Namespace):
    """``namespace()`` as transformers gives it (no underscore names), with the size of stored values checked."""

    def __init__(*args, **kwargs):
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for key, value in attrs.items():
            _LimitedNamespace._check(key, value)
        Namespace.__init__(self, attrs)

    def __setitem__(self, name, value):
        _LimitedNamespace._check(name, value)
        Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name, value):
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"a namespace cannot hold the underscore name {name!r}")
        _check_value(value, "a namespace value")


class _LimitedCodeGenerator(CodeGenerator):
    """Compiles ``a ~ b`` to a join whose result size is checked (jinja's own join has no hook)."""

    def visit_Concat(self, node, frame) -> None:
        self.write("environment.limited_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _Generation(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}`` (transformers' assistant-mask tag) renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    """transformers' ``tojson``: no HTML escaping, with indent, separators and key order as options."""
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _limited_range(*args):
    _check_args(args, {}, "range")
    return range(*args)


class LimitedEnvironment(ImmutableSandboxedEnvironment):
    """transformers' chat-template sandbox, with the size limits of this module (time: :func:`render`)."""

    code_generator_class = _LimitedCodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self):
        super().__init__(trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, jinja2.ext.loopcontrols])
        self.filters = {name: _limited_filter(name, fn) for name, fn in self.filters.items()}
        self.filters["tojson"] = _limited_filter("tojson", _tojson)
        self.globals.update(
            raise_exception=_raise_exception,
            range=_limited_range,
            namespace=_LimitedNamespace,
            dict=lambda *a, **k: _check_value(dict(*a, **k), "a dict"),
            strftime_now=lambda fmt: datetime.now().strftime(fmt),
        )

    def limited_concat(self, parts) -> str:
        parts = [str(p) for p in parts]
        if _join_size(parts) > MAX_VALUE_CHARS:
            raise TemplateLimitError(
                f"the chat template joins (~) a string of more than {MAX_VALUE_CHARS:,} characters"
            )
        return "".join(parts)

    def call_binop(self, context, operator, left, right):
        if operator == "*" and isinstance(left, int) != isinstance(right, int):
            seq, n = (right, left) if isinstance(left, int) else (left, right)
            if isinstance(n, int) and _size(seq) * max(n, 0) > MAX_VALUE_CHARS:
                raise TemplateLimitError("the chat template multiplies a string or list to an oversized value")
        if operator == "**" and isinstance(right, (int, float)) and abs(right) > 64:
            raise TemplateLimitError("the chat template raises to a power over 64")
        if operator == "+" and _size(left) + _size(right) > MAX_VALUE_CHARS:
            raise TemplateLimitError("the chat template adds up to an oversized value")
        if operator == "%" and isinstance(left, str):
            _check_args(right if isinstance(right, tuple) else (right,), {}, "the % operator")
            if _BIG_WIDTH.search(left):
                raise TemplateLimitError("the chat template formats with a huge width")
        return _check_value(super().call_binop(context, operator, left, right))

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (jinja's signature)
        _check_args(args, kwargs, getattr(__obj, "__name__", "a function"))
        _precheck(__obj, args, kwargs)
        return _check_value(super().call(__context, __obj, *args, **kwargs), "a call's result")


_ENV = LimitedEnvironment()


@functools.lru_cache(maxsize=32)
def compile_template(source: str) -> jinja2.Template:
    """The template compiled in the limited sandbox (cached per source)."""
    if not isinstance(source, str):
        raise TemplateLimitError(f"the chat template must be text, got {type(source).__name__}")
    if len(source) > MAX_TEMPLATE_CHARS:
        raise TemplateLimitError(f"the chat template has {len(source):,} characters; at most {MAX_TEMPLATE_CHARS:,}")
    try:
        with time_budget(RENDER_BUDGET_S, "compiling the chat template"):
            return _ENV.from_string(source)
    except (jinja2.TemplateError, BudgetExceeded, RecursionError, MemoryError) as e:
        raise TemplateLimitError(f"the chat template does not compile: {type(e).__name__}: {e}") from None


def render(source: str, messages: list[dict], *, add_generation_prompt: bool = True, **variables) -> str:
    """The chat ``messages`` rendered by the template ``source``, as ``apply_chat_template(..., tokenize=False)``
    renders them (``tools`` and ``documents`` None, the tokenizer's special tokens as ``variables``).

    Raises:
        TemplateLimitError: a limit was broken, or the template failed (its message says how).
    """
    template = compile_template(source)
    pieces, total = [], 0
    try:
        with time_budget(RENDER_BUDGET_S, "the chat template"):
            for piece in template.generate(
                messages=messages, tools=None, documents=None, add_generation_prompt=add_generation_prompt, **variables
            ):
                total += len(piece)
                if total > MAX_VALUE_CHARS:
                    raise TemplateLimitError(f"the chat template renders more than {MAX_VALUE_CHARS:,} characters")
                pieces.append(piece)
    except TemplateLimitError:
        raise
    except (
        jinja2.TemplateError,
        BudgetExceeded,
        RecursionError,
        MemoryError,
        TypeError,
        ValueError,
        AttributeError,
        KeyError,
        IndexError,
        OverflowError,
        ZeroDivisionError,
    ) as e:
        raise TemplateLimitError(f"the chat template failed: {type(e).__name__}: {e}") from None
    return "".join(pieces)
