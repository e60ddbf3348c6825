"""The read-only SQL sandbox: reads work, anything else is refused with a reason, and the file never changes."""

import hashlib

import pytest

from mrtpo_viz.tasks.sandbox import QueryResult, run_query, schema
from mrtpo_viz.tasks.generators.text_to_sql import build_databases


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    return build_databases(tmp_path_factory.mktemp("dbs"))["shop"]


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reads_rows(shop):
    res = run_query(shop, "SELECT name, price FROM products WHERE category = 'garden' ORDER BY price")
    assert res.ok and res.error is None
    assert len(res.rows) == 4 and all(len(r) == 2 for r in res.rows)
    assert [r[1] for r in res.rows] == sorted(r[1] for r in res.rows)
    assert run_query(shop, "SELECT COUNT(*) FROM products").rows == ((25,),)
    assert run_query(shop, "select count(*) from orders; -- trailing comment").rows == ((60,),)


def test_schema(shop):
    assert schema(shop) == {
        "customers": ("id", "name", "city"),
        "orders": ("id", "customer_id", "product_id", "quantity", "year"),
        "products": ("id", "name", "price", "category"),
    }


HOSTILE = [
    ("INSERT INTO products VALUES (99, 'x', 1, 'toys')", "denied: INSERT products"),
    ("UPDATE products SET price = 0", "denied: UPDATE products"),
    ("DELETE FROM orders", "denied: DELETE orders"),
    ("DROP TABLE customers", "only reading is allowed"),
    ("CREATE TABLE t (x)", "only reading is allowed"),
    ("ALTER TABLE products ADD COLUMN x", "only reading is allowed"),
    ("ATTACH DATABASE '/tmp/mrtpo_attack.db' AS x", "denied: ATTACH"),
    ("PRAGMA journal_mode = WAL", "denied: PRAGMA journal_mode"),
    ("PRAGMA table_info(products)", "denied: PRAGMA table_info"),
    ("SELECT * FROM pragma_table_info('products')", "only reading is allowed"),
    ("VACUUM", "only reading is allowed"),
    ("BEGIN", "denied: TRANSACTION"),
    ("SELECT load_extension('/tmp/evil')", "denied: FUNCTION load_extension"),
    ("SELECT length(randomblob(1000000000))", "denied: FUNCTION randomblob"),
    ("SELECT zeroblob(1000000000)", "denied: FUNCTION zeroblob"),
    ("SELECT printf('%.*c', 1000000000, 'x')", "denied: FUNCTION printf"),
    ("SELECT length(replace(hex(name), '', '')) FROM products", None),  # harmless: allowed
    ("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT COUNT(*) FROM r", "step or time budget"),
    ("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r", "more than 1000 rows"),
    (
        "WITH RECURSIVE r(s) AS (SELECT 'ab' UNION ALL SELECT s || s FROM r) SELECT MAX(LENGTH(s)) FROM r",
        "SQL error: string or blob too big",
    ),
    ("SELECT COUNT(*) FROM orders a, orders b, orders c, orders d", "step or time budget"),
    ("SELECT 1; DELETE FROM orders", "more than one SQL statement"),
    ("", "empty query"),
    ("SELEC name FROM products", 'SQL error: near "SELEC": syntax error'),
]


@pytest.mark.parametrize("sql,reason", HOSTILE)
def test_hostile_queries_are_refused_and_leave_the_file_identical(shop, sql, reason):
    before = _sha(shop)
    res = run_query(shop, sql)
    assert isinstance(res, QueryResult)
    if reason is None:
        assert res.ok
    else:
        assert res.rows is None and reason in res.error
    assert _sha(shop) == before
    assert run_query(shop, "SELECT COUNT(*) FROM orders").rows == ((60,),)


def test_budgets_are_parameters(shop):
    assert run_query(shop, "SELECT name FROM products", max_rows=25).ok
    assert run_query(shop, "SELECT name FROM products", max_rows=24).error == "the query returns more than 24 rows"
    join = "SELECT COUNT(*) FROM orders a, orders b"  # 3600 rows: tens of thousands of VM steps
    assert run_query(shop, join).rows == ((3600,),)
    assert "budget" in run_query(shop, join, max_steps=1000).error


def test_missing_database_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no SQLite database file 'nope.sqlite'") as err:
        run_query(tmp_path / "nope.sqlite", "SELECT 1")
    assert str(tmp_path) not in str(err.value)  # no server folder, no hint to run a script the wheel lacks
