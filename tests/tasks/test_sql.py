"""sql.format and sql.execution: tables of pass / fail / edge cases, spans, information, and the sample data."""

import hashlib
import math
import sqlite3

import pytest

from mrtpo_viz.tasks.bundled_data import SAMPLE_DATA
from mrtpo_viz.tasks.base import Example
from mrtpo_viz.tasks.example_sources import load_examples
from mrtpo_viz.tasks.generators import text_to_sql as t2s
from mrtpo_viz.tasks import get_verifier

FMT, EXE = get_verifier("sql.format"), get_verifier("sql.execution")


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    return t2s.build_databases(tmp_path_factory.mktemp("dbs"))


def example(dbs, gold, ordered=None):
    ordered = " ORDER BY " in gold if ordered is None else ordered
    return Example(
        task="text_to_sql",
        prompt="q",
        meta={"db": "shop", "db_path": str(dbs["shop"]), "gold_sql": gold, "ordered": ordered},
    )


def block(sql):
    return f"```sql\n{sql}\n```"


FORMAT_CASES = [
    (block("SELECT name FROM products"), 1.0),
    (block("select name from products;"), 1.0),  # lowercase keywords, one trailing semicolon
    ("```SQL\nSELECT 1\n```", 1.0),  # the info string in any case
    (block("-- over 20\nSELECT name FROM products /* cheap */ WHERE price > 20;"), 1.0),
    (block("WITH c AS (SELECT * FROM products) SELECT name FROM c"), 1.0),
    ("Here is the query:\n" + block("SELECT 1") + "\nIt lists one row.", 1.0),
    (block("SELECT name FROM products WHERE name = 'Café ☕; 東京'"), 1.0),  # unicode, ';' inside a string
    ("  \n```sql   \n   SELECT 1   \n```  \n", 1.0),  # whitespace
    ("", 0.0),
    ("   \n ", 0.0),
    ("SELECT name FROM products", 0.0),  # no fence
    (block("SELECT 1; SELECT 2"), 0.0),  # two statements
    (block("SELECT 1") + "\n" + block("SELECT 2"), 0.0),  # two fenced blocks
    ("```python\nprint(1)\n```\n" + block("SELECT 1"), 0.0),  # another fenced block
    ("```sql\nSELECT 1", 0.0),  # unclosed
    ("```sql SELECT 1```", 1.0),  # one line
    ("```\nSELECT 1\n```", 0.0),  # not marked sql
    ("```sqlite\nSELECT 1\n```", 0.0),
    (block("INSERT INTO products VALUES (1, 'x', 2, 'toys')"), 0.0),
    (block("WITH c AS (SELECT id FROM products) DELETE FROM products WHERE id IN c"), 0.0),
    (block(""), 0.0),
    (block("-- only a comment"), 0.0),
]


@pytest.mark.parametrize("response,score", FORMAT_CASES)
def test_format_cases(dbs, response, score):
    verdict = FMT.check(response, example(dbs, "SELECT 1"))
    assert verdict.score == score and verdict.reason


def test_format_reasons(dbs):
    ex = example(dbs, "SELECT 1")
    assert FMT.check(block("SELECT 1; SELECT 2"), ex).reason == "expected one SQL statement in the block, found 2"
    assert FMT.check(block("SELECT 1") * 2, ex).reason == "expected exactly one fenced block, found 2"
    assert FMT.check(block("DELETE FROM orders"), ex).reason == "the statement is not a SELECT query (DELETE)"


GOLD = "SELECT name FROM products WHERE price > 60"
EXECUTION_CASES = [
    (GOLD, block(GOLD), 1.0),
    (GOLD, block("select name from products where 60 < price;"), 1.0),
    (GOLD, block("SELECT name FROM products WHERE price > 60 ORDER BY name DESC"), 1.0),  # order ignored
    (GOLD, block("-- names\nSELECT p.name FROM products AS p /* all */ WHERE p.price > 60"), 1.0),
    (GOLD, block("WITH dear AS (SELECT * FROM products WHERE price > 60) SELECT name FROM dear"), 1.0),
    (GOLD, block("SELECT name FROM products WHERE price < 60"), 0.0),  # wrong condition
    (GOLD, block("SELECT name, price FROM products WHERE price > 60"), 0.0),  # wrong columns
    (GOLD, block("SELECT name FROM products WHERE price > 60; SELECT 1"), 0.0),
    (GOLD, block("SELEC name FROM products"), 0.0),
    (GOLD, "SELECT name FROM products WHERE price > 60", 0.0),  # no block to run
    (GOLD, "```sql\n" + GOLD, 1.0),  # broken form (unclosed fence) costs sql.format only
    (GOLD, "```\n" + GOLD + "\n```", 1.0),  # not marked sql: the first fenced block runs
    (GOLD, "```python\nx = 1\n```\n" + block(GOLD) + "\n" + block("SELECT 1"), 1.0),  # the first sql block runs
    (GOLD, "```sql " + GOLD + "```", 1.0),  # one line
    (GOLD, "", 0.0),
    (GOLD, block("DELETE FROM products WHERE price > 60"), 0.0),
    ("SELECT AVG(price) FROM products", block("SELECT SUM(price) * 1.0 / COUNT(*) FROM products"), 1.0),
    ("SELECT COUNT(*) FROM products", block("SELECT COUNT(*) * 1.0 FROM products"), 1.0),  # 25 == 25.0
    ("SELECT category FROM products", block("SELECT DISTINCT category FROM products"), 0.0),  # multiset
    ("SELECT name FROM products WHERE price > 1000", block("SELECT name FROM products WHERE price > 2000"), 1.0),
    ("SELECT name FROM products ORDER BY price", block("SELECT name FROM products ORDER BY price DESC"), 0.0),
    ("SELECT name FROM products ORDER BY price", block("SELECT name FROM products ORDER BY 0 + price"), 1.0),
    ("SELECT name FROM products WHERE name = 'Kite'", block("SELECT name FROM products WHERE name = 'kite'"), 0.0),
]


@pytest.mark.parametrize("gold,response,score", EXECUTION_CASES)
def test_execution_cases(dbs, gold, response, score):
    verdict = EXE.check(response, example(dbs, gold))
    assert verdict.score == score and verdict.reason


def test_execution_reasons_give_row_counts(dbs):
    prices = [p[2] for p in t2s.DATABASES["shop"].tables[0].rows]
    n_30, n_90 = sum(p > 30 for p in prices), sum(p > 90 for p in prices)
    assert 0 < n_90 < n_30
    ex = example(dbs, "SELECT name FROM products WHERE price > 30")
    assert (
        EXE.check(block("SELECT name FROM products WHERE price > 90"), ex).reason
        == f"wrong result: {n_90} rows, expected {n_30} ({n_30 - n_90} expected rows missing, 0 extra)"
    )
    reason = EXE.check(block("SELECT name FROM customers"), ex).reason
    assert reason.endswith(f"expected {n_30} ({n_30} expected rows missing, 20 extra)")
    ordered = example(dbs, "SELECT name FROM products ORDER BY price")
    assert (
        EXE.check(block("SELECT name FROM products ORDER BY price DESC"), ordered).reason
        == "right rows in the wrong order (25 rows)"
    )
    assert EXE.check(block("SELECT 1; SELECT 2"), ex).reason == "more than one SQL statement"
    assert EXE.check(block("SELECT nam FROM products"), ex).reason == "SQL error: no such column: nam"
    assert EXE.check(block("SELECT name, price FROM products"), ex).reason == "wrong result: 2 columns, expected 1"


def test_hostile_responses_score_zero_and_leave_the_file_identical(dbs):
    ex = example(dbs, "SELECT COUNT(*) FROM orders")
    before = hashlib.sha256(dbs["shop"].read_bytes()).hexdigest()
    for sql in (
        "DELETE FROM orders",
        "DROP TABLE orders",
        "ATTACH DATABASE ':memory:' AS m",
        "PRAGMA user_version = 7",
        "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT COUNT(*) FROM r",
        "SELECT randomblob(1000000000)",
        "SELECT load_extension('x')",
    ):
        verdict = EXE.check(block(sql), ex)
        assert verdict.score == 0.0 and ("denied" in verdict.reason or "budget" in verdict.reason), sql
    assert hashlib.sha256(dbs["shop"].read_bytes()).hexdigest() == before
    assert EXE.check(block("SELECT COUNT(*) FROM orders"), ex).score == 1.0


def test_format_spans_are_the_decision_points(dbs):
    ex = example(dbs, "SELECT 1")
    r = "Query:\n```sql\nWITH c AS (SELECT 1) SELECT * FROM c\n```"
    assert [r[a:b] for a, b in FMT.relevant_spans(r, ex)] == ["```sql", "WITH", "SELECT", "```"]
    assert FMT.relevant_spans(r, ex) == [(7, 13), (14, 18), (35, 41), (51, 54)]
    assert FMT.relevant_spans("no fence at all", ex) == []
    r = "```SQL select 1"  # unclosed: no closing fence to point at
    assert [r[a:b] for a, b in FMT.relevant_spans(r, ex)] == ["```SQL", "select"]


def test_execution_spans_are_names_literals_and_aggregates(dbs):
    ex = example(dbs, "SELECT 1")
    r = (
        "Sure.\n```sql\nSELECT category, COUNT(*) FROM products -- per category\n"
        "WHERE price > 20.5 AND name <> 'Kite' GROUP BY category\n```"
    )
    got = [r[a:b] for a, b in EXE.relevant_spans(r, ex)]
    assert got == ["category", "COUNT", "products", "price", "20.5", "name", "'Kite'", "category"]
    assert EXE.relevant_spans("no query", ex) is None
    r = "```\nSELECT MAX(price) FROM products"
    assert [r[a:b] for a, b in EXE.relevant_spans(r, ex)] == ["MAX", "price", "products"]


def test_information(dbs):
    ex = example(dbs, "SELECT name FROM products ORDER BY price DESC LIMIT 2")
    top = [r[1] for r in sorted(t2s.DATABASES["shop"].tables[0].rows, key=lambda r: -r[2])[:2]]
    assert EXE.info(ex) == (
        "The query runs on the shop database and must return the same rows, in this order, "
        "as the gold query SELECT name FROM products ORDER BY price DESC LIMIT 2. "
        f"It returns 2 rows: ('{top[0]}'), ('{top[1]}')."
    )
    assert "```sql" in FMT.info(ex) and "SELECT" in FMT.info(ex)


# ------------------------------------------------------------------------------------------- generator / data
def test_generator_is_deterministic_and_regular():
    a, b = t2s.generate(300, seed=3), t2s.generate(300, seed=3)
    assert a == b and a != t2s.generate(300, seed=4)
    assert len({ex.prompt for ex in a}) == 300  # distinct while the prompt space is far from used up
    assert [t2s.prompt_space(db) for db in t2s.DATABASES.values()] == [387, 421, 469]
    assert {len(db.templates) for db in t2s.DATABASES.values()} <= set(range(38, 45))
    for ex in a:
        sql = ex.meta["gold_sql"]
        assert ex.task == "text_to_sql" and ex.verifiers == ("sql.format", "sql.execution")
        assert ex.reference == f"```sql\n{sql}\n```" and "  " not in sql and sql.startswith("SELECT ")
        assert ex.meta["ordered"] == (" ORDER BY " in sql)
        assert ex.prompt.startswith("Schema: ") and " Question: " in ex.prompt and len(ex.prompt.split()) <= 60


def test_build_is_idempotent_and_matches_the_bundled_databases(tmp_path):
    first = t2s.build_databases(tmp_path)
    digests = {k: p.read_bytes() for k, p in first.items()}
    second = t2s.build_databases(tmp_path)
    assert {k: p.read_bytes() for k, p in second.items()} == digests
    for name, path in first.items():
        built, bundled = sqlite3.connect(path), sqlite3.connect(SAMPLE_DATA / "databases" / f"{name}.sqlite")
        assert list(built.iterdump()) == list(bundled.iterdump())
        built.close(), bundled.close()


def test_every_gold_reference_scores_one_on_the_sample_data():
    examples = load_examples("text_to_sql", split="all")
    assert len(examples) == 400
    assert {ex.meta["db"] for ex in examples} == {"shop", "school", "company"}
    train = {ex.prompt for ex in load_examples("text_to_sql", split="train")}
    test = {ex.prompt for ex in load_examples("text_to_sql", split="test")}
    assert (len(train), len(test), len(train & test)) == (300, 100, 0)
    scores = [(FMT.score(ex.reference, ex), EXE.score(ex.reference, ex)) for ex in examples]
    assert scores == [(1.0, 1.0)] * len(examples)
    assert not any(math.isnan(s) for pair in scores for s in pair)


def test_rows_compare_as_multisets_unless_ordered():
    from mrtpo_viz.tasks.sql import compare_rows, db_path, main_verb, statements, tokenize

    assert compare_rows([(1,), (2,)], [(2,), (1,)], ordered=False).score == 1.0
    assert compare_rows([(1,), (2,)], [(2,), (1,)], ordered=True).reason.startswith("right rows in the wrong order")
    assert compare_rows([(1.0000001,)], [(1,)], ordered=False).score == 1.0  # floats round to 6 decimals
    assert "2 columns, expected 1" in compare_rows([(1, 2)], [(1,)], ordered=False).reason
    stmt = statements(tokenize("WITH x AS (SELECT 1) SELECT * FROM x; DROP TABLE y"))
    assert len(stmt) == 2 and main_verb(stmt[0]).text == "SELECT" and main_verb(stmt[1]).text == "DROP"
    with pytest.raises(ValueError, match="must name a bundled database"):
        db_path(Example("text_to_sql", "q", {"db": "../../etc/passwd"}))


def test_execution_declares_its_arguments_and_a_free_prompt_needs_them():
    from mrtpo_viz.tasks import MissingArguments

    names = [a.name for a in EXE.arguments]
    assert names == ["db", "gold_sql", "ordered"] and FMT.arguments == ()
    db = EXE.arguments[0]
    assert db.kind == "choice" and db.choices == ("company", "school", "shop")  # the bundled databases
    free = Example(task="text_to_sql", prompt="List the products over 20.")
    assert EXE.missing_args(free) == ["db", "gold_sql"]  # `ordered` is optional
    with pytest.raises(MissingArguments, match="gold_sql"):
        EXE.info(free)
    filled = EXE.with_args(free, {"db": "shop", "gold_sql": "SELECT name FROM products WHERE price > 20"})
    assert EXE.missing_args(filled) == [] and "shop database" in EXE.info(filled)
    answer = block("SELECT name FROM products WHERE price > 20")
    assert EXE.score(answer, filled) == 1.0 and EXE.score(block("SELECT name FROM products"), filled) == 0.0
    assert FMT.missing_args(free) == [] and FMT.score(answer, free) == 1.0
