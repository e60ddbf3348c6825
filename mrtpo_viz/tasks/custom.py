"""Custom verifiers: declarative verifiers built from a form (TRL reward functions: :mod:`.base`).

- :func:`build_declarative` makes a verifier from a :class:`DeclarativeSpec` (regex must / must not match, keyword
  list, JSON schema) without running user code. User regexes run on the ``regex`` engine (already required by
  ``transformers``) with a time budget, so a catastrophic pattern scores 0 with a reason instead of hanging.
- Compiling is guarded too: every user regex goes through :mod:`.patterns` (the same check, compile budget and
  bounded cache as every other user-supplied pattern): counted repeats are capped one by one and by their product,
  fuzzy matching is refused, and the compile itself runs under ``COMPILE_BUDGET_S``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal, Optional
from collections.abc import Callable

import regex

from .base import Example, Span, Verdict, Verifier, as_trl_reward, verifier_from_trl  # noqa: F401 (re-exported)
from .patterns import (  # noqa: F401 (MAX_REPEAT, MAX_REPEAT_PRODUCT, check_pattern re-exported)
    MAX_PATTERN_CHARS,
    MAX_REPEAT,
    MAX_REPEAT_PRODUCT,
    BoundedCache,
    check_pattern,
    compile_regex,
)


# ---------------------------------------------------------------------------------------------- declarative
Kind = Literal["regex_must", "regex_must_not", "keywords", "json_schema"]
COMPILE_BUDGET_S = 0.5
"""Time budget of compiling one user regex (a checked pattern needs milliseconds)."""
REGEX_TIMEOUT_S = 0.25
"""Time budget of one regex search over a response, enforced by the ``regex`` engine (on a busy machine the
wall time can be a few times longer). A sane pattern on a response of a few thousand characters needs microseconds."""


@dataclass(frozen=True)
class DeclarativeSpec:
    """A verifier described by data (what the UI form produces); no user code runs."""

    name: str
    """Dotted verifier name, e.g. ``custom.no_apology``."""
    title: str
    """Short human title."""
    info: str
    """Verifier information: what it checks, in plain words."""
    kind: Kind
    """``regex_must``: 1 iff the pattern matches; ``regex_must_not``: 1 iff it does not; ``keywords``: the
    fraction of keywords present (case-insensitive, whole words); ``json_schema``: 1 iff the response (or its one
    ```json block) is JSON that fits the schema."""
    pattern: str = ""
    """Regex for the regex kinds (``regex`` module syntax, as Python ``re``)."""
    keywords: tuple[str, ...] = ()
    """Words or phrases for ``keywords``."""
    schema: dict = field(default_factory=dict)
    """JSON schema for ``json_schema``; keywords supported: type, properties, required, enum, items,
    additionalProperties (bool), minimum, maximum, minItems, maxItems."""
    ignore_case: bool = False
    """Regex kinds: match case-insensitively."""

    def __post_init__(self):
        object.__setattr__(self, "keywords", tuple(self.keywords))  # a form gives a list
        if self.kind not in DECLARATIVE_KINDS:
            raise ValueError(f"unknown declarative kind {self.kind!r}; choose one of {list(DECLARATIVE_KINDS)}")
        DECLARATIVE_KINDS[self.kind].validate(self)


def compile_user_regex(pattern: str, flags: int = 0) -> regex.Pattern:
    """A user regex checked by :func:`.patterns.check_pattern` and compiled under ``COMPILE_BUDGET_S``; ValueError
    says why not."""
    return compile_regex(pattern, flags, budget_s=COMPILE_BUDGET_S)


def _compile(spec: DeclarativeSpec) -> regex.Pattern:
    if not spec.pattern:
        raise ValueError(f"verifier {spec.name!r}: a {spec.kind} verifier needs a pattern")
    try:
        return compile_user_regex(spec.pattern, regex.IGNORECASE if spec.ignore_case else 0)
    except ValueError as e:
        raise ValueError(f"verifier {spec.name!r}: {e}") from None


_MATCH_CACHE = BoundedCache(256, 16 * 2**20)
"""Recent match spans, keyed by the pattern's text and flags (not the compiled object, which this cache must not
keep alive) and the response; bounded in entries and in bytes (the responses' lengths count)."""


def _matches(pattern: regex.Pattern, text: str) -> Optional[tuple[Span, ...]]:
    """Spans of all matches (empty matches included), or None when the search ran past the time budget.

    Cached, so that the spans of a response just checked cost no second search (nor a second timeout)."""
    key = (pattern.pattern, pattern.flags, text)
    found = _MATCH_CACHE.get(key)
    if found is not None:
        return found[0]
    try:
        spans = tuple(m.span() for m in pattern.finditer(text, timeout=REGEX_TIMEOUT_S))
    except TimeoutError:
        spans = None
    _MATCH_CACHE.put(key, (spans,), 256 + 4 * (len(text) + len(pattern.pattern)) + 80 * len(spans or ()))
    return spans


_TIMEOUT_REASON = f"the pattern took longer than {REGEX_TIMEOUT_S:g} s on this response (catastrophic regex?)"


def _regex_check(spec: DeclarativeSpec, must: bool) -> Callable[[str, Example], Verdict]:
    pattern = _compile(spec)

    def check(response: str, example: Example) -> Verdict:
        spans = _matches(pattern, response)
        if spans is None:
            return Verdict(0.0, _TIMEOUT_REASON)
        if bool(spans) == must:
            return Verdict(1.0, f"the pattern {'matches' if must else 'does not match'}")
        return Verdict(0.0, "the pattern does not match" if must else f"the pattern matches {len(spans)} time(s)")

    return check


def _regex_spans(spec: DeclarativeSpec) -> Callable[[str, Example], Optional[list[Span]]]:
    """The matches (non-empty ones), which decide the verdict either way; None on timeout."""
    pattern = _compile(spec)

    def spans(response: str, example: Example) -> Optional[list[Span]]:
        found = _matches(pattern, response)
        return None if found is None else [s for s in found if s[1] > s[0]]

    return spans


def _keyword_patterns(spec: DeclarativeSpec) -> list[regex.Pattern]:
    if len(spec.keywords) > MAX_KEYWORDS:  # before anything is built for them
        raise ValueError(f"verifier {spec.name!r}: {len(spec.keywords):,} keywords; at most {MAX_KEYWORDS}")
    if not spec.keywords or any(
        not isinstance(k, str) or not k.strip() or len(k) > MAX_PATTERN_CHARS for k in spec.keywords
    ):
        raise ValueError(
            f"verifier {spec.name!r}: keywords must be a non-empty list of non-empty words "
            f"(each at most {MAX_PATTERN_CHARS} characters)"
        )
    return [
        compile_regex(rf"(?<!\w){regex.escape(k.strip())}(?!\w)", regex.IGNORECASE, checked=False)
        for k in spec.keywords
    ]


def _keywords_check(spec: DeclarativeSpec) -> Callable[[str, Example], Verdict]:
    patterns = _keyword_patterns(spec)

    def check(response: str, example: Example) -> Verdict:
        missing = [k for k, p in zip(spec.keywords, patterns) if not p.search(response)]
        found = len(patterns) - len(missing)
        why = f"{found} of {len(patterns)} keywords present" + (f"; missing: {', '.join(missing)}" if missing else "")
        return Verdict(found / len(patterns), short(why))

    return check


def _keywords_spans(spec: DeclarativeSpec) -> Callable[[str, Example], list[Span]]:
    patterns = _keyword_patterns(spec)
    return lambda response, example: sorted(m.span() for p in patterns for m in p.finditer(response))


# JSON schema: a small, dependency-free subset, checked by hand (jsonschema is not a dependency of this package).
_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and v.is_integer(),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
SCHEMA_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "enum",
        "items",
        "additionalProperties",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "title",
        "description",
        "$schema",
    }
)


MAX_KEYWORDS = 100
"""Keywords of one ``keywords`` verifier."""
MAX_SCHEMA_NODES = 500
"""Sub-schemas of one JSON schema (itself, each property's, each ``items``)."""
MAX_SCHEMA_DEPTH = 10
"""Nesting of sub-schemas in one JSON schema."""
MAX_ENUM = 100
"""Values of one ``enum``."""
MAX_ENUM_VALUE_CHARS = 1000
"""Characters of one ``enum`` value, as JSON."""
MAX_REASON_CHARS = 300
"""Characters of a verdict's reason."""


def short(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters (with "..." where cut)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_schema(schema: Any, path: str = "$") -> None:
    """Raise ValueError if ``schema`` uses keywords or types outside the supported subset, a keyword's value has the
    wrong type, or it is larger than the caps (:data:`MAX_SCHEMA_NODES` sub-schemas, :data:`MAX_SCHEMA_DEPTH`
    levels, :data:`MAX_ENUM` values per enum). Iterative: any nesting is measured without recursion."""
    stack, nodes = [(schema, path, 0)], 0
    while stack:
        node, where, depth = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            raise ValueError(f"the schema has more than {MAX_SCHEMA_NODES} sub-schemas; at most {MAX_SCHEMA_NODES}")
        if depth > MAX_SCHEMA_DEPTH:
            raise ValueError(
                f"the schema nests sub-schemas deeper than {MAX_SCHEMA_DEPTH} levels (at {short(where, 80)})"
            )
        _check_node(node, short(where, 80))
        stack.extend((sub, f"{where}.{key}", depth + 1) for key, sub in node.get("properties", {}).items())
        if "items" in node:
            stack.append((node["items"], f"{where}[]", depth + 1))


def _check_node(schema: Any, path: str) -> None:
    """One sub-schema's keywords and the types of their values (not its children)."""
    if not isinstance(schema, dict):
        raise ValueError(f"schema at {path} must be an object, got {type(schema).__name__}")
    unknown = set(schema) - SCHEMA_KEYWORDS
    if unknown:
        raise ValueError(
            f"schema at {path} uses unsupported keywords {short(str(sorted(unknown)), 120)}; "
            f"supported: {sorted(SCHEMA_KEYWORDS)}"
        )
    types = schema.get("type", [])
    if not isinstance(types, (str, list)):
        raise ValueError(f"schema at {path}: 'type' must be a type name or a list of them")
    for t in [types] if isinstance(types, str) else types:
        if not isinstance(t, str) or t not in _JSON_TYPES:
            raise ValueError(f"schema at {path}: unknown type {short(repr(t), 60)}; known: {list(_JSON_TYPES)}")
    expected = {
        "properties": (dict, "an object of sub-schemas"),
        "required": (list, "a list of key names"),
        "enum": (list, "a list of values"),
        "additionalProperties": (bool, "true or false"),
        "minimum": ((int, float), "a number"),
        "maximum": ((int, float), "a number"),
        "minItems": (int, "a whole number"),
        "maxItems": (int, "a whole number"),
        "title": (str, "text"),
        "description": (str, "text"),
        "$schema": (str, "text"),
    }
    for key, (kind, what) in expected.items():
        if key in schema and (not isinstance(schema[key], kind) or isinstance(schema[key], bool) and kind is not bool):
            raise ValueError(f"schema at {path}: {key!r} must be {what}, got {type(schema[key]).__name__}")
    if not all(isinstance(k, str) for k in schema.get("required", [])):
        raise ValueError(f"schema at {path}: 'required' must list key names (strings)")
    enum = schema.get("enum", [])
    if len(enum) > MAX_ENUM:
        raise ValueError(f"schema at {path}: 'enum' has {len(enum):,} values; at most {MAX_ENUM}")
    if any(len(json.dumps(v)) > MAX_ENUM_VALUE_CHARS for v in enum):
        raise ValueError(f"schema at {path}: an 'enum' value is longer than {MAX_ENUM_VALUE_CHARS} characters")


def schema_errors(value: Any, schema: dict, path: str = "$") -> list[str]:
    """Why ``value`` does not fit ``schema`` (empty list when it does)."""
    types = schema.get("type")
    if types is not None and not any(_JSON_TYPES[t](value) for t in ([types] if isinstance(types, str) else types)):
        return [f"{path} should be of type {types}, got {json.dumps(value)[:40]}"]
    if "enum" in schema and value not in schema["enum"]:
        return [short(f"{path} should be one of {json.dumps(schema['enum'])}", 200) + f", got {json.dumps(value)[:40]}"]
    errors = []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        errors += [f"{path} should be >= {schema['minimum']}"] if value < schema.get("minimum", -math.inf) else []
        errors += [f"{path} should be <= {schema['maximum']}"] if value > schema.get("maximum", math.inf) else []
    if isinstance(value, dict):
        errors += [f"{path} is missing the key {k!r}" for k in schema.get("required", []) if k not in value]
        props = schema.get("properties", {})
        if schema.get("additionalProperties", True) is False:
            errors += [f"{path} has an unexpected key {k!r}" for k in value if k not in props]
        for k, sub in props.items():
            errors += schema_errors(value[k], sub, f"{path}.{k}") if k in value else []
    if isinstance(value, list):
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", math.inf):
            errors.append(
                f"{path} has {len(value)} items, outside [{schema.get('minItems', 0)}, {schema.get('maxItems', 'inf')}]"
            )
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{path}[{i}]") if "items" in schema else []
    return errors


_JSON_BLOCK = regex.compile(r"```(?:json)?[ \t]*\n(.*?)```", regex.DOTALL | regex.IGNORECASE)


def json_text(response: str) -> tuple[str, int]:
    """The JSON part of a response: the body of its one ```json block, else the whole stripped response;
    returned with its start offset."""
    blocks = list(_JSON_BLOCK.finditer(response))
    if len(blocks) == 1:
        body = blocks[0].group(1)
        return body.strip(), blocks[0].start(1) + len(body) - len(body.lstrip())
    return response.strip(), len(response) - len(response.lstrip())


def _json_check(spec: DeclarativeSpec) -> Callable[[str, Example], Verdict]:
    check_schema(spec.schema)

    def check(response: str, example: Example) -> Verdict:
        text, _ = json_text(response)
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as e:
            return Verdict(0.0, f"not valid JSON ({getattr(e, 'msg', 'nested too deeply')})")
        errors = schema_errors(value, spec.schema)
        return Verdict(0.0, short("; ".join(errors[:3]))) if errors else Verdict(1.0, "valid JSON that fits the schema")

    return check


def _schema_keys(schema: dict) -> set[str]:
    keys = set(schema.get("properties", {})) | set(schema.get("required", []))
    for sub in list(schema.get("properties", {}).values()) + ([schema["items"]] if "items" in schema else []):
        keys |= _schema_keys(sub)
    return keys


def _json_spans(spec: DeclarativeSpec) -> Callable[[str, Example], list[Span]]:
    """The quoted keys the schema names, where they occur in the JSON part; the whole JSON part if none does."""
    keys = _schema_keys(spec.schema)

    def spans(response: str, example: Example) -> list[Span]:
        text, start = json_text(response)
        found = sorted(
            m.span()
            for k in keys
            for m in compile_regex(regex.escape(json.dumps(k)), checked=False).finditer(response)
            if start <= m.start() < start + len(text)
        )
        return found or ([(start, start + len(text))] if text else [])

    return spans


@dataclass(frozen=True)
class _KindImpl:
    """How one declarative kind checks and localizes; building either validates the spec."""

    check: Callable[[DeclarativeSpec], Callable[[str, Example], Verdict]]
    spans: Callable[[DeclarativeSpec], Callable[[str, Example], Optional[list[Span]]]]

    def validate(self, spec: DeclarativeSpec) -> None:
        self.check(spec)


DECLARATIVE_KINDS: dict[str, _KindImpl] = {
    "regex_must": _KindImpl(lambda s: _regex_check(s, must=True), _regex_spans),
    "regex_must_not": _KindImpl(lambda s: _regex_check(s, must=False), _regex_spans),
    "keywords": _KindImpl(_keywords_check, _keywords_spans),
    "json_schema": _KindImpl(_json_check, _json_spans),
}
"""Kind -> implementation; the UI form's choices come from ``list(DECLARATIVE_KINDS)``."""


def build_declarative(spec: DeclarativeSpec) -> Verifier:
    """A verifier (task ``custom``) from a declarative spec."""
    impl = DECLARATIVE_KINDS[spec.kind]
    return Verifier(
        name=spec.name,
        task="custom",
        title=spec.title,
        description=f"Declarative {spec.kind} verifier: {spec.info}",
        info_fn=lambda example: spec.info,
        check_fn=impl.check(spec),
        spans_fn=impl.spans(spec),
    )
