"""Time the SQL sandbox and the text-to-SQL verifiers; write benchmarks/results/sql_sandbox.json.

Measures: each hostile query's wall time and verdict (they must score 0 within a second and leave the database
file byte-identical), a catastrophic user regex in a declarative verifier, example generation speed, and the
throughput of sql.format + sql.execution on gold references.  Usage: python benchmarks/sql_sandbox.py
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mrtpo_viz.tasks.generators.text_to_sql import build_databases, generate  # noqa: E402
from mrtpo_viz.tasks.base import Example  # noqa: E402
from mrtpo_viz.tasks import get_verifier  # noqa: E402
from mrtpo_viz.tasks.custom import DeclarativeSpec, build_declarative  # noqa: E402

HOSTILE = {
    "insert": "INSERT INTO products VALUES (99, 'x', 1, 'toys')",
    "update": "UPDATE products SET price = 0",
    "delete": "DELETE FROM orders",
    "drop": "DROP TABLE customers",
    "attach": "ATTACH DATABASE '/tmp/mrtpo_attack.db' AS x",
    "pragma": "PRAGMA journal_mode = WAL",
    "endless_recursive_cte": "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT COUNT(*) FROM r",
    "doubling_string_cte": "WITH RECURSIVE r(s) AS (SELECT 'ab' UNION ALL SELECT s || s FROM r) "
    "SELECT MAX(LENGTH(s)) FROM r",
    "huge_randomblob": "SELECT length(randomblob(1000000000))",
    "huge_printf": "SELECT printf('%.*c', 1000000000, 'x')",
    "load_extension": "SELECT load_extension('/tmp/evil')",
    "cross_join_6": "SELECT COUNT(*) FROM orders a, orders b, orders c, orders d, orders e, orders f",
}


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> int:
    exe, fmt = get_verifier("sql.execution"), get_verifier("sql.format")
    with tempfile.TemporaryDirectory() as tmp:
        shop = build_databases(tmp)["shop"]
        digest = hashlib.sha256(shop.read_bytes()).hexdigest()
        ex = Example(
            task="text_to_sql",
            prompt="q",
            meta={"db": "shop", "db_path": str(shop), "gold_sql": "SELECT COUNT(*) FROM orders"},
        )
        hostile = {}
        for name, sql in HOSTILE.items():
            verdict, secs = _timed(lambda sql=sql: exe.check(f"```sql\n{sql}\n```", ex))
            hostile[name] = {"score": verdict.score, "reason": verdict.reason, "seconds": round(secs, 4)}
        unchanged = hashlib.sha256(shop.read_bytes()).hexdigest() == digest
    regex_v = build_declarative(DeclarativeSpec("bench.regex", "r", "i", "regex_must", pattern=r"(a|aa)+$"))
    verdict, regex_secs = _timed(lambda: regex_v.check("a" * 60 + "!", ex))
    examples, gen_secs = _timed(lambda: generate(3000, seed=0))
    _, verify_secs = _timed(lambda: [(fmt.score(e.reference, e), exe.score(e.reference, e)) for e in examples])
    result = {
        "machine": platform.platform(),
        "python": platform.python_version(),
        "hostile_queries": hostile,
        "database_byte_identical": unchanged,
        "max_hostile_seconds": max(h["seconds"] for h in hostile.values()),
        "all_hostile_score_zero": all(h["score"] == 0.0 for h in hostile.values()),
        "catastrophic_regex": {"score": verdict.score, "reason": verdict.reason, "seconds": round(regex_secs, 3)},
        "generate_3000_seconds": round(gen_secs, 3),
        "verify_3000_gold_seconds": round(verify_secs, 3),
    }
    out = ROOT / "benchmarks" / "results" / "sql_sandbox.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "hostile_queries"}, indent=2))
    return 0 if result["all_hostile_score_zero"] and unchanged else 1


if __name__ == "__main__":
    raise SystemExit(main())
