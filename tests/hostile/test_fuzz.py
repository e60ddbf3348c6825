"""Property-based fuzzing: every registered verifier answers any text with a Verdict (score in [0, 1] or NaN, a str
reason) and never raises; the rollouts JSONL reader turns any bytes into rows and problems and never raises."""

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mrtpo_viz.relevance.scoring import read_rollouts
from mrtpo_viz.names import TASKS
from mrtpo_viz.tasks.example_sources import load_examples
from mrtpo_viz.tasks import Verdict, get_verifier, list_verifiers
from mrtpo_viz.tasks.custom import DeclarativeSpec, build_declarative

pytestmark = pytest.mark.usefixtures("sample_data_unchanged")
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FRAGMENTS = [
    "```sql\n",
    "```",
    "```json\n",
    "<tool_call>",
    "</tool_call>",
    "{",
    "}",
    '"name": ',
    '"arguments": ',
    "SELECT ",
    " FROM ",
    "WITH RECURSIVE ",
    ";",
    ",",
    "\n\n",
    "- ",
    "* ",
    "P.S.",
    "\x00",
    "\u202e",
    "😀",
    "DROP TABLE orders",
    "ATTACH '/tmp/x' AS y",
    "\\",
    "'",
    '"',
    "null",
    "[",
    "]",
    "1e999",
    "-0",
]
texts = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(FRAGMENTS)), max_size=30).map("".join)
"""Random text mixed with the pieces that the verifiers parse (fences, tags, JSON, SQL, bullets)."""


def _example_for(task: str):
    return load_examples(task, split="test")[0]


VERIFIER_CASES = [(name, task) for task in TASKS for name in list_verifiers(task)]


def _check_verdict(verdict) -> None:
    assert isinstance(verdict, Verdict) and isinstance(verdict.reason, str)
    assert math.isnan(verdict.score) or 0.0 <= verdict.score <= 1.0


@pytest.mark.parametrize("name, task", VERIFIER_CASES, ids=[n for n, _ in VERIFIER_CASES])
def test_every_registered_verifier_answers_any_text(name, task):
    verifier, example = get_verifier(name), _example_for(task)

    @FUZZ
    @given(texts)
    def check(text):
        _check_verdict(verifier.check(text, example))
        spans = verifier.relevant_spans(text, example)
        assert spans is None or all(0 <= a <= b <= len(text) for a, b in spans)

    check()


DECLARATIVE = [
    DeclarativeSpec(name="custom.regex", title="r", info="i", kind="regex_must", pattern=r"(\w|\w\w)+$"),
    DeclarativeSpec(name="custom.not", title="n", info="i", kind="regex_must_not", pattern=r"sorry|apolog"),
    DeclarativeSpec(name="custom.kw", title="k", info="i", kind="keywords", keywords=("Paris", "a.b", "(x")),
    DeclarativeSpec(
        name="custom.json",
        title="j",
        info="i",
        kind="json_schema",
        schema={"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
    ),
]


@pytest.mark.parametrize("spec", DECLARATIVE, ids=[s.kind for s in DECLARATIVE])
def test_declarative_verifiers_answer_any_text(spec):
    verifier, example = build_declarative(spec), _example_for(TASKS[0])

    @FUZZ
    @given(texts)
    def check(text):
        _check_verdict(verifier.check(text, example))

    check()


ROW_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
ROWS = st.dictionaries(
    st.sampled_from(["task", "prompt", "response", "meta", "verifiers", "id", "x"]), ROW_VALUES, max_size=6
)
LINES = st.one_of(ROWS.map(json.dumps).map(str.encode), st.binary(max_size=60))


@FUZZ
@given(st.lists(LINES, max_size=12), st.sampled_from([b"\n", b"\r\n", b"\r"]))
def test_jsonl_reader_turns_any_bytes_into_rows_and_problems(lines, newline):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.jsonl"
        path.write_bytes(newline.join(lines))
        rows, problems = read_rollouts(path)
    assert all(isinstance(r["id"], str) and isinstance(r["response"], str) and r["response"] for r in rows)
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(isinstance(n, int) and n >= 1 and isinstance(msg, str) and msg for n, msg in problems)
