"""Text-to-SQL examples: three small SQLite databases (shop, school, company) and question/gold-SQL templates.

The databases are built from fixed Python data by :func:`build_databases`, so a rebuild gives the same content
(and, with the same SQLite version, the same bytes). Each database has about 40 templates covering filters,
joins, aggregates, GROUP BY / HAVING, ORDER BY and LIMIT; :func:`generate` fills their slots with literal values
drawn from the data, so most gold queries return rows. Gold SQL is short and regular: uppercase keywords, single
spaces, table-qualified columns in joins. A gold query is *ordered* (its row order is compared) iff it has ORDER BY;
the columns it orders by have distinct values, so the expected order has no ties.
"""

from __future__ import annotations

import math
import random
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ...atomic import atomic_path
from ..base import Example
from . import draw_unique
from .sql_templates import COMPANY_TEMPLATES, SCHOOL_TEMPLATES, SHOP_TEMPLATES

TASK = "text_to_sql"
VERIFIERS = ("sql.format", "sql.execution")
Row = tuple


@dataclass(frozen=True)
class Table:
    """One table: its name, its columns as ``(name, sqlite type)`` and its rows."""

    name: str
    columns: tuple[tuple[str, str], ...]
    rows: tuple[Row, ...]
    foreign_keys: tuple[tuple[str, str], ...] = ()
    """``(column, "table(id)")`` pairs."""

    def ddl(self) -> str:
        cols = [f"{c} {t}" + (" PRIMARY KEY" if c == "id" else "") for c, t in self.columns]
        cols += [f"FOREIGN KEY ({c}) REFERENCES {ref}" for c, ref in self.foreign_keys]
        return f"CREATE TABLE {self.name} ({', '.join(cols)})"

    def schema_line(self) -> str:
        return f"{self.name}({', '.join(c for c, _ in self.columns)})"


@dataclass(frozen=True)
class Database:
    """A database: its tables, the value pools of its template slots, and its (question, gold SQL) templates."""

    name: str
    tables: tuple[Table, ...]
    slots: dict
    """Slot name -> tuple of values; ``cat2`` draws from the pool ``cat`` and differs from ``cat``."""
    templates: tuple[tuple[str, str], ...]


# ---------------------------------------------------------------------------------------------------- data
# a table, laid out by hand (ruff format would put one item per line)
# fmt: off
def _shop() -> Database:
    rng = random.Random(101)
    catalogue = {"books": ("Atlas", "Cookbook", "Novel", "Dictionary", "Comic", "Diary"),
                 "toys": ("Puzzle", "Kite", "Robot", "Yo-Yo", "Teddy Bear"),
                 "garden": ("Shovel", "Hose", "Rake", "Planter"),
                 "kitchen": ("Kettle", "Toaster", "Blender", "Pan", "Mug", "Teapot"),
                 "sports": ("Football", "Racket", "Helmet", "Yoga Mat")}
    items = [(n, c) for c, names in catalogue.items() for n in names]
    prices = rng.sample(range(3, 121), len(items))
    products = tuple((i + 1, n, p, c) for i, ((n, c), p) in enumerate(zip(items, prices)))
    names = ("Alice", "Bruno", "Chen", "Dana", "Emeka", "Fatima", "Goran", "Hana", "Ivan", "Julia",
             "Kofi", "Lena", "Marco", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tara")
    cities = ("Berlin", "Lima", "Osaka", "Nairobi", "Toronto")
    customers = tuple((i + 1, n, cities[i % 5] if i < 5 else rng.choice(cities)) for i, n in enumerate(names))
    orders = tuple((i + 1, rng.randint(1, len(names)), rng.randint(1, len(items)), rng.randint(1, 5),
                    rng.randint(2021, 2024)) for i in range(60))
    tables = (
        Table("products", (("id", "INTEGER"), ("name", "TEXT"), ("price", "INTEGER"), ("category", "TEXT")), products),
        Table("customers", (("id", "INTEGER"), ("name", "TEXT"), ("city", "TEXT")), customers),
        Table("orders", (("id", "INTEGER"), ("customer_id", "INTEGER"), ("product_id", "INTEGER"),
                         ("quantity", "INTEGER"), ("year", "INTEGER")), orders,
              (("customer_id", "customers(id)"), ("product_id", "products(id)"))))
    slots = {"price": tuple(range(10, 101, 10)), "lo": tuple(range(5, 41, 5)), "hi": tuple(range(50, 111, 10)),
             "k": (2, 3, 4, 5), "m": (3, 4, 5), "n": (2, 3), "qty": (2, 3, 4), "year": (2021, 2022, 2023, 2024),
             "cat": tuple(catalogue), "city": cities, "name": names, "product": tuple(n for n, _ in items)}
    return Database("shop", tables, slots, SHOP_TEMPLATES)


def _school() -> Database:
    rng = random.Random(202)
    names = ("Abel", "Bea", "Cyrus", "Dina", "Elif", "Femi", "Gia", "Hugo", "Ines", "Jonas", "Kai", "Lara",
             "Mateo", "Nora", "Oscar", "Paula", "Rafa", "Sara", "Theo", "Uma", "Vera", "Wen", "Xavi", "Yara",
             "Zane", "Amir", "Beth", "Carl", "Dora", "Eli")
    cities = ("Springfield", "Riverside", "Lakeside", "Hillview")
    students = tuple((i + 1, n, 9 + i % 4, rng.choice(cities)) for i, n in enumerate(names))
    titles = ("Algebra", "Biology", "Chemistry", "History", "Literature", "Physics", "Geography", "Art", "Music",
              "Economics")
    teachers = ("Garcia", "Okafor", "Smith", "Novak", "Tanaka", "Haddad")
    courses = tuple((i + 1, t, rng.choice((2, 3, 4, 5)), teachers[i % 6]) for i, t in enumerate(titles))
    used: dict[int, set] = {c: set() for c in range(1, 11)}
    enrollments = []
    for sid in range(1, len(names) + 1):
        for cid in sorted(rng.sample(range(1, 11), 3)):
            score = rng.choice([s for s in range(40, 101) if s not in used[cid]])  # distinct within a course
            used[cid].add(score)
            enrollments.append((len(enrollments) + 1, sid, cid, score))
    tables = (
        Table("students", (("id", "INTEGER"), ("name", "TEXT"), ("grade", "INTEGER"), ("city", "TEXT")), students),
        Table("courses", (("id", "INTEGER"), ("title", "TEXT"), ("credits", "INTEGER"), ("teacher", "TEXT")), courses),
        Table("enrollments", (("id", "INTEGER"), ("student_id", "INTEGER"), ("course_id", "INTEGER"),
                              ("score", "INTEGER")), tuple(enrollments),
              (("student_id", "students(id)"), ("course_id", "courses(id)"))))
    slots = {"grade": (9, 10, 11, 12), "city": cities, "credits": (2, 3, 4), "course": titles,
             "teacher": teachers, "student": names, "score": tuple(range(50, 96, 5)), "m": (5, 6, 7, 8)}
    return Database("school", tables, slots, SCHOOL_TEMPLATES)


def _company() -> Database:
    rng = random.Random(303)
    depts = ("Sales", "Engineering", "Marketing", "Finance", "Support", "Research")
    cities = ("London", "Madrid", "Seoul", "Austin")
    departments = tuple((i + 1, d, cities[i % 4]) for i, d in enumerate(depts))
    names = ("Ada", "Ben", "Cleo", "Dev", "Eva", "Finn", "Gwen", "Hiro", "Isla", "Jack", "Kim", "Liam", "Mona",
             "Nils", "Olga", "Pablo", "Rui", "Sofia", "Tom", "Una", "Vik", "Will", "Xena", "Yusuf", "Zoe", "Arlo",
             "Bianca", "Cole", "Dalia", "Emil", "Flora", "Gus", "Hale", "Ida", "Joel", "Kira")
    salaries = [s * 1000 for s in rng.sample(range(40, 160), len(names))]
    employees = tuple((i + 1, n, i % 6 + 1 if i < 6 else rng.randint(1, 6), salaries[i], rng.randint(2012, 2024))
                      for i, n in enumerate(names))
    pnames = ("Apollo", "Borealis", "Cascade", "Delta", "Ember", "Falcon", "Granite", "Harbor", "Iris", "Juniper",
              "Kestrel", "Lumen")
    budgets = [b * 1000 for b in rng.sample(range(20, 500), len(pnames))]
    projects = tuple((i + 1, p, rng.randint(1, 6), budgets[i]) for i, p in enumerate(pnames))
    tables = (
        Table("departments", (("id", "INTEGER"), ("name", "TEXT"), ("city", "TEXT")), departments),
        Table("employees", (("id", "INTEGER"), ("name", "TEXT"), ("department_id", "INTEGER"), ("salary", "INTEGER"),
                            ("hire_year", "INTEGER")), employees, (("department_id", "departments(id)"),)),
        Table("projects", (("id", "INTEGER"), ("name", "TEXT"), ("department_id", "INTEGER"), ("budget", "INTEGER")),
              projects, (("department_id", "departments(id)"),)))
    slots = {"salary": tuple(range(50000, 150001, 10000)), "lo": tuple(range(40000, 80001, 10000)),
             "hi": tuple(range(90000, 150001, 10000)), "year": tuple(range(2014, 2024)), "k": (2, 3, 4, 5),
             "m": (4, 5, 6), "dept": depts, "city": cities, "emp": names,
             "budget": tuple(range(50000, 450001, 50000))}
    return Database("company", tables, slots, COMPANY_TEMPLATES)


# ----------------------------------------------------------------------------------------------- templates
# fmt: on
DATABASES: dict[str, Database] = {db.name: db for db in (_shop(), _school(), _company())}
"""Name -> database; the registry that :func:`build_databases` and :func:`generate` draw from."""


# ----------------------------------------------------------------------------------------------- builders
def build_databases(directory: str | Path) -> dict[str, Path]:
    """Write ``<directory>/<name>.sqlite`` for every database; a file whose bytes would not change is left as is.

    Returns:
        Database name -> path.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return {name: _write_database(db, directory / f"{name}.sqlite") for name, db in DATABASES.items()}


def _write_database(db: Database, path: Path) -> Path:
    """Write the database atomically; an identical file already there is left untouched (its mtime too)."""
    with atomic_path(path) as tmp:
        conn = sqlite3.connect(tmp)  # sqlite creates the file
        try:
            for table in db.tables:
                conn.execute(table.ddl())
                marks = ", ".join("?" * len(table.columns))
                conn.executemany(f"INSERT INTO {table.name} VALUES ({marks})", table.rows)
            conn.commit()
        finally:
            conn.close()
        if path.is_file() and path.read_bytes() == tmp.read_bytes():
            tmp.unlink()  # nothing to move
    return path


_SLOT = re.compile(r"\{(\w+?)(\d*)\}")
_TABLE_WORD = re.compile(r"\b(?:FROM|JOIN) (\w+)")


def schema_prompt(db: Database, sql: str) -> str:
    """``"Schema: products(id, name, price, category)."`` for the tables the SQL reads, in database order."""
    used = set(_TABLE_WORD.findall(sql))
    return "Schema: " + "; ".join(t.schema_line() for t in db.tables if t.name in used) + "."


def _fill(db: Database, question: str, sql: str, rng: random.Random) -> tuple[str, str]:
    """Draw one value per slot; slots of one pool (``cat``, ``cat2``) get distinct values."""
    values: dict[str, object] = {}
    for pool, suffix in dict.fromkeys(_SLOT.findall(question + " " + sql)):
        taken = [v for k, v in values.items() if k.rstrip("0123456789") == pool]
        values[pool + suffix] = rng.choice([v for v in db.slots[pool] if v not in taken])
    return question.format(**values), sql.format(**values)


def make_example(db_name: str, template: int, rng: random.Random) -> Example:
    """One example from template number ``template`` of database ``db_name``."""
    db = DATABASES[db_name]
    question, sql = _fill(db, *db.templates[template], rng)
    return Example(
        task=TASK,
        prompt=f"{schema_prompt(db, sql)} Question: {question}",
        meta={"db": db.name, "gold_sql": sql, "ordered": " ORDER BY " in sql},
        reference=f"```sql\n{sql}\n```",
        verifiers=VERIFIERS,
    )


def prompt_space(db: Database) -> int:
    """How many distinct prompts the templates of ``db`` can make (the product of slot pool sizes, summed)."""
    return sum(
        math.prod(len(db.slots[pool]) for pool, _ in dict.fromkeys(_SLOT.findall(q + " " + sql)))
        for q, sql in db.templates
    )


def generate(n: int, seed: int = 0) -> list[Example]:
    """``n`` examples, databases in turn, a uniformly drawn template each; the same seed gives the same list.

    While less than half of a database's prompt space is drawn, a repeated prompt is redrawn (up to 15 times,
    ``draw_unique``), so a sample of a few hundred has distinct prompts and disjoint train and test splits; past
    that, repeats are accepted at once, which keeps drawing thousands cheap."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    dbs = list(DATABASES.values())
    seen: dict[str, set] = {db.name: set() for db in dbs}
    space = {db.name: prompt_space(db) for db in dbs}
    out: list[Example] = []
    for i in range(n):
        db = dbs[i % len(dbs)]
        tries = 15 if 2 * len(seen[db.name]) < space[db.name] else 1
        draw = lambda db=db: make_example(db.name, rng.randrange(len(db.templates)), rng)  # noqa: E731
        out.append(draw_unique(draw, seen[db.name], tries))
    return out
