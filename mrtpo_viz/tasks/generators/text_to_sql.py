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
import os
import random
import re
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..base import Example
from . import draw_unique

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
_J_ORD_CUST = "JOIN customers ON orders.customer_id = customers.id"
_J_ORD_PROD = "JOIN products ON orders.product_id = products.id"
SHOP_TEMPLATES = (
    ("Which products cost more than {price}?", "SELECT name FROM products WHERE price > {price}"),
    ("Which products cost less than {price}?", "SELECT name FROM products WHERE price < {price}"),
    ("How many products cost more than {price}?", "SELECT COUNT(*) FROM products WHERE price > {price}"),
    ("Which products cost between {lo} and {hi}?", "SELECT name FROM products WHERE price BETWEEN {lo} AND {hi}"),
    ("List the products in the {cat} category.", "SELECT name FROM products WHERE category = '{cat}'"),
    ("How many products are in the {cat} category?", "SELECT COUNT(*) FROM products WHERE category = '{cat}'"),
    ("What is the average price of {cat} products?", "SELECT AVG(price) FROM products WHERE category = '{cat}'"),
    ("What is the total price of all {cat} products?", "SELECT SUM(price) FROM products WHERE category = '{cat}'"),
    ("Which {cat} products cost less than {price}?",
     "SELECT name FROM products WHERE category = '{cat}' AND price < {price}"),
    ("List the products in the {cat} or {cat2} category.",
     "SELECT name FROM products WHERE category IN ('{cat}', '{cat2}')"),
    ("What is the most expensive product?", "SELECT name FROM products ORDER BY price DESC LIMIT 1"),
    ("List the {k} cheapest products.", "SELECT name FROM products ORDER BY price LIMIT {k}"),
    ("List the {n} most expensive {cat} products.",
     "SELECT name FROM products WHERE category = '{cat}' ORDER BY price DESC LIMIT {n}"),
    ("What is the cheapest product in the {cat} category?",
     "SELECT name FROM products WHERE category = '{cat}' ORDER BY price LIMIT 1"),
    ("List all products from the most to the least expensive.", "SELECT name FROM products ORDER BY price DESC"),
    ("How many products does each category have?", "SELECT category, COUNT(*) FROM products GROUP BY category"),
    ("What is the highest price in each category?", "SELECT category, MAX(price) FROM products GROUP BY category"),
    ("Which categories have more than {m} products?",
     "SELECT category FROM products GROUP BY category HAVING COUNT(*) > {m}"),
    ("List the distinct product categories.", "SELECT DISTINCT category FROM products"),
    ("What is the average price of all products?", "SELECT AVG(price) FROM products"),
    ("What is the price of the {product}?", "SELECT price FROM products WHERE name = '{product}'"),
    ("Which category is the {product} in?", "SELECT category FROM products WHERE name = '{product}'"),
    ("Which customers live in {city}?", "SELECT name FROM customers WHERE city = '{city}'"),
    ("How many customers live in {city}?", "SELECT COUNT(*) FROM customers WHERE city = '{city}'"),
    ("How many customers are there in each city?", "SELECT city, COUNT(*) FROM customers GROUP BY city"),
    ("Which cities have more than {n} customers?", "SELECT city FROM customers GROUP BY city HAVING COUNT(*) > {n}"),
    ("List all customer names in alphabetical order.", "SELECT name FROM customers ORDER BY name"),
    ("Which city does {name} live in?", "SELECT city FROM customers WHERE name = '{name}'"),
    ("How many orders were placed in {year}?", "SELECT COUNT(*) FROM orders WHERE year = {year}"),
    ("What is the total quantity ordered in {year}?", "SELECT SUM(quantity) FROM orders WHERE year = {year}"),
    ("How many orders have a quantity of at least {qty}?", "SELECT COUNT(*) FROM orders WHERE quantity >= {qty}"),
    ("How many orders were placed in each year?", "SELECT year, COUNT(*) FROM orders GROUP BY year"),
    ("What is the average quantity per order?", "SELECT AVG(quantity) FROM orders"),
    ("Which customers placed an order in {year}?",
     f"SELECT DISTINCT customers.name FROM orders {_J_ORD_CUST} WHERE orders.year = {{year}}"),
    ("How many orders did {name} place?",
     f"SELECT COUNT(*) FROM orders {_J_ORD_CUST} WHERE customers.name = '{{name}}'"),
    ("Which products did {name} order?",
     f"SELECT DISTINCT products.name FROM orders {_J_ORD_PROD} {_J_ORD_CUST} WHERE customers.name = '{{name}}'"),
    ("How many orders does each customer have?",
     f"SELECT customers.name, COUNT(*) FROM orders {_J_ORD_CUST} GROUP BY customers.name"),
    ("What is the total quantity ordered of each product?",
     f"SELECT products.name, SUM(orders.quantity) FROM orders {_J_ORD_PROD} GROUP BY products.name"),
    ("Which customers from {city} placed orders?",
     f"SELECT DISTINCT customers.name FROM orders {_J_ORD_CUST} WHERE customers.city = '{{city}}'"),
    ("How many units of {cat} products were ordered?",
     f"SELECT SUM(orders.quantity) FROM orders {_J_ORD_PROD} WHERE products.category = '{{cat}}'"),
    ("How many orders of the {product} were placed?",
     f"SELECT COUNT(*) FROM orders {_J_ORD_PROD} WHERE products.name = '{{product}}'"),
)

_J_ENR_STU = "JOIN students ON enrollments.student_id = students.id"
_J_ENR_CRS = "JOIN courses ON enrollments.course_id = courses.id"
SCHOOL_TEMPLATES = (
    ("Which students are in grade {grade}?", "SELECT name FROM students WHERE grade = {grade}"),
    ("Which students are in grade {grade} or above?", "SELECT name FROM students WHERE grade >= {grade}"),
    ("How many students are in grade {grade}?", "SELECT COUNT(*) FROM students WHERE grade = {grade}"),
    ("How many students are in each grade?", "SELECT grade, COUNT(*) FROM students GROUP BY grade"),
    ("Which students live in {city}?", "SELECT name FROM students WHERE city = '{city}'"),
    ("How many students live in {city}?", "SELECT COUNT(*) FROM students WHERE city = '{city}'"),
    ("Which students in grade {grade} live in {city}?",
     "SELECT name FROM students WHERE grade = {grade} AND city = '{city}'"),
    ("How many students live in each city?", "SELECT city, COUNT(*) FROM students GROUP BY city"),
    ("Which cities have more than {m} students?", "SELECT city FROM students GROUP BY city HAVING COUNT(*) > {m}"),
    ("List the distinct cities of the students.", "SELECT DISTINCT city FROM students"),
    ("List all student names in alphabetical order.", "SELECT name FROM students ORDER BY name"),
    ("Which grade is {student} in?", "SELECT grade FROM students WHERE name = '{student}'"),
    ("Which city is {student} from?", "SELECT city FROM students WHERE name = '{student}'"),
    ("Which courses are worth {credits} credits?", "SELECT title FROM courses WHERE credits = {credits}"),
    ("Which courses are worth more than {credits} credits?", "SELECT title FROM courses WHERE credits > {credits}"),
    ("Who teaches {course}?", "SELECT teacher FROM courses WHERE title = '{course}'"),
    ("Which courses does {teacher} teach?", "SELECT title FROM courses WHERE teacher = '{teacher}'"),
    ("How many credits is {course} worth?", "SELECT credits FROM courses WHERE title = '{course}'"),
    ("What is the total number of credits of all courses?", "SELECT SUM(credits) FROM courses"),
    ("How many courses are there for each credit value?", "SELECT credits, COUNT(*) FROM courses GROUP BY credits"),
    ("List all course titles in alphabetical order.", "SELECT title FROM courses ORDER BY title"),
    ("How many courses does each teacher teach?", "SELECT teacher, COUNT(*) FROM courses GROUP BY teacher"),
    ("Which teachers teach more than one course?",
     "SELECT teacher FROM courses GROUP BY teacher HAVING COUNT(*) > 1"),
    ("How many enrollments have a score above {score}?", "SELECT COUNT(*) FROM enrollments WHERE score > {score}"),
    ("What is the average score over all enrollments?", "SELECT AVG(score) FROM enrollments"),
    ("What is the average score in {course}?",
     f"SELECT AVG(enrollments.score) FROM enrollments {_J_ENR_CRS} WHERE courses.title = '{{course}}'"),
    ("What is the highest score in {course}?",
     f"SELECT MAX(enrollments.score) FROM enrollments {_J_ENR_CRS} WHERE courses.title = '{{course}}'"),
    ("What is the lowest score in {course}?",
     f"SELECT MIN(enrollments.score) FROM enrollments {_J_ENR_CRS} WHERE courses.title = '{{course}}'"),
    ("How many students are enrolled in {course}?",
     f"SELECT COUNT(*) FROM enrollments {_J_ENR_CRS} WHERE courses.title = '{{course}}'"),
    ("Which students are enrolled in {course}?",
     f"SELECT students.name FROM enrollments {_J_ENR_STU} {_J_ENR_CRS} WHERE courses.title = '{{course}}'"),
    ("Which courses is {student} enrolled in?",
     f"SELECT courses.title FROM enrollments {_J_ENR_CRS} {_J_ENR_STU} WHERE students.name = '{{student}}'"),
    ("What is the average score of {student}?",
     f"SELECT AVG(enrollments.score) FROM enrollments {_J_ENR_STU} WHERE students.name = '{{student}}'"),
    ("How many courses is {student} taking?",
     f"SELECT COUNT(*) FROM enrollments {_J_ENR_STU} WHERE students.name = '{{student}}'"),
    ("How many students are enrolled in each course?",
     f"SELECT courses.title, COUNT(*) FROM enrollments {_J_ENR_CRS} GROUP BY courses.title"),
    ("What is the average score in each course?",
     f"SELECT courses.title, AVG(enrollments.score) FROM enrollments {_J_ENR_CRS} GROUP BY courses.title"),
    ("What is the highest score of each student?",
     f"SELECT students.name, MAX(enrollments.score) FROM enrollments {_J_ENR_STU} GROUP BY students.name"),
    ("Which students scored above {score} in {course}?",
     f"SELECT students.name FROM enrollments {_J_ENR_STU} {_J_ENR_CRS} "
     "WHERE courses.title = '{course}' AND enrollments.score > {score}"),
    ("Which students scored below {score} in some course?",
     f"SELECT DISTINCT students.name FROM enrollments {_J_ENR_STU} WHERE enrollments.score < {{score}}"),
    ("Who got the top score in {course}?",
     f"SELECT students.name FROM enrollments {_J_ENR_STU} {_J_ENR_CRS} "
     "WHERE courses.title = '{course}' ORDER BY enrollments.score DESC LIMIT 1"),
    ("How many different students does {teacher} teach?",
     f"SELECT COUNT(DISTINCT enrollments.student_id) FROM enrollments {_J_ENR_CRS} "
     "WHERE courses.teacher = '{teacher}'"),
)

_J_EMP_DEP = "JOIN departments ON employees.department_id = departments.id"
_J_PRJ_DEP = "JOIN departments ON projects.department_id = departments.id"
COMPANY_TEMPLATES = (
    ("Which employees earn more than {salary}?", "SELECT name FROM employees WHERE salary > {salary}"),
    ("Which employees earn less than {salary}?", "SELECT name FROM employees WHERE salary < {salary}"),
    ("How many employees earn more than {salary}?", "SELECT COUNT(*) FROM employees WHERE salary > {salary}"),
    ("Which employees earn between {lo} and {hi}?",
     "SELECT name FROM employees WHERE salary BETWEEN {lo} AND {hi}"),
    ("Which employees were hired in {year}?", "SELECT name FROM employees WHERE hire_year = {year}"),
    ("How many employees were hired after {year}?", "SELECT COUNT(*) FROM employees WHERE hire_year > {year}"),
    ("Which employees were hired before {year} and earn more than {salary}?",
     "SELECT name FROM employees WHERE hire_year < {year} AND salary > {salary}"),
    ("How many employees were hired in each year?",
     "SELECT hire_year, COUNT(*) FROM employees GROUP BY hire_year"),
    ("What is the average salary of all employees?", "SELECT AVG(salary) FROM employees"),
    ("What is the highest salary?", "SELECT MAX(salary) FROM employees"),
    ("Who earns the highest salary?", "SELECT name FROM employees ORDER BY salary DESC LIMIT 1"),
    ("List the {k} best paid employees.", "SELECT name FROM employees ORDER BY salary DESC LIMIT {k}"),
    ("List the {k} lowest paid employees.", "SELECT name FROM employees ORDER BY salary LIMIT {k}"),
    ("List all employee names in alphabetical order.", "SELECT name FROM employees ORDER BY name"),
    ("What is the salary of {emp}?", "SELECT salary FROM employees WHERE name = '{emp}'"),
    ("In which year was {emp} hired?", "SELECT hire_year FROM employees WHERE name = '{emp}'"),
    ("Which departments are in {city}?", "SELECT name FROM departments WHERE city = '{city}'"),
    ("How many departments are in {city}?", "SELECT COUNT(*) FROM departments WHERE city = '{city}'"),
    ("In which city is the {dept} department?", "SELECT city FROM departments WHERE name = '{dept}'"),
    ("List the distinct cities of the departments.", "SELECT DISTINCT city FROM departments"),
    ("Who works in the {dept} department?",
     f"SELECT employees.name FROM employees {_J_EMP_DEP} WHERE departments.name = '{{dept}}'"),
    ("How many employees work in the {dept} department?",
     f"SELECT COUNT(*) FROM employees {_J_EMP_DEP} WHERE departments.name = '{{dept}}'"),
    ("What is the average salary in the {dept} department?",
     f"SELECT AVG(employees.salary) FROM employees {_J_EMP_DEP} WHERE departments.name = '{{dept}}'"),
    ("What is the total salary paid in the {dept} department?",
     f"SELECT SUM(employees.salary) FROM employees {_J_EMP_DEP} WHERE departments.name = '{{dept}}'"),
    ("Which employees in the {dept} department earn more than {salary}?",
     f"SELECT employees.name FROM employees {_J_EMP_DEP} "
     "WHERE departments.name = '{dept}' AND employees.salary > {salary}"),
    ("Who is the best paid employee in the {dept} department?",
     f"SELECT employees.name FROM employees {_J_EMP_DEP} "
     "WHERE departments.name = '{dept}' ORDER BY employees.salary DESC LIMIT 1"),
    ("Which department does {emp} work in?",
     f"SELECT departments.name FROM employees {_J_EMP_DEP} WHERE employees.name = '{{emp}}'"),
    ("Which employees work in {city}?",
     f"SELECT employees.name FROM employees {_J_EMP_DEP} WHERE departments.city = '{{city}}'"),
    ("How many employees does each department have?",
     f"SELECT departments.name, COUNT(*) FROM employees {_J_EMP_DEP} GROUP BY departments.name"),
    ("What is the average salary in each department?",
     f"SELECT departments.name, AVG(employees.salary) FROM employees {_J_EMP_DEP} GROUP BY departments.name"),
    ("What is the highest salary in each department?",
     f"SELECT departments.name, MAX(employees.salary) FROM employees {_J_EMP_DEP} GROUP BY departments.name"),
    ("Which departments have more than {m} employees?",
     f"SELECT departments.name FROM employees {_J_EMP_DEP} GROUP BY departments.name HAVING COUNT(*) > {{m}}"),
    ("Which projects have a budget over {budget}?", "SELECT name FROM projects WHERE budget > {budget}"),
    ("How many projects have a budget over {budget}?", "SELECT COUNT(*) FROM projects WHERE budget > {budget}"),
    ("What is the total budget of all projects?", "SELECT SUM(budget) FROM projects"),
    ("Which project has the largest budget?", "SELECT name FROM projects ORDER BY budget DESC LIMIT 1"),
    ("List all projects from the largest to the smallest budget.", "SELECT name FROM projects ORDER BY budget DESC"),
    ("List the projects of the {dept} department.",
     f"SELECT projects.name FROM projects {_J_PRJ_DEP} WHERE departments.name = '{{dept}}'"),
    ("What is the total project budget of each department?",
     f"SELECT departments.name, SUM(projects.budget) FROM projects {_J_PRJ_DEP} GROUP BY departments.name"),
    ("How many projects does each department run?",
     f"SELECT departments.name, COUNT(*) FROM projects {_J_PRJ_DEP} GROUP BY departments.name"),
)

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
    fd, tmp = tempfile.mkstemp(suffix=".sqlite", dir=path.parent)
    os.close(fd)
    os.unlink(tmp)  # sqlite creates it fresh
    try:
        conn = sqlite3.connect(tmp)
        try:
            for table in db.tables:
                conn.execute(table.ddl())
                marks = ", ".join("?" * len(table.columns))
                conn.executemany(f"INSERT INTO {table.name} VALUES ({marks})", table.rows)
            conn.commit()
        finally:
            conn.close()
        if path.is_file() and path.read_bytes() == Path(tmp).read_bytes():
            return path
        os.replace(tmp, path)
        return path
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


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
    return Example(task=TASK, prompt=f"{schema_prompt(db, sql)} Question: {question}",
                   meta={"db": db.name, "gold_sql": sql, "ordered": " ORDER BY " in sql},
                   reference=f"```sql\n{sql}\n```", verifiers=VERIFIERS)


def prompt_space(db: Database) -> int:
    """How many distinct prompts the templates of ``db`` can make (the product of slot pool sizes, summed)."""
    return sum(math.prod(len(db.slots[pool]) for pool, _ in dict.fromkeys(_SLOT.findall(q + " " + sql)))
               for q, sql in db.templates)


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
        draw = lambda: make_example(db.name, rng.randrange(len(db.templates)), rng)  # noqa: E731
        out.append(draw_unique(draw, seen[db.name], tries))
    return out
