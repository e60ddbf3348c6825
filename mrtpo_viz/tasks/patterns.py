"""Every user-supplied regular expression goes through here: one check before compiling, one bounded cache, and
matching that cannot hang or blow up the process.

Users supply patterns through custom verifiers (``regex_must``/``regex_must_not``, on the ``regex`` engine) and
through IFEval kwargs that the official checkers use as patterns (keywords, forbidden words, a custom postscript
marker, the section splitter: on Python's ``re``, as the official code), from the app, MCP, the API, rollout rows and
IFEval files alike.

- :func:`check_pattern` refuses, before any compiler sees it, a pattern that is too long, a counted repeat over
  ``MAX_REPEAT``, counted repeats whose product exceeds ``MAX_REPEAT_PRODUCT`` (an over-estimate of the nesting
  that no bracket or escape can hide) and fuzzy matching. The ``regex`` module expands counted repeats when it
  compiles: ``a{4294967294}`` needed gigabytes, ``(?:ab){100000000}`` 60 s and 5.9 GB.
- Compiling runs under ``COMPILE_BUDGET_S`` (both compilers are Python code, which
  :func:`mrtpo_viz.guards.time_budget` can stop) and the compiled patterns live only in :data:`CACHE`, bounded in
  entries and in estimated bytes; the libraries' own caches are bypassed (``regex.compile(..., cache_pattern=
  False)``, ``re``'s compiler called without ``re.compile``'s cache), so distinct patterns cannot accumulate.
- :func:`re_run` matches with ``re``'s exact semantics. ``re`` has no time limit, so a pattern runs in this process
  only when a bound on its backtracking over this text (:func:`backtrack_bound`) is small (``INLINE_STEPS``):
  plain and escaped words, classes, anchors, bounded repeats, repeats of one character class (bounded by the
  text's longest run of it), the official postscript and section patterns. Anything else runs in a worker process
  (:mod:`.pattern_worker`, the pool of the SQL sandbox) that is killed when it has not answered within
  ``MATCH_BUDGET_S``: a catastrophic pattern raises :class:`PatternTimeout`, the core is freed.
"""

from __future__ import annotations

import collections
import math
import re
import threading
from typing import Optional

import regex

from ..guards import BudgetExceeded, time_budget

try:  # Python >= 3.11
    from re import _compiler as _re_compiler, _constants as _C, _parser as _re_parser
except ImportError:  # pragma: no cover - Python 3.10
    import sre_compile as _re_compiler
    import sre_constants as _C
    import sre_parse as _re_parser

MAX_PATTERN_CHARS = 300
"""Longest user pattern (or custom-verifier keyword) accepted."""
MAX_REPEAT = 1000
"""Largest count of a counted repeat (``{m}``, ``{m,n}``) in a user pattern."""
MAX_REPEAT_PRODUCT = 100_000
"""Largest product of all counted repeats of a pattern: bounds what nesting them can expand to at compile time."""
COMPILE_BUDGET_S = 0.5
"""Time budget of compiling one user pattern (a checked pattern needs milliseconds)."""
MATCH_BUDGET_S = 0.5
"""Wall-clock budget of one ``re`` match in the worker (a sane pattern needs microseconds there; the round trip
about a millisecond)."""
INLINE_STEPS = 5_000_000
"""Largest static bound (text length x backtracking branches x pattern size) run in this process: sre runs some
10^7..10^8 such steps a second, so an inline match stays well under a second even at the bound."""
CACHE_ENTRIES = 256
"""Compiled patterns kept at most."""
CACHE_BYTES = 64 * 2**20
"""Estimated bytes of compiled patterns kept at most (see :func:`_weight`)."""
_COUNTED = regex.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")
_FUZZY = regex.compile(r"(?<!\\[pPNxXu])\{[\s\d+eids<=>,]*[eids][\s\d+eids<=>,]*\}")


class PatternTimeout(Exception):
    """A user pattern ran past its budget on this text (its worker was killed)."""


class PatternError(Exception):
    """A checked user pattern could not run on this text (its worker ran out of its memory limit)."""


def _repeat_product(pattern: str) -> int:
    product = 1
    for m in _COUNTED.finditer(pattern):
        count = max(int(n) for n in (m.group(1) or "0", m.group(2) or "0"))
        if count > MAX_REPEAT:
            raise ValueError(
                f"the repeat {m.group()[:40]} counts to {count:,}; at most {MAX_REPEAT:,} (use + or * for 'any number')"
            )
        product *= max(count, 1)
        if product > MAX_REPEAT_PRODUCT:
            raise ValueError(
                f"the pattern's counted repeats multiply to more than {MAX_REPEAT_PRODUCT:,} "
                "(nested or many {m,n}); use fewer or smaller counts"
            )
    return product


def check_pattern(pattern: str) -> None:
    """Raise ValueError for a user pattern that could be slow or huge to compile: too long, a counted repeat over
    ``MAX_REPEAT``, counted repeats whose product exceeds ``MAX_REPEAT_PRODUCT``, or fuzzy matching.

    Every ``{m,n}`` of the text counts, inside a character class or not: over-counting refuses a few harmless
    patterns, under-counting would let a bracket trick hide a bomb."""
    if not isinstance(pattern, str):
        raise ValueError(f"a pattern must be a string, got {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"the pattern has {len(pattern):,} characters; at most {MAX_PATTERN_CHARS}")
    if _FUZZY.search(pattern):
        raise ValueError("fuzzy matching ({e<=n} and similar) is not supported here; write the variants out")
    _repeat_product(pattern)


# --- the bounded cache ---------------------------------------------------------------------------------------------


class BoundedCache:
    """LRU of compiled patterns, bounded in entries and in estimated bytes; thread-safe."""

    def __init__(self, entries: int, max_bytes: int):
        self.entries, self.max_bytes = entries, max_bytes
        self.items: collections.OrderedDict = collections.OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return None if found is None else found[0]

    def put(self, key, value, weight: int) -> None:
        if weight > self.max_bytes:
            return
        with self.lock:
            if key in self.items:
                return
            self.items[key] = (value, weight)
            self.bytes += weight
            while len(self.items) > self.entries or self.bytes > self.max_bytes:
                _, (_, w) = self.items.popitem(last=False)
                self.bytes -= w

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.bytes = 0


CACHE = BoundedCache(CACHE_ENTRIES, CACHE_BYTES)
"""The only place compiled user patterns are kept."""


def _weight(engine: str, pattern: str, product: int) -> int:
    """Estimated bytes of a compiled pattern: ``re`` keeps its code linear in the pattern; ``regex`` expands every
    counted repeat, so its size grows with their product (measured on ``regex`` 2026.5: 25 MB for
    ``(?:a{100}){1000}``, 29 MB for ``(?:[ab]{100}c){1000}``, i.e. up to ~300 bytes per expanded item)."""
    return 1024 + 64 * len(pattern) + (300 * product if engine == "regex" else 0)


def _compile(engine: str, pattern: str, flags: int, checked: bool, budget_s: Optional[float] = None):
    key = (engine, pattern, flags)
    found = CACHE.get(key)
    if found is not None:
        return found
    product = 1
    if checked:
        check_pattern(pattern)
        product = _repeat_product(pattern)
    try:
        with time_budget(COMPILE_BUDGET_S if budget_s is None else budget_s, "compiling the pattern"):
            if engine == "regex":
                compiled = regex.compile(pattern, flags, cache_pattern=False)
            else:
                compiled = _re_compiler.compile(pattern, flags)
    except (re.error, regex.error) as e:
        raise ValueError(f"bad regex {pattern[:80]!r} ({e})") from None
    except (BudgetExceeded, RecursionError, MemoryError, OverflowError) as e:
        raise ValueError(f"the pattern cannot be compiled here ({e})") from None
    CACHE.put(key, compiled, _weight(engine, pattern, product))
    return compiled


def compile_regex(
    pattern: str, flags: int = 0, *, checked: bool = True, budget_s: Optional[float] = None
) -> regex.Pattern:
    """A user pattern on the ``regex`` engine (custom verifiers), checked, compiled under ``budget_s`` (default
    ``COMPILE_BUDGET_S``) and cached; ValueError says why not. ``checked=False`` only for ``regex.escape``'d text."""
    return _compile("regex", pattern, flags, checked, budget_s)


def compile_re(pattern: str, flags: int = 0) -> re.Pattern:
    """A user pattern on Python's ``re`` (IFEval kwargs), checked, compiled under the budget and cached."""
    return _compile("re", pattern, flags, True)


def pattern_problem(pattern: str, flags: int = 0) -> Optional[str]:
    """Why ``pattern`` cannot be used as an ``re`` pattern here (None when it can)."""
    try:
        compile_re(pattern, flags)
    except ValueError as e:
        return str(e)
    return None


# --- how much a pattern may backtrack ------------------------------------------------------------------------------

_SIMPLE = {_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN, _C.AT, _C.CATEGORY, _C.RANGE, _C.NEGATE}
_REPEATS = {_C.MAX_REPEAT, _C.MIN_REPEAT} | ({_C.POSSESSIVE_REPEAT} if hasattr(_C, "POSSESSIVE_REPEAT") else set())


_SINGLE = {_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN}


def _one_char(item) -> bool:
    return len(item) == 1 and item[0][0] in _SINGLE


def _longest_run(item, flags: int, text: str) -> int:
    """The longest run of characters of ``text`` that the one-character ``item`` matches: the most a repeat of it
    can take anywhere (found by ``re`` itself, in linear time)."""
    state = _re_parser.State()
    state.flags = flags
    run = _re_compiler.compile(_re_parser.SubPattern(state, [(_C.MAX_REPEAT, (1, _C.MAXREPEAT, item))]), flags)
    return max(map(len, run.findall(text)), default=0)


def _repeat_ways(av, flags: int, text: str, settles: bool) -> float:
    """Paths through one repeat: each choice of its count (capped by what the text can feed a one-character item),
    or 1 for a greedy one-character repeat whose continuation always succeeds at once (``settles``: it never
    gives a character back)."""
    lo, hi, item = av
    if settles:
        return 1.0
    hi = len(text) if hi == _C.MAXREPEAT else min(hi, len(text))
    if _one_char(item) and hi > 16:  # below that the run costs more to measure than it saves
        hi = min(hi, _longest_run(item, flags, text))
    inner = _branches(item, flags, text)
    if hi < lo:
        return 1.0
    if inner == 1:
        return hi - lo + 1.0
    return inner**hi if hi * math.log2(inner) < 200 else math.inf


def _branches(items, flags: int, text: str, top: bool = False) -> float:
    """Upper bound on the ways one match attempt can go through ``items`` on ``text`` (the number of backtracking
    paths); ``inf`` where it is not bounded by a small number. Read right to left at the top level, where the end
    of the pattern always succeeds: a greedy one-character repeat followed only by what always succeeds (repeats
    that may take nothing, or ``.*$`` under MULTILINE without DOTALL) never backtracks."""
    ways, free, line_end = 1.0, top, False
    for op, av in reversed(list(items)):
        if op is _C.AT and av is _C.AT_END and flags & re.M and not flags & re.S:
            free, line_end = False, True
            continue
        if op is _C.MAX_REPEAT and _one_char(av[2]):
            any_to_line_end = line_end and av[2][0][0] is _C.ANY
            ways *= _repeat_ways(av, flags, text, settles=free or any_to_line_end)
            free, line_end = (free or any_to_line_end) and av[0] == 0, False
            continue
        free = line_end = False
        if op in _SIMPLE:
            continue
        if op is _C.SUBPATTERN:  # (group, flags it adds, flags it removes, its items)
            ways *= _branches(av[-1], (flags | av[1]) & ~av[2], text)
        elif op is _C.BRANCH:
            ways *= sum(_branches(alt, flags, text) for alt in av[1])
        elif op in _REPEATS:
            ways *= _repeat_ways(av, flags, text, settles=False)
        elif op in (_C.ASSERT, _C.ASSERT_NOT):
            ways *= _branches(av[1], flags, text)
        elif getattr(_C, "ATOMIC_GROUP", None) is op:
            ways *= _branches(av, flags, text)
        else:  # back-references and conditionals: compare or choose per group, unbounded here
            return math.inf
        if ways > 1e18:
            return math.inf
    return ways


def backtrack_bound(pattern: str, flags: int, text: str) -> float:
    """A static bound on the steps of ``re`` over ``text``: start positions x backtracking paths per start x
    pattern length, plus the text once (what a repeat that never backtracks consumes over non-overlapping
    matches). Over-estimates (it ignores sre's literal-prefix shortcuts), never under-estimates for the constructs
    it counts; ``inf`` for what it does not."""
    parsed = _re_parser.parse(pattern, flags)
    n = len(text)
    flags = parsed.state.flags  # with the pattern's own global flags, e.g. (?i)
    return (n + 1) * _branches(list(parsed), flags, text, top=True) * max(len(pattern), 1) + n


# --- matching with re's semantics ----------------------------------------------------------------------------------

_POOL = None
_POOL_LOCK = threading.Lock()


def _pool():
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            import atexit

            from . import pattern_worker
            from .sandbox import MAX_WORKERS, _Pool

            _POOL = _Pool(MAX_WORKERS, pattern_worker.__file__)
            atexit.register(_POOL.close)
        return _POOL


def _inline(op: str, rx: re.Pattern, text: str):
    if op == "search":
        return rx.search(text) is not None
    if op == "count":
        return sum(1 for _ in rx.finditer(text))
    if op == "split":
        return len(rx.split(text))
    return [m.span() for m in rx.finditer(text) if m.end() > m.start()]


def re_run(op: str, pattern: str, text: str, flags: int = 0):
    """``re``'s answer for a checked user pattern on ``text``:

    - ``search``: whether ``re.search`` finds a match;
    - ``count``: ``len(re.findall(...))`` (the number of matches, empty ones included);
    - ``split``: ``len(re.split(...))`` (parts, plus captured groups as ``re.split`` returns them);
    - ``spans``: the spans of the non-empty matches of ``re.finditer``.

    Raises:
        ValueError: the pattern is refused or does not compile (the reason says which).
        PatternTimeout: the worker did not answer within ``MATCH_BUDGET_S`` (catastrophic backtracking).
        PatternError: the worker could not run it (its memory limit).
    """
    rx = compile_re(pattern, flags)
    if backtrack_bound(pattern, flags, text) <= INLINE_STEPS:
        return _inline(op, rx, text)
    answer = _pool().run({"op": op, "pattern": pattern, "flags": flags, "text": text}, MATCH_BUDGET_S)
    if answer is None:
        raise PatternTimeout(
            f"the pattern {pattern[:80]!r} took longer than {MATCH_BUDGET_S:g} s on this response and was stopped"
        )
    if "error" in answer:
        raise PatternError(f"the pattern {pattern[:80]!r} could not run on this response: {answer['error']}")
    result = answer["result"]
    return [tuple(s) for s in result] if op == "spans" else result
