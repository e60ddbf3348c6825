"""The bundled sample data: both splits present, ids unique, every gold reference scores 1 on all its verifiers, and
the files are what the generators write. The data ships inside the package: a missing file is a failure here."""

import importlib

import pytest

from mrtpo_viz.names import TASKS
from mrtpo_viz.tasks import get_verifier
from mrtpo_viz.tasks.bundled_data import task_file
from mrtpo_viz.tasks.generators import FAMILY_MODULES
from mrtpo_viz.tasks.example_sources import load_examples


def _examples(task: str, split: str = "all"):
    assert task_file(task).is_file(), f"the package lacks its sample data for {task}: {task_file(task)}"
    return load_examples(task, split=split)


@pytest.mark.parametrize("task", TASKS)
def test_splits_and_ids(task):
    examples = _examples(task)
    train, test = load_examples(task, "train"), load_examples(task, "test")
    assert len(train) >= 100 and len(test) >= 50 and len(train) + len(test) == len(examples)
    assert len({e.id for e in examples}) == len(examples)
    assert all(e.task == task and e.verifiers and e.reference for e in examples)


@pytest.mark.parametrize("task", TASKS)
def test_every_gold_reference_scores_one(task):
    failures = []
    for ex in _examples(task):
        for name in ex.verifiers:
            verdict = get_verifier(name).check(ex.reference, ex)
            if verdict.score != 1.0:
                failures.append((ex.id, name, verdict.reason))
    assert failures == []


@pytest.mark.parametrize("task", ["tool_calling", "instruction_following"])
def test_sample_file_matches_its_generator(task):
    """The committed file is what ``scripts/make_sample_data.py`` writes today (seed 0, 300 train + 100 test)."""
    rows = [e.to_dict() for e in _examples(task)]
    fresh = [e.to_dict() for e in importlib.import_module(FAMILY_MODULES[task]).generate(len(rows), seed=0)]
    for row, new in zip(rows, fresh):
        assert {k: v for k, v in row.items() if k != "id"} == {k: v for k, v in new.items() if k != "id"}


def test_a_missing_examples_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no examples file at"):
        load_examples("tool_calling", path=tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="unknown task family 'poetry'"):
        load_examples("poetry")


def test_a_bad_line_names_its_file_and_line(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"task": "t", "prompt": "p", "split": "test"}\n{oops\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"x.jsonl:2: not valid JSON"):
        load_examples("t", path=bad)
