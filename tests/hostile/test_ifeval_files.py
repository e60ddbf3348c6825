"""Threat: IFEval-format files made to exhaust the reader (a 6 MB Python-literal kwargs line, deep nesting, an
endless line) or to trip it (a byte-order mark). Each is refused fast, with the file's name (not its folder) and
the line; a BOM on line 1 is skipped as the rollouts reader skips it."""

import json

import pytest

from mrtpo_viz.tasks import load_examples

from .bounded import bounded

ROW = {"key": 1, "prompt": "Write a haiku.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}


def write(tmp_path, *lines: str, name="rows.jsonl", prefix: bytes = b""):
    path = tmp_path / name
    path.write_bytes(prefix + "\n".join(lines).encode("utf-8") + b"\n")
    return path


def refused(path, says: str):
    with bounded(), pytest.raises(ValueError) as err:
        load_examples("instruction_following", path=path)
    text = str(err.value)
    assert text.startswith(f"{path.name}:") and says in text and str(path.parent) not in text and len(text) < 400
    return text


def test_a_bom_on_line_1_is_skipped(tmp_path):
    """A BOM must not make line 1 invalid JSON (the rollouts reader skips it too)."""
    path = write(tmp_path, json.dumps(ROW), json.dumps({**ROW, "key": 2}), prefix=b"\xef\xbb\xbf")
    assert [e.id for e in load_examples("instruction_following", path=path)] == ["1", "2"]


def test_a_6_mb_python_literal_kwargs_line_is_refused_fast(tmp_path):
    """The threat: seconds and gigabytes before an error (RLVR sets write ground_truth as Python literals)."""
    literal = "[" + ", ".join(["{'a': None}"] * 500_000) + "]"
    row = {
        "messages": [{"role": "user", "content": "hi"}],
        "ground_truth": "{'instruction_id': ['punctuation:no_comma'], 'kwargs': " + literal + "}",
    }
    path = write(tmp_path, json.dumps(row))
    assert path.stat().st_size > 6_000_000
    refused(path, ":1: the line is longer than 1,048,576 characters")


def test_a_literal_under_the_line_cap_is_capped_by_its_own_length(tmp_path):
    literal = "[" + ", ".join(["{'a': None}"] * 50_000) + "]"
    row = {"prompt": "hi", "instruction_id_list": ["punctuation:no_comma"], "kwargs": literal}
    refused(write(tmp_path, json.dumps(ROW), json.dumps(row)), ":2: kwargs is a string of 650,000 characters")


def test_a_deeply_nested_line_names_its_file_and_line(tmp_path):
    """Not a bare RecursionError without file and line."""
    deep = (
        '{"prompt": "hi", "instruction_id_list": ["punctuation:no_comma"], "kwargs": '
        + "[" * 100_000
        + "]" * 100_000
        + "}"
    )
    refused(write(tmp_path, json.dumps(ROW), deep), ":2: nested deeper than 32 levels")
    nested: object = {}
    for _ in range(40):
        nested = [nested]
    shallow_deep = json.dumps({**ROW, "kwargs": nested})
    refused(write(tmp_path, shallow_deep, name="b.jsonl"), ":1: nested deeper than 32 levels")


def test_a_deep_python_literal_is_refused_before_parsing(tmp_path):
    row = {"messages": [{"role": "user", "content": "hi"}], "ground_truth": "[" * 30_000 + "]" * 30_000}
    refused(write(tmp_path, json.dumps(row)), ":1: ground_truth is nested deeper than 32 levels")


def test_errors_name_the_file_not_its_folder(tmp_path):
    text = refused(write(tmp_path, json.dumps(ROW), "{not json"), ":2: not valid JSON")
    assert text.startswith("rows.jsonl:2:")
    with pytest.raises(FileNotFoundError) as err:
        load_examples("instruction_following", path=tmp_path / "absent.jsonl")
    assert str(tmp_path) not in str(err.value) and "absent.jsonl" in str(err.value)


def test_a_huge_list_of_ids_is_shown_short(tmp_path):
    row = {**ROW, "instruction_id_list": [f"x{i}" for i in range(20_000)], "kwargs": None}
    text = refused(write(tmp_path, json.dumps(row)), ":1: unknown IFEval instruction id(s)")
    assert text.endswith("'mrtpo:starts_with'")
