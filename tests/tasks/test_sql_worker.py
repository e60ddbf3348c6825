"""The SQL worker process's own functions (run in this process here) and its line protocol (in a child)."""

import json
import subprocess
import sys

import pytest

from mrtpo_viz.tasks import sql_worker
from mrtpo_viz.tasks.bundled_data import database_file

SHOP = str(database_file("shop"))


def _ask(sql: str, **budget) -> dict:
    request = {
        "db": SHOP,
        "sql": sql,
        "max_steps": 2_000_000,
        "max_rows": 1000,
        "max_bytes": 2**20,
        "timeout_s": 1.0,
        **budget,
    }
    return sql_worker.answer(request)


def test_rows_and_values_come_back_encoded_for_json():
    out = _ask("SELECT 1, 2.5, 'x', NULL, x'00ff'")
    assert out == {"rows": [[1, 2.5, "x", None, {"$bytes": "00ff"}]]}
    assert json.loads(json.dumps(out)) == out


@pytest.mark.parametrize(
    "sql, says",
    [
        ("DELETE FROM orders", "only reading is allowed; denied: DELETE orders"),
        (
            "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT COUNT(*) FROM r",
            sql_worker.BUDGET_MESSAGE,
        ),
        ("SELECT 'a' LIKE '%" + "a" * 2000 + "'", "a LIKE or GLOB pattern is longer than 1,000 bytes"),
        ("SELECT * FROM pragma_table_info('orders')", "denied: PRAGMA function pragma_table_info"),
        ("SELECT name FROM products", "more than 10 rows"),
    ],
)
def test_refusals_have_reasons(sql, says):
    assert says in _ask(sql, max_rows=10)["error"]


def test_the_result_size_is_capped():
    sql = "WITH RECURSIVE d(x) AS (SELECT 'a' UNION ALL SELECT x || x FROM d WHERE length(x) < 65536) SELECT x FROM d"
    assert _ask(sql, max_bytes=100_000)["error"] == "the query's result is larger than 0.0953674 MiB"
    assert len(_ask(sql, max_bytes=200_000)["rows"]) == 17


def test_a_garbled_request_is_answered():
    assert "cannot run" in sql_worker.answer({"sql": "SELECT 1"})["error"]


def test_the_process_speaks_one_json_line_per_request():
    proc = subprocess.run(
        [sys.executable, "-I", "-S", sql_worker.__file__],
        capture_output=True,
        text=True,
        input=json.dumps(
            {
                "db": SHOP,
                "sql": "SELECT COUNT(*) FROM orders",
                "max_steps": 10**6,
                "max_rows": 10,
                "max_bytes": 1000,
                "timeout_s": 1,
            }
        )
        + "\nnot json\n",
        timeout=60,
    )
    ready, first, second = proc.stdout.splitlines()
    assert ready == "ready" and json.loads(first) == {"rows": [[60]]} and "bad request" in json.loads(second)["error"]
