"""Custom verifiers built in the app: the declarative form (regex must / must not match, keywords, JSON schema) of
:func:`mrtpo_viz.tasks.custom.build_declarative`. No user code runs (user regexes have a time budget).

They belong to the session that made them: their specs live in a ``gr.State`` (a dict name -> spec), never in the
process-wide registry, so one user's verifiers neither appear for nor overwrite another's. :func:`resolve` finds a
verifier by name in the session's specs first, then in the registry.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Optional

import gradio as gr

from ..tasks import Verifier, get_verifier, list_verifiers
from ..tasks.custom import DECLARATIVE_KINDS, MAX_KEYWORDS, MAX_PATTERN_CHARS, DeclarativeSpec, build_declarative
from .errors import readable
from .input_limits import limits

MAX_CUSTOM = 8
"""Custom verifiers per session."""
PREFIX = "custom."
MAX_KEYWORDS_CHARS = MAX_KEYWORDS * (MAX_PATTERN_CHARS + 2)
"""Characters of the form's comma-separated keywords field."""
MAX_SCHEMA_CHARS = 50_000
"""Characters of the form's JSON schema field."""
KIND_CHOICES = list(DECLARATIVE_KINDS)
"""The form's kinds, from the registry of declarative kinds."""


def spec_from_form(
    name: str, title: str, info: str, kind: str, pattern: str, keywords: str, schema: str, ignore_case: bool
) -> dict:
    """A validated spec (a plain dict, for the session state) from the form's fields; a ValueError says what is
    wrong (a bad regex, no keywords, a schema that is not JSON or uses unsupported keywords)."""
    name = (name or "").strip()
    name = name if name.startswith(PREFIX) else PREFIX + name
    if name == PREFIX or " " in name:
        raise ValueError("Give the custom verifier a name without spaces, e.g. custom.no_apology.")
    if kind not in DECLARATIVE_KINDS:
        raise ValueError(f"Pick a kind: one of {', '.join(DECLARATIVE_KINDS)}.")
    info = (info or "").strip()
    if not info or len(info) > limits().max_info_chars:
        raise ValueError(
            f"Say in the information what the verifier checks (1 to {limits().max_info_chars:,} "
            "characters): it is what the replay inserts into the prompt."
        )
    for label, text, cap in (
        ("keywords", keywords, MAX_KEYWORDS_CHARS),
        ("JSON schema", schema, MAX_SCHEMA_CHARS),
        ("pattern", pattern, MAX_PATTERN_CHARS),
    ):
        if len(text or "") > cap:  # before anything parses or splits it
            raise ValueError(f"The {label} field has {len(text):,} characters; at most {cap:,} here.")
    try:
        parsed = json.loads(schema) if kind == "json_schema" and (schema or "").strip() else {}
    except json.JSONDecodeError as e:
        raise ValueError(f"The JSON schema is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}.") from None
    spec = {
        "name": name,
        "title": (title or "").strip() or name,
        "info": info,
        "kind": kind,
        "pattern": pattern or "",
        "keywords": [k.strip() for k in (keywords or "").split(",") if k.strip()],
        "schema": parsed,
        "ignore_case": bool(ignore_case),
    }
    _build(json.dumps(spec, sort_keys=True))  # validates: DeclarativeSpec raises a readable ValueError
    return spec


@lru_cache(maxsize=64)  # each entry is bounded by the spec's caps (keywords, schema size)
def _build(spec_json: str) -> Verifier:
    return build_declarative(DeclarativeSpec(**json.loads(spec_json)))


def resolve(name: str, customs: Optional[dict] = None) -> Verifier:
    """The verifier called ``name``: the session's custom one, else the registry's (a KeyError lists the known)."""
    if customs and name in customs:
        return _build(json.dumps(customs[name], sort_keys=True))
    return get_verifier(name)


def task_choices(task: str, customs: Optional[dict] = None) -> list[str]:
    """The verifiers to choose from: the task family's, then the session's custom ones."""
    return list_verifiers(task) + [n for n in (customs or {}) if n not in list_verifiers(task)]


@readable
def add_custom(
    customs: Optional[dict],
    task: str,
    verifiers: list[str],
    name: str,
    title: str,
    info: str,
    kind: str,
    pattern: str,
    keywords: str,
    schema: str,
    ignore_case: bool,
):
    """Build a custom verifier from the form, keep it for this session and choose it.

    Returns (the session's specs, the verifier choice, a status line). A form that does not make a verifier (a bad
    regex, a schema that is not JSON, ...) is reported in the status line under the form, in place: nothing else
    changes."""
    customs = dict(customs or {})
    try:
        spec = spec_from_form(name, title, info, kind, pattern, keywords, schema, ignore_case)
    except ValueError as e:
        return gr.update(), gr.update(), f"**⚠ Not added:** {e}"
    if spec["name"] in list_verifiers():
        raise ValueError(f"{spec['name']} is a built-in verifier's name; choose another.")
    if spec["name"] not in customs and len(customs) >= MAX_CUSTOM:
        raise ValueError(f"At most {MAX_CUSTOM} custom verifiers per session; reuse a name to replace one.")
    customs[spec["name"]] = spec
    chosen = list(dict.fromkeys([*(verifiers or []), spec["name"]]))
    return (
        customs,
        gr.update(choices=task_choices(task, customs), value=chosen),
        f"Added `{spec['name']}` ({spec['kind']}) for this session; it is chosen above. Press **Replay**.",
    )
