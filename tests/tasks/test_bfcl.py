"""BFCL as a task family: loading from a bfcl-eval-shaped data folder, the reference, the prompt, refused categories,
a clear error without bfcl-eval; and, where bfcl-eval is installed, every supported category of its real data."""

import importlib.util
import json
import os

import pytest

from mrtpo_viz.names import BFCL_CATEGORIES, TASKS
from mrtpo_viz.tasks import bfcl, get_verifier, list_verifiers, load_examples
from mrtpo_viz.tasks.example_sources import available_tasks

FN = {
    "name": "weather.get",
    "description": "Weather.",
    "parameters": {
        "type": "dict",
        "required": ["city"],
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    },
}
ANSWER = [{"weather.get": {"city": ["Paris", "Paris, France"], "days": ["", 3]}}]
HAVE_BFCL = importlib.util.find_spec("bfcl_eval") is not None
needs_bfcl = pytest.mark.skipif(
    not HAVE_BFCL and not os.environ.get("MRTPO_REQUIRE_REFERENCES"),
    reason="bfcl-eval is not installed (pip install bfcl-eval==2026.3.23 --no-deps)",
)


def _root(tmp_path, rows, answers, version=4, category="simple_python"):
    (tmp_path / "possible_answer").mkdir(exist_ok=True)
    (tmp_path / f"BFCL_v{version}_{category}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "possible_answer" / f"BFCL_v{version}_{category}.json").write_text(
        "".join(json.dumps(a) + "\n" for a in answers)
    )
    return tmp_path


def _row(i, system=None):
    turn = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": f"q{i}"}]
    return {"id": f"simple_python_{i}", "question": [turn], "function": [FN]}


def test_load_from_a_data_folder(tmp_path):
    root = _root(
        tmp_path,
        [_row(0), _row(1, system="Be brief.")],
        [{"id": f"simple_python_{i}", "ground_truth": ANSWER} for i in (1, 0)],
    )
    ex0, ex1 = bfcl.load_bfcl(root=root)
    assert (ex0.task, ex0.id, ex0.verifiers) == ("bfcl", "bfcl-simple_python_0", bfcl.VERIFIERS)
    assert ex0.meta == {
        "category": "simple_python",
        "bfcl_id": "simple_python_0",
        "functions": [FN],
        "possible_answer": ANSWER,
    }
    assert ex0.reference == '<tool_call>{"name": "weather.get", "arguments": {"city": "Paris"}}</tool_call>'
    system, user = ex0.prompt
    assert system["role"] == "system" and '"name": "weather.get"' in system["content"] and user["content"] == "q0"
    assert ex1.prompt[0]["content"].endswith("block per call and nothing else.\n\nBe brief.") and len(ex1.prompt) == 2
    assert bfcl.load_bfcl(root=root, tools_in_prompt=False)[0].prompt == [{"role": "user", "content": "q0"}]
    assert [e.id for e in bfcl.load_bfcl(root=root, limit=1)] == ["bfcl-simple_python_0"]
    for name in ex0.verifiers:
        assert get_verifier(name).score(ex0.reference, ex0) == 1.0


def test_the_newest_data_version_is_read(tmp_path):
    _root(tmp_path, [_row(0)], [{"id": "simple_python_0", "ground_truth": ANSWER}], version=3)
    newer = [{"weather.get": {"city": ["Rome"]}}]
    _root(tmp_path, [_row(0)], [{"id": "simple_python_0", "ground_truth": newer}], version=12)
    assert bfcl.load_bfcl(root=tmp_path)[0].meta["possible_answer"] == newer


def test_rows_without_answers_and_missing_files_are_clear_errors(tmp_path):
    root = _root(tmp_path, [_row(0), _row(1)], [{"id": "simple_python_0", "ground_truth": ANSWER}])
    with pytest.raises(
        ValueError, match=r"1 rows of BFCL simple_python have no possible answer \(first: simple_python_1\)"
    ):
        bfcl.load_bfcl(root=root)
    with pytest.raises(FileNotFoundError, match="no BFCL_v\\*_multiple.json"):
        bfcl.load_bfcl("multiple", root=root)


def test_reference_rendering():
    fn = {
        "name": "f",
        "parameters": {
            "type": "dict",
            "required": ["r", "e", "a"],
            "properties": {
                "r": {"type": "string"},
                "o": {"type": "string"},
                "d": {"type": "dict"},
                "e": {"type": "string"},
                "a": {"type": "array"},
                "l": {"type": "array", "items": {"type": "dict"}},
            },
        },
    }
    answer = {
        "r": ["", "x"],
        "o": ["", "y"],
        "d": [{"k": ["v"], "m": ["", 1]}],
        "l": [[{"a": [1]}]],
        "u": ["", 2],
        "e": [""],
        "a": [""],
    }
    assert bfcl.reference_arguments(answer, fn) == {"r": "x", "d": {"k": "v"}, "l": [{"a": 1}], "e": "", "a": []}


@pytest.mark.parametrize(
    "category, reason",
    [
        ("simple_java", "Java/JavaScript source literals"),
        ("simple_javascript", "Java/JavaScript"),
        ("irrelevance", "no possible answers"),
        ("live_relevance", "makes any call"),
        ("multi_turn_base", "multi-turn"),
        ("memory", "agentic"),
        ("format_sensitivity", "non-scoring"),
        ("poetry", "unknown BFCL category 'poetry'"),
    ],
)
def test_refused_categories_say_why(category, reason):
    with pytest.raises(ValueError, match=reason):
        load_examples("bfcl", category=category)


def test_without_bfcl_eval_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setattr(bfcl, "package_dir", lambda: None)
    with pytest.raises(bfcl.BFCLNotInstalled, match=r"pip install mrtpo-viz\[bfcl\]"):
        load_examples("bfcl")
    assert available_tasks() == list(TASKS)
    with pytest.raises(ValueError, match=r"unknown task family 'bfcl2'.*bfcl after pip install mrtpo-viz\[bfcl\]"):
        load_examples("bfcl2")


def test_options_belong_to_bfcl():
    with pytest.raises(ValueError, match="'category' and 'limit' are options of the bfcl task family"):
        load_examples("tool_calling", category="simple_python")
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        load_examples("bfcl", split="dev")
    assert list_verifiers("bfcl") == ["tool_call.format", "tool_call.correctness"]


ROWS = {
    "simple_python": 400,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
}


@needs_bfcl
def test_every_supported_category_of_the_installed_data_loads():
    assert available_tasks() == list(TASKS) + ["bfcl"]
    assert load_examples("bfcl", limit=3) == load_examples("bfcl", "train", category="simple_python", limit=3)
    counts, consistent = {}, {}
    for category in BFCL_CATEGORIES:
        examples = load_examples("bfcl", split="all", category=category)
        counts[category] = len(examples)
        consistent[category] = sum(bfcl.reference_is_consistent(e) for e in examples)
        assert all(e.messages()[0]["role"] == "system" and e.reference.startswith("<tool_call>") for e in examples)
    assert counts == ROWS
    # 17 references break their own schema (format 0; tests/tasks/test_bfcl_agreement.py lists them), 2 more cannot
    # be met at all (correctness 0, as by BFCL's own checker)
    assert sum(counts.values()) - sum(consistent.values()) == 19
    assert len(bfcl.load_bfcl("live_multiple", consistent_only=True)) == consistent["live_multiple"] == 1039
