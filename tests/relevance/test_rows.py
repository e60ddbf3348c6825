"""The rollout-row schema and the reader's limits."""

import json

import pytest

from mrtpo_viz.relevance.rows import RowLimits, check_row, read_rows

ROW = {"task": "text_to_sql", "prompt": "How many orders?", "response": "```sql\nSELECT 1\n```"}


def test_a_valid_row_is_normalized():
    row = check_row({**ROW, "verifiers": "sql.format, sql.execution", "id": 7, "extra": "ignored"}, 3)
    assert row == {**ROW, "meta": {}, "verifiers": ["sql.format", "sql.execution"], "id": "7"}
    assert check_row(ROW, 12)["id"] == "line12"
    messages = check_row({**ROW, "prompt": [{"role": "user", "content": "q", "name": "x"}]}, 1)["prompt"]
    assert messages == [{"role": "user", "content": "q"}]  # the template sees role and content only


@pytest.mark.parametrize(
    "change, says",
    [
        (dict(task=5), "'task' must be a non-empty string, got int"),
        (dict(response=""), "'response' must be a non-empty string, got an empty one"),
        (dict(response="a\udc80"), "unpaired surrogate"),
        (dict(meta={"db_path": "/etc/passwd"}), "'meta.db_path' is not accepted"),
        (dict(meta={"db": "shop", "gold_sql": "SELECT 1", "ordered": "yes"}), "meta.ordered must be true or false"),
        (dict(verifiers=["a", 3]), "'verifiers' must be a list"),
        (dict(meta={"a": [[[[[[[[1]]]]]]]]}), "nested more than 4 levels deep"),
    ],
)
def test_bad_rows_say_what_is_wrong(change, says):
    with pytest.raises(ValueError, match=says.replace("(", r"\(")):
        check_row({**ROW, **change}, 1, RowLimits(max_depth=4))


def test_caps_on_characters_and_verifiers():
    limits = RowLimits(max_chars=10, max_verifiers=1)
    with pytest.raises(ValueError, match="'prompt' has 16 characters; at most 10 here"):
        check_row(ROW, 1, limits)
    with pytest.raises(ValueError, match="'response' has 19 characters; at most 10 here"):
        check_row({**ROW, "prompt": "q"}, 1, limits)
    with pytest.raises(ValueError, match="2 verifiers; at most 1 per row here"):
        check_row({**ROW, "prompt": "q", "response": "x", "verifiers": ["a", "b"]}, 1, limits)


def test_long_lines_are_skipped_without_losing_the_line_count(tmp_path):
    path = tmp_path / "r.jsonl"
    lines = [
        json.dumps({**ROW, "id": "a"}),
        json.dumps({**ROW, "response": "y" * 5000}),
        "",
        json.dumps({**ROW, "id": "b"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    rows, problems = read_rows(path, RowLimits(max_line_bytes=1000))
    assert [(r["id"], r["line"]) for r in rows] == [("a", 1), ("b", 4)]
    assert problems == [(2, "the line is longer than 1,000 bytes")]


def test_rows_past_the_cap_are_reported(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({**ROW, "id": str(i)}) + "\n" for i in range(4)))
    rows, problems = read_rows(path, RowLimits(max_rows=2))
    assert [r["id"] for r in rows] == ["0", "1"] and [p[0] for p in problems] == [3, 4]
    with pytest.raises(ValueError, match="r.jsonl is .* bytes; the limit is 10 bytes"):
        read_rows(path, RowLimits(max_bytes=10))
