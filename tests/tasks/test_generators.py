"""The sample-data generators: deterministic for a seed, no repeated prompts, every gold reference passes, and every
SQL template runs on its database."""
import importlib
import random

import pytest

from mrtpo_viz.tasks import get_verifier
from mrtpo_viz.tasks.generators import FAMILY_MODULES, draw_unique
from mrtpo_viz.tasks.generators import instruction_following, text_to_sql, tool_calling  # noqa: F401
from mrtpo_viz.tasks.generators.sql_templates import COMPANY_TEMPLATES, SCHOOL_TEMPLATES, SHOP_TEMPLATES
from mrtpo_viz.tasks.sandbox import run_query
from mrtpo_viz.tasks.data import database_file


@pytest.mark.parametrize("task", sorted(FAMILY_MODULES))
def test_generation_is_deterministic_unique_and_passes(task):
    gen = importlib.import_module(FAMILY_MODULES[task]).generate
    a, b = gen(60, seed=7), gen(60, seed=7)
    assert [e.to_dict() for e in a] == [e.to_dict() for e in b]
    assert [e.to_dict() for e in gen(60, seed=8)] != [e.to_dict() for e in a]
    assert len({str(e.prompt) for e in a}) == len(a)
    for ex in a:
        assert all(get_verifier(n).score(ex.reference, ex) == 1.0 for n in ex.verifiers), ex.id


@pytest.mark.parametrize("db,templates", [("shop", SHOP_TEMPLATES), ("school", SCHOOL_TEMPLATES),
                                          ("company", COMPANY_TEMPLATES)])
def test_every_template_gives_a_gold_query_that_runs(db, templates):
    assert len(templates) >= 35
    rng = random.Random(0)
    for i in range(len(templates)):
        ex = text_to_sql.make_example(db, i, rng)
        assert run_query(database_file(db), ex.meta["gold_sql"]).ok, (db, i, ex.meta["gold_sql"])


def test_draw_unique_retries_then_accepts_a_repeat():
    seen, draws = {"a"}, iter("aab")

    class Ex:
        def __init__(self, p):
            self.prompt = p

    assert draw_unique(lambda: Ex(next(draws)), seen, tries=2).prompt == "a"  # two repeats: accepted
    assert draw_unique(lambda: Ex("c"), seen).prompt == "c" and seen == {"a", "c"}
