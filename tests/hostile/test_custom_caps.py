"""Threat: custom verifiers and IFEval kwargs sized to hold the shared model queue or the process's memory (100,000
keywords, a 200,000-property schema, a million-value enum, 100,000 forbidden words), and schemas of the wrong
shape that were accepted and failed later. Each is refused when added, before anything is built, in a short
message."""

import json
import re

import gradio as gr
import pytest

from mrtpo_viz.tasks import Example, get_verifier
from mrtpo_viz.tasks.custom import DeclarativeSpec, build_declarative
from mrtpo_viz.ui import custom_verifiers

from .bounded import bounded


def spec(**kw) -> dict:
    base = dict(name="custom.x", title="x", info="what it checks", kind="keywords")
    return {**base, **kw}


def add(kind: str, keywords: str = "", schema: str = ""):
    return custom_verifiers.add_custom(
        {}, "instruction_following", [], "custom.x", "x", "what it checks", kind, "", keywords, schema, False
    )


def refused(says: str, kind: str, **fields) -> None:
    """The form is refused in place: its status line says why and the session's verifiers stay as they were."""
    customs, choice, status = add(kind, **fields)
    assert customs == gr.update() and choice == gr.update()
    assert status.startswith("**⚠ Not added:**") and re.search(says, status), status
    assert len(status) < 400


def test_100000_keywords_are_refused_before_any_is_compiled():
    """The threat: 25 s to add and +1 GB, kept in a process-wide cache."""
    words = [f"word{i}" for i in range(100_000)]
    with bounded(), pytest.raises(ValueError, match=r"100,000 keywords; at most 100"):
        DeclarativeSpec(**spec(keywords=words))
    with bounded():
        refused(r"keywords field has [\d,]+ characters; at most 30,200", "keywords", keywords=", ".join(words))


def test_a_200000_property_schema_is_refused_when_added():
    """The threat: 16 s of the shared model queue on every replay."""
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(200_000)}}
    with bounded(), pytest.raises(ValueError, match="more than 500 sub-schemas"):
        DeclarativeSpec(**spec(kind="json_schema", schema=schema))
    with bounded():
        refused(r"JSON schema field has [\d,]+ characters; at most 50,000", "json_schema", schema=json.dumps(schema))


def test_a_deep_schema_and_a_huge_enum_are_refused_in_short_messages():
    deep: dict = {}
    node = deep
    for _ in range(50):
        node["items"] = {}
        node = node["items"]
    with bounded(), pytest.raises(ValueError, match="deeper than 10 levels") as err:
        DeclarativeSpec(**spec(kind="json_schema", schema=deep))
    assert len(str(err.value)) < 300
    with bounded(), pytest.raises(ValueError, match=r"'enum' has 1,000,000 values; at most 100") as err:
        DeclarativeSpec(**spec(kind="json_schema", schema={"enum": list(range(1_000_000))}))
    assert len(str(err.value)) < 300  # not a 7.9 MB reason


@pytest.mark.parametrize(
    "schema, says",
    [
        ({"properties": [1, 2]}, "'properties' must be an object of sub-schemas, got list"),
        ({"enum": 5}, "'enum' must be a list of values, got int"),  # refused when added, not blamed on "its meta" later
        ({"required": "a"}, "'required' must be a list of key names"),
        ({"type": 7}, "'type' must be a type name or a list of them"),
        ({"minimum": "1"}, "'minimum' must be a number"),
        ({"additionalProperties": {}}, "'additionalProperties' must be true or false"),
        ({"items": [1]}, r"schema at \$\[\] must be an object"),
    ],
)
def test_schema_types_are_checked_when_added(schema, says):
    with bounded():
        refused(says, "json_schema", schema=json.dumps(schema))


def test_reasons_stay_short():
    words = [f"{i:03d}" + "k" * 40 for i in range(100)]  # 100 missing keywords: a 4,400-character list
    v = build_declarative(DeclarativeSpec(**spec(keywords=words)))
    with bounded():
        verdict = v.check("nothing here", Example(task="custom", prompt="p"))
    assert verdict.score == 0 and len(verdict.reason) <= 300 and verdict.reason.endswith("...")
    v = build_declarative(DeclarativeSpec(**spec(kind="json_schema", schema={"enum": ["v" * 900] * 100})))
    verdict = v.check('"other"', Example(task="custom", prompt="p"))
    assert verdict.score == 0 and len(verdict.reason) <= 300


def test_100000_forbidden_words_are_refused_before_any_is_compiled():
    """The threat: 100,000 forbidden words (1 MB) holding the shared model queue for tens of seconds."""
    ex = Example(
        task="instruction_following",
        prompt="p",
        meta={
            "constraints": [
                {"id": "keywords:forbidden_words", "kwargs": {"forbidden_words": [f"w{i}" for i in range(100_000)]}}
            ]
        },
    )
    with bounded():
        verdict = get_verifier("ifeval.forbidden_words").check("a response", ex)
    assert verdict.reason == (
        "needs input: keywords:forbidden_words: kwarg 'forbidden_words' lists 100,000 items; at most 100"
    )


def test_the_build_cache_holds_bounded_entries():
    """Specs are cached by their JSON; the caps bound each entry and the cache holds at most 64."""
    assert custom_verifiers._build.cache_info().maxsize == 64
