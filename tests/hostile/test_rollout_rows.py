"""Rollout rows: rollout rows pass one schema and fail one at a time, with their line number."""

import json

import pytest

from mrtpo_viz.cli import main as cli_main
from mrtpo_viz.relevance.scoring import read_rollouts

pytestmark = pytest.mark.usefixtures("sample_data_unchanged")
GOOD = {
    "task": "text_to_sql",
    "prompt": "How many orders?",
    "response": "```sql\nSELECT COUNT(*) FROM orders\n```",
    "meta": {"db": "shop", "gold_sql": "SELECT COUNT(*) FROM orders"},
    "verifiers": ["sql.format"],
}
BAD_ROWS = {
    "verifiers_a_number": ({**GOOD, "verifiers": 5}, "'verifiers' must be a list of verifier names"),
    "content_a_number": (
        {**GOOD, "prompt": [{"role": "user", "content": 5}]},
        "'prompt' message 1 content must be a string, got int",
    ),
    "content_null": ({**GOOD, "prompt": [{"role": "user", "content": None}]}, "content must be a string, got NoneType"),
    "gold_sql_a_list": (
        {**GOOD, "verifiers": ["sql.execution"], "meta": {"db": "shop", "gold_sql": ["SELECT 1"]}},
        "meta.gold_sql must be text (a string) for sql.execution",
    ),
    "meta_a_list": ({**GOOD, "meta": [{"db": "shop"}]}, "'meta' must be an object, got list"),
    "id_an_object": ({**GOOD, "id": {"a": 1}}, "'id' must be text or a number"),
    "no_user_message": ({**GOOD, "prompt": [{"role": "system", "content": "x"}]}, "'prompt' has no user message"),
}
DEEP = "[" * 100_000 + "]" * 100_000
"""A line nested 100,000 levels deep: unchecked, Python's JSON reader raises RecursionError and the run stops."""


def _bad_lines() -> list[str]:
    return [json.dumps({"id": kind, **row}) for kind, (row, _) in BAD_ROWS.items()]  # a row's own id wins


def _file(tmp_path, *lines: str):
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_each_bad_row_is_one_problem_with_its_line_and_the_good_rows_are_kept(tmp_path):
    """Unchecked, ``"verifiers": 5`` and numeric or null message content pass the reader and the replay raises
    'unsupported operand type(s)' / TypeError (the app shows raw Python text, the CLI a traceback) and the deep
    line raises RecursionError from the reader itself, so no row of the file is scored."""
    path = _file(tmp_path, json.dumps({**GOOD, "id": "first"}), *_bad_lines(), DEEP, json.dumps({**GOOD, "id": "last"}))
    rows, problems = read_rollouts(path)
    assert [r["id"] for r in rows] == ["first", "last"]
    said = dict(problems)
    for line, (kind, (_, says)) in enumerate(BAD_ROWS.items(), start=2):
        assert says in said[line], (kind, said[line])
    assert "nested more than 32 levels deep" in said[len(BAD_ROWS) + 2]


def test_a_byte_order_mark_does_not_cost_the_first_row(tmp_path):
    """A UTF-8 BOM does not make line 1 'not valid JSON' (it would be dropped)."""
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps({**GOOD, "id": "a"}) + "\n").encode())
    rows, problems = read_rollouts(path)
    assert [r["id"] for r in rows] == ["a"] and problems == []


def test_the_cli_scores_the_good_rows_of_a_hostile_file_without_a_traceback(tiny_policy_dir, tmp_path, capsys):
    """The CLI lists every bad line and writes the good ones (not a traceback with nothing written)."""
    path = _file(tmp_path, *_bad_lines(), DEEP, json.dumps({**GOOD, "id": "ok"}))
    out = tmp_path / "o.jsonl"
    assert cli_main(["score", str(path), "--out", str(out), "--checkpoint", str(tiny_policy_dir)]) == 0
    text = capsys.readouterr()
    assert "Traceback" not in text.out + text.err
    assert f"rollouts.jsonl:{len(BAD_ROWS) + 1}: skipped: nested more than 32 levels deep" in text.out
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["ok"]
