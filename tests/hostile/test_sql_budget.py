"""SQL budget: SQL that one virtual-machine step makes slow, and uploaded gold SQL.

The sandbox's progress handler fires between virtual-machine steps; one ``LIKE`` of a 100 kB string against a long
pattern is one step. These tests build such queries from allowed functions only (a recursive CTE doubles a
string), as a policy's response or a rollouts file could.
"""

import json
import time
import tracemalloc

import psutil
import pytest

from mrtpo_viz.relevance.scoring import read_rollouts
from mrtpo_viz.tasks import get_verifier
from mrtpo_viz.tasks.base import Example
from mrtpo_viz.tasks.bundled_data import database_file
from mrtpo_viz.tasks.sandbox import run_query

pytestmark = pytest.mark.usefixtures("sample_data_unchanged")
SHOP = database_file("shop")
_STRING = (
    "d(x) AS (SELECT 'a' UNION ALL SELECT x || x FROM d WHERE length(x) < 65536), "
    "s(v) AS (SELECT x || substr(x, 1, 34000) FROM d WHERE length(x) = 65536), "
)  # v: 99,536 times 'a'


def like_query(n: int, pattern_chars: int) -> str:
    """``n`` LIKE comparisons of the ~100 kB string with ``'%' + 'a' * pattern_chars + 'b'``: no match, and each
    comparison walks every start position (quadratic work in one virtual-machine step)."""
    pattern = f"p(q) AS (SELECT '%' || substr(v, 1, {pattern_chars}) || 'b' FROM s) "
    return "WITH RECURSIVE " + _STRING + pattern + "SELECT " + " + ".join(["(v LIKE q)"] * n) + " FROM s, p"


def _children_cpu() -> float:
    return sum(c.cpu_times().user + c.cpu_times().system for c in psutil.Process().children(recursive=True))


def test_a_like_query_with_50_kb_patterns_is_refused_at_once():
    """A hostile query (12 LIKEs, ~100 kB strings, ~50 kB patterns; 394 characters here). Unchecked it runs to
    the end in one step per LIKE (69.5 s of CPU here) while the 1 s budget never fires."""
    sql = like_query(12, 49_990)
    start = time.monotonic()
    res = run_query(SHOP, sql)
    assert time.monotonic() - start < 5.0
    assert res.rows is None and "LIKE or GLOB pattern is longer than 1,000 bytes" in res.error


def test_a_query_that_outruns_its_budget_in_one_step_is_killed_and_frees_its_core():
    """120 LIKEs with patterns under the pattern cap (about 0.16 s of CPU each): the budget is 1 s of wall time.
    In-process, the query runs all 120 (240 ran 37 s of CPU, 189 s of wall time on the busy machine), so cancelling
    the request does not free the core; here the worker is killed 1 s (KILL_GRACE_S) after the budget and nothing keeps
    running."""
    start = time.monotonic()
    res = run_query(SHOP, like_query(120, 998), timeout_s=1.0)
    elapsed = time.monotonic() - start
    assert res.rows is None and "ran past its step or time budget" in res.error
    assert elapsed < 6.0  # the 1 s budget, the sandbox's 1 s grace before the kill, slack for a loaded machine
    before = _children_cpu()
    time.sleep(1.0)
    assert _children_cpu() - before < 0.2  # no process of ours is still matching
    assert run_query(SHOP, "SELECT COUNT(*) FROM orders").rows == ((60,),)  # a fresh worker answers


def _gold_example(gold: str) -> Example:
    return Example(task="text_to_sql", prompt="q", meta={"db": "shop", "gold_sql": gold})


BIG_GOLD = (
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000), "
    + _STRING
    + "t AS (SELECT 1) SELECT n, v FROM r, s"
)
"""1,000 rows of ~100 kB: a ~100 MB result from a 230-character query."""


def test_an_uploaded_gold_query_runs_under_the_policy_query_limits(tmp_path):
    """A rollouts row brings its own ``meta.gold_sql``. Trusted (100,000 rows allowed, results kept in an
    ``lru_cache(4096)``), a 1.3 KB file raises the server from 560 to 1,867 MB for good. Here the gold query
    gets a policy query's limits (1,000 rows, 1 MiB of values) and the row fails with a reason."""
    row = {
        "task": "text_to_sql",
        "prompt": "q",
        "response": "```sql\nSELECT 1\n```",
        "meta": {"db": "shop", "gold_sql": BIG_GOLD},
    }
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(row) + "\n")
    (row,), _ = read_rollouts(path)
    example = Example(task=row["task"], prompt=row["prompt"], meta=row["meta"])
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"the gold query fails .*larger than 1 MiB"):
            get_verifier("sql.execution").check(row["response"], example)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20


def test_the_gold_result_cache_is_bounded_in_memory():
    """80 distinct gold queries of ~0.9 MB results each. In an lru_cache all 80 would stay (over 70 MB);
    the cache is bounded by the size of what it holds (16 MiB)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(80):
            gold = (
                f"WITH RECURSIVE r(n, s) AS (SELECT 1, '{i:04d}' UNION ALL SELECT n + 1, s FROM r WHERE n < 900), "
                "d(x) AS (SELECT 'a' UNION ALL SELECT x || x FROM d WHERE length(x) < 1024) "
                "SELECT n, s || substr(x, 1, 1000) FROM r, d WHERE length(x) = 1024"
            )
            get_verifier("sql.execution").check("```sql\nSELECT 1\n```", _gold_example(gold))
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert held < 40 * 2**20, f"{held / 2**20:.0f} MiB held after 80 gold results of ~0.9 MB"
