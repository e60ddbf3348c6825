"""Regex compilation: user regexes are checked before the ``regex`` module compiles them.

The 0.25 s budget of a declarative verifier covered matching only. Compiling expands counted repeats: unchecked,
``(?:a{1000}){1000}`` compiles in 2.5 s and 277 MB, ``((a{100}){100}){100}`` in 3.6 s and 290 MB, and
``a{4294967294}`` exhausts the machine's memory (the process is killed). Only patterns that stay small are compiled
here.
"""

import time

import pytest

from mrtpo_viz.tasks.custom import DeclarativeSpec, build_declarative

BOMBS = {
    "huge_count": (r"a{4294967294}", "counts to 4,294,967,294; at most 1,000"),
    "nested_counts": (r"((a{100}){100}){100}", "multiply to more than 100,000"),
    "square": (r"(?:a{1000}){1000}", "multiply to more than 100,000"),
    "hidden_in_a_class": (r"[[]a{99999}", "counts to 99,999"),  # a bracket trick cannot hide a count
    "fuzzy": (r"(?:(?:abc){e<=5}){100}", "fuzzy matching"),
}


def _spec(pattern: str) -> DeclarativeSpec:
    return DeclarativeSpec(name="custom.bomb", title="bomb", info="i", kind="regex_must", pattern=pattern)


@pytest.mark.parametrize("kind", ["nested_counts", "square", "hidden_in_a_class", "fuzzy", "huge_count"])
def test_compile_bombs_are_refused_before_compiling(kind):
    """Unchecked, each of these compiles (or, for ``huge_count``, runs out of memory); here each is a ValueError that
    says which limit, in well under the time one of them took to compile."""
    pattern, says = BOMBS[kind]
    start = time.monotonic()
    with pytest.raises(ValueError, match=says.replace("(", r"\(")):
        _spec(pattern)
    assert time.monotonic() - start < 0.5


def test_the_compile_itself_runs_under_a_time_budget(monkeypatch):
    """Second layer: even a pattern that passes the checks compiles under a budget (here squeezed to ~0, so any
    compile overruns it)."""
    monkeypatch.setattr("mrtpo_viz.tasks.custom.COMPILE_BUDGET_S", 1e-9)
    with pytest.raises(ValueError, match="cannot be compiled here .*time budget"):
        _spec(r"(?:ab|cd){1,50}(?:ef|gh)*x{3}")


def test_sane_patterns_still_work():
    v = build_declarative(_spec(r"\d{4}-\d{2}-\d{2}"))
    assert v.score("on 2026-12-01", None) == 1.0 and v.score("on 26-12-01", None) == 0.0
