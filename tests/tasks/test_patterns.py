"""The one path of user patterns: the check, the bounded cache that bypasses the libraries' caches, the static
backtracking bound that decides inline or worker, and ``re``'s semantics on both paths."""

import math
import re

import pytest
import regex

from mrtpo_viz.tasks import patterns


def test_check_refuses_what_could_be_huge_to_compile():
    patterns.check_pattern(r"\d{4}-\d{2}")
    for bad, says in [
        ("a" * 301, "at most 300"),
        ("a{1001}", "at most 1,000"),
        ("(a{100}){1001}", "at most"),
        ("((a{10}){100}){101}", "multiply to more than 100,000"),
        ("(?:ab){e<=1}", "fuzzy"),
    ]:
        with pytest.raises(ValueError, match=says):
            patterns.check_pattern(bad)


def test_backtrack_bound():
    text = "a cat sat.\n" * 90 + " " * 10  # n = 1,000; longest whitespace run 11 (the last newline and 10 spaces)
    n = len(text)
    assert n == 1000
    assert patterns.backtrack_bound("cat", re.I, text) == (n + 1) * 3 + n  # a literal: one path per start
    assert patterns.backtrack_bound(r"\bcat\b", re.I, text) == (n + 1) * 7 + n
    assert patterns.backtrack_bound(r"ab?c", 0, text) == (n + 1) * 2 * 4 + n  # each count of a bounded repeat
    # an unbounded repeat of one character class takes at most the text's longest run of it (11 here)
    assert patterns.backtrack_bound(r"\s*x", 0, text) == (n + 1) * 12 * 4 + n
    assert patterns.backtrack_bound(r"\s*x", 0, " " * 999 + "x") == 1001 * 1000 * 4 + 1000
    # a greedy repeat that only what always succeeds follows never gives back: the official postscript and
    # section patterns cost one path per start but for their leading \s* / \s?
    assert patterns.backtrack_bound(r"\s*p\.\s?s\..*$", re.M, text) == (n + 1) * 12 * 2 * 15 + n
    assert patterns.backtrack_bound(r"\s?SECTION\s?\d+\s?", 0, text) == (n + 1) * 2 * 2 * 19 + n
    assert patterns.backtrack_bound(r"a.*$", 0, text) == (n + 1) * 11 * 4 + n  # no MULTILINE: $ may fail
    # the runs are measured with the flags in force there: A matches a only case-insensitively
    assert patterns.backtrack_bound(r"(?i:A*)b", 0, "a" * 999) == 1000 * 1000 * 8 + 999
    assert patterns.backtrack_bound(r"(?i)A*b", 0, "a" * 999) == 1000 * 1000 * 7 + 999
    assert patterns.backtrack_bound(r"(x+x+)+y", 0, "x" * 40) == math.inf
    assert patterns.backtrack_bound(r"(a)\1", 0, text) == math.inf  # back-references are not bounded here


@pytest.mark.parametrize("inline", [True, False])
@pytest.mark.parametrize(
    "op, pattern, flags, text",
    [
        ("search", "ı", re.I, "IŞIK"),
        ("search", r"file\ssep", re.I, "FILE\x1cSEP"),
        ("count", "a*", 0, "baab"),
        ("count", r"\bcat\b", re.I, "Cat cat cats"),
        ("split", r"\s?(S)\s?\d+\s?", 0, "x S 1 y S 2 z"),
        ("spans", r"\s*p\.\s?s\..*$", re.M, "a\n p.s. b\np.s. c"),
    ],
)
def test_re_semantics_inline_and_in_the_worker(monkeypatch, inline, op, pattern, flags, text):
    if not inline:
        monkeypatch.setattr(patterns, "INLINE_STEPS", -1)  # every match goes to the worker process
    want = {
        "search": lambda: re.search(pattern, text, flags) is not None,
        "count": lambda: len(re.findall(pattern, text, flags)),
        "split": lambda: len(re.split(pattern, text, flags=flags)),
        "spans": lambda: [m.span() for m in re.finditer(pattern, text, flags) if m.end() > m.start()],
    }[op]()
    assert patterns.re_run(op, pattern, text, flags) == want


def test_the_libraries_caches_are_bypassed():
    re.purge()
    regex.purge()
    patterns.compile_re("unique-to-this-test-re")
    patterns.compile_regex("unique-to-this-test-regex")
    assert not any("unique-to-this-test" in str(k) for k in re._cache)
    assert not any("unique-to-this-test" in str(k) for k in regex._main._cache)
    assert ("re", "unique-to-this-test-re", 0) in patterns.CACHE.items


def test_a_late_worker_is_killed_and_the_next_call_works():
    with pytest.raises(patterns.PatternTimeout, match="took longer than"):
        patterns.re_run("search", "(x+x+)+y", "x" * 40)
    assert patterns.re_run("search", "(x+x+)+y", "xxy") is True


def test_a_worker_error_is_a_pattern_error_and_a_failing_verdict(monkeypatch):
    from mrtpo_viz.tasks.ifeval import check

    class _Answering:
        def run(self, request, budget_s):
            return {"error": "the pattern needs more memory than allowed on this response"}

    monkeypatch.setattr(patterns, "_pool", lambda: _Answering())
    monkeypatch.setattr(patterns, "INLINE_STEPS", -1)
    with pytest.raises(patterns.PatternError, match="could not run on this response: the pattern needs more memory"):
        patterns.re_run("search", "a", "a")
    ok, reason = check("keywords:frequency", "a cat", {"keyword": "cat", "frequency": 1, "relation": "at least"})
    assert not ok and "needs more memory" in reason
