"""The pattern worker's answers (called in this process; tests/tasks/test_patterns.py runs it as a process)."""

import re

from mrtpo_viz.tasks import pattern_worker


def test_answers_have_re_semantics():
    ask = lambda op, p, t, f=0: pattern_worker.answer({"op": op, "pattern": p, "flags": f, "text": t})  # noqa: E731
    assert ask("search", "CAT", "a cat", re.I) == {"result": True}
    assert ask("count", "a*", "baa") == {"result": len(re.findall("a*", "baa"))} == {"result": 3}
    assert ask("split", r"\s?(S)\s?\d+", "x S 1 y S 2") == {"result": len(re.split(r"\s?(S)\s?\d+", "x S 1 y S 2"))}
    assert ask("spans", "a*", "baa") == {"result": [(1, 3)]}  # non-empty matches only


def test_bad_requests_are_answered_with_an_error():
    assert "cannot run" in pattern_worker.answer({"op": "search", "pattern": "(", "flags": 0, "text": ""})["error"]
    assert "unknown operation" in pattern_worker.answer({"op": "x", "pattern": "a", "flags": 0, "text": ""})["error"]
    assert "cannot run" in pattern_worker.answer({"op": "search"})["error"]
