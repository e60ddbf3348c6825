"""The guards for work driven by untrusted input: the Python time budget, nesting depth, surrogates."""

import sys
import time

import pytest

from mrtpo_viz.guards import BudgetExceeded, nesting_depth, time_budget, unpaired_surrogate


def _spin():
    while True:
        pass


def test_the_time_budget_stops_a_python_loop_and_restores_the_tracer():
    before = sys.gettrace()
    start = time.monotonic()
    with pytest.raises(BudgetExceeded, match="the loop ran past its time budget of 0.05 s"):
        with time_budget(0.05, "the loop"):
            _spin()
    assert time.monotonic() - start < 2.0
    assert sys.gettrace() is before


def test_work_within_the_budget_is_untouched():
    with time_budget(5.0):
        assert sum(i * i for i in range(10_000)) == 333283335000


def test_an_inner_budget_counts_inside_an_outer_one():
    with time_budget(10.0, "outer"):
        with pytest.raises(BudgetExceeded, match="inner"):
            with time_budget(0.05, "inner"):
                _spin()


def test_nesting_depth_without_recursion():
    assert nesting_depth(5, 10) == 0 and nesting_depth([], 10) == 1 and nesting_depth({"a": [1, {"b": []}]}, 10) == 4
    deep = []
    for _ in range(100_000):  # far past Python's recursion limit
        deep = [deep]
    assert nesting_depth(deep, 32) == 33  # stops counting once past the limit


def test_unpaired_surrogates_are_found():
    assert unpaired_surrogate("fine \U0001f600 text") == -1
    assert unpaired_surrogate("ab\ud800cd") == 2 and unpaired_surrogate("\udfff") == 0
