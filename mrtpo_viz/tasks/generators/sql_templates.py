"""Question / gold-SQL templates of the three bundled databases (about 40 each): filters, joins, aggregates,
GROUP BY / HAVING, ORDER BY and LIMIT. Slots in braces are filled by :func:`.text_to_sql.generate` with values drawn
from the data."""

from __future__ import annotations

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
    (
        "Which {cat} products cost less than {price}?",
        "SELECT name FROM products WHERE category = '{cat}' AND price < {price}",
    ),
    (
        "List the products in the {cat} or {cat2} category.",
        "SELECT name FROM products WHERE category IN ('{cat}', '{cat2}')",
    ),
    ("What is the most expensive product?", "SELECT name FROM products ORDER BY price DESC LIMIT 1"),
    ("List the {k} cheapest products.", "SELECT name FROM products ORDER BY price LIMIT {k}"),
    (
        "List the {n} most expensive {cat} products.",
        "SELECT name FROM products WHERE category = '{cat}' ORDER BY price DESC LIMIT {n}",
    ),
    (
        "What is the cheapest product in the {cat} category?",
        "SELECT name FROM products WHERE category = '{cat}' ORDER BY price LIMIT 1",
    ),
    ("List all products from the most to the least expensive.", "SELECT name FROM products ORDER BY price DESC"),
    ("How many products does each category have?", "SELECT category, COUNT(*) FROM products GROUP BY category"),
    ("What is the highest price in each category?", "SELECT category, MAX(price) FROM products GROUP BY category"),
    (
        "Which categories have more than {m} products?",
        "SELECT category FROM products GROUP BY category HAVING COUNT(*) > {m}",
    ),
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
    (
        "Which customers placed an order in {year}?",
        f"SELECT DISTINCT customers.name FROM orders {_J_ORD_CUST} WHERE orders.year = {{year}}",
    ),
    (
        "How many orders did {name} place?",
        f"SELECT COUNT(*) FROM orders {_J_ORD_CUST} WHERE customers.name = '{{name}}'",
    ),
    (
        "Which products did {name} order?",
        f"SELECT DISTINCT products.name FROM orders {_J_ORD_PROD} {_J_ORD_CUST} WHERE customers.name = '{{name}}'",
    ),
    (
        "How many orders does each customer have?",
        f"SELECT customers.name, COUNT(*) FROM orders {_J_ORD_CUST} GROUP BY customers.name",
    ),
    (
        "What is the total quantity ordered of each product?",
        f"SELECT products.name, SUM(orders.quantity) FROM orders {_J_ORD_PROD} GROUP BY products.name",
    ),
    (
        "Which customers from {city} placed orders?",
        f"SELECT DISTINCT customers.name FROM orders {_J_ORD_CUST} WHERE customers.city = '{{city}}'",
    ),
    (
        "How many units of {cat} products were ordered?",
        f"SELECT SUM(orders.quantity) FROM orders {_J_ORD_PROD} WHERE products.category = '{{cat}}'",
    ),
    (
        "How many orders of the {product} were placed?",
        f"SELECT COUNT(*) FROM orders {_J_ORD_PROD} WHERE products.name = '{{product}}'",
    ),
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
    (
        "Which students in grade {grade} live in {city}?",
        "SELECT name FROM students WHERE grade = {grade} AND city = '{city}'",
    ),
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
    ("Which teachers teach more than one course?", "SELECT teacher FROM courses GROUP BY teacher HAVING COUNT(*) > 1"),
    ("How many enrollments have a score above {score}?", "SELECT COUNT(*) FROM enrollments WHERE score > {score}"),
    ("What is the average score over all enrollments?", "SELECT AVG(score) FROM enrollments"),
    (
        "What is the average score in {course}?",
        f"SELECT AVG(enrollments.score) FROM enrollments {_J_ENR_CRS} WHERE courses.title = '{{course}}'",
    ),
    (
        "What is the highest score in {course}?",
        f"SELECT MAX(enrollments.score) FROM enrollments {_J_ENR_CRS} WHERE courses.title = '{{course}}'",
    ),
    (
        "What is the lowest score in {course}?",
        f"SELECT MIN(enrollments.score) FROM enrollments {_J_ENR_CRS} WHERE courses.title = '{{course}}'",
    ),
    (
        "How many students are enrolled in {course}?",
        f"SELECT COUNT(*) FROM enrollments {_J_ENR_CRS} WHERE courses.title = '{{course}}'",
    ),
    (
        "Which students are enrolled in {course}?",
        f"SELECT students.name FROM enrollments {_J_ENR_STU} {_J_ENR_CRS} WHERE courses.title = '{{course}}'",
    ),
    (
        "Which courses is {student} enrolled in?",
        f"SELECT courses.title FROM enrollments {_J_ENR_CRS} {_J_ENR_STU} WHERE students.name = '{{student}}'",
    ),
    (
        "What is the average score of {student}?",
        f"SELECT AVG(enrollments.score) FROM enrollments {_J_ENR_STU} WHERE students.name = '{{student}}'",
    ),
    (
        "How many courses is {student} taking?",
        f"SELECT COUNT(*) FROM enrollments {_J_ENR_STU} WHERE students.name = '{{student}}'",
    ),
    (
        "How many students are enrolled in each course?",
        f"SELECT courses.title, COUNT(*) FROM enrollments {_J_ENR_CRS} GROUP BY courses.title",
    ),
    (
        "What is the average score in each course?",
        f"SELECT courses.title, AVG(enrollments.score) FROM enrollments {_J_ENR_CRS} GROUP BY courses.title",
    ),
    (
        "What is the highest score of each student?",
        f"SELECT students.name, MAX(enrollments.score) FROM enrollments {_J_ENR_STU} GROUP BY students.name",
    ),
    (
        "Which students scored above {score} in {course}?",
        f"SELECT students.name FROM enrollments {_J_ENR_STU} {_J_ENR_CRS} "
        "WHERE courses.title = '{course}' AND enrollments.score > {score}",
    ),
    (
        "Which students scored below {score} in some course?",
        f"SELECT DISTINCT students.name FROM enrollments {_J_ENR_STU} WHERE enrollments.score < {{score}}",
    ),
    (
        "Who got the top score in {course}?",
        f"SELECT students.name FROM enrollments {_J_ENR_STU} {_J_ENR_CRS} "
        "WHERE courses.title = '{course}' ORDER BY enrollments.score DESC LIMIT 1",
    ),
    (
        "How many different students does {teacher} teach?",
        f"SELECT COUNT(DISTINCT enrollments.student_id) FROM enrollments {_J_ENR_CRS} "
        "WHERE courses.teacher = '{teacher}'",
    ),
)

_J_EMP_DEP = "JOIN departments ON employees.department_id = departments.id"
_J_PRJ_DEP = "JOIN departments ON projects.department_id = departments.id"
COMPANY_TEMPLATES = (
    ("Which employees earn more than {salary}?", "SELECT name FROM employees WHERE salary > {salary}"),
    ("Which employees earn less than {salary}?", "SELECT name FROM employees WHERE salary < {salary}"),
    ("How many employees earn more than {salary}?", "SELECT COUNT(*) FROM employees WHERE salary > {salary}"),
    ("Which employees earn between {lo} and {hi}?", "SELECT name FROM employees WHERE salary BETWEEN {lo} AND {hi}"),
    ("Which employees were hired in {year}?", "SELECT name FROM employees WHERE hire_year = {year}"),
    ("How many employees were hired after {year}?", "SELECT COUNT(*) FROM employees WHERE hire_year > {year}"),
    (
        "Which employees were hired before {year} and earn more than {salary}?",
        "SELECT name FROM employees WHERE hire_year < {year} AND salary > {salary}",
    ),
    ("How many employees were hired in each year?", "SELECT hire_year, COUNT(*) FROM employees GROUP BY hire_year"),
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
    (
        "Who works in the {dept} department?",
        f"SELECT employees.name FROM employees {_J_EMP_DEP} WHERE departments.name = '{{dept}}'",
    ),
    (
        "How many employees work in the {dept} department?",
        f"SELECT COUNT(*) FROM employees {_J_EMP_DEP} WHERE departments.name = '{{dept}}'",
    ),
    (
        "What is the average salary in the {dept} department?",
        f"SELECT AVG(employees.salary) FROM employees {_J_EMP_DEP} WHERE departments.name = '{{dept}}'",
    ),
    (
        "What is the total salary paid in the {dept} department?",
        f"SELECT SUM(employees.salary) FROM employees {_J_EMP_DEP} WHERE departments.name = '{{dept}}'",
    ),
    (
        "Which employees in the {dept} department earn more than {salary}?",
        f"SELECT employees.name FROM employees {_J_EMP_DEP} "
        "WHERE departments.name = '{dept}' AND employees.salary > {salary}",
    ),
    (
        "Who is the best paid employee in the {dept} department?",
        f"SELECT employees.name FROM employees {_J_EMP_DEP} "
        "WHERE departments.name = '{dept}' ORDER BY employees.salary DESC LIMIT 1",
    ),
    (
        "Which department does {emp} work in?",
        f"SELECT departments.name FROM employees {_J_EMP_DEP} WHERE employees.name = '{{emp}}'",
    ),
    (
        "Which employees work in {city}?",
        f"SELECT employees.name FROM employees {_J_EMP_DEP} WHERE departments.city = '{{city}}'",
    ),
    (
        "How many employees does each department have?",
        f"SELECT departments.name, COUNT(*) FROM employees {_J_EMP_DEP} GROUP BY departments.name",
    ),
    (
        "What is the average salary in each department?",
        f"SELECT departments.name, AVG(employees.salary) FROM employees {_J_EMP_DEP} GROUP BY departments.name",
    ),
    (
        "What is the highest salary in each department?",
        f"SELECT departments.name, MAX(employees.salary) FROM employees {_J_EMP_DEP} GROUP BY departments.name",
    ),
    (
        "Which departments have more than {m} employees?",
        f"SELECT departments.name FROM employees {_J_EMP_DEP} GROUP BY departments.name HAVING COUNT(*) > {{m}}",
    ),
    ("Which projects have a budget over {budget}?", "SELECT name FROM projects WHERE budget > {budget}"),
    ("How many projects have a budget over {budget}?", "SELECT COUNT(*) FROM projects WHERE budget > {budget}"),
    ("What is the total budget of all projects?", "SELECT SUM(budget) FROM projects"),
    ("Which project has the largest budget?", "SELECT name FROM projects ORDER BY budget DESC LIMIT 1"),
    ("List all projects from the largest to the smallest budget.", "SELECT name FROM projects ORDER BY budget DESC"),
    (
        "List the projects of the {dept} department.",
        f"SELECT projects.name FROM projects {_J_PRJ_DEP} WHERE departments.name = '{{dept}}'",
    ),
    (
        "What is the total project budget of each department?",
        f"SELECT departments.name, SUM(projects.budget) FROM projects {_J_PRJ_DEP} GROUP BY departments.name",
    ),
    (
        "How many projects does each department run?",
        f"SELECT departments.name, COUNT(*) FROM projects {_J_PRJ_DEP} GROUP BY departments.name",
    ),
)
