"""Every user-supplied pattern goes through one check, one compile budget and one bounded cache
(``mrtpo_viz.tasks.patterns``): IFEval kwargs (keyword, keywords, forbidden words, postscript marker, section
splitter) from the API/MCP as well as custom verifiers.

Before, IFEval kwargs reached ``re.compile`` and ``regex.compile`` with no check: ``a{4294967294}`` as a keyword
exhausted memory through ``score_response``, ``(?:ab){100000000}`` took over 60 s and 5.9 GB, and every distinct
nested-repeat pattern stayed in the ``regex`` module's cache (~0.6 GB a request).
"""

import json
import os
import time

import pytest

from mrtpo_viz.tasks import patterns
from mrtpo_viz.tasks.custom import DeclarativeSpec, build_declarative
from mrtpo_viz.tasks.ifeval import check
from mrtpo_viz.tasks.ifeval.instructions import KwargsError, validate_kwargs
from mrtpo_viz.ui.tools import score_response

LIMIT_S = 3.0


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _score(name: str, kwargs: dict, response: str = "ab" * 50) -> dict:
    out = score_response(
        response, [name], task="instruction_following", example=-1, prompt="p", arguments={name: kwargs}
    )
    return json.loads(out)[name]


BOMBS = {  # kwarg -> what the answer says
    "huge_count": ("a{4294967294}", "counts to 4,294,967,294; at most 1,000"),
    "huge_group_count": ("(?:ab){100000000}", "counts to 100,000,000; at most 1,000"),
    "nested": ("((a{100}){100}){100}", "multiply to more than 100,000"),
    "square": ("(?:a{1000}){1000}", "multiply to more than 100,000"),
    "long": ("a" * 5000, "the pattern has 5,000 characters; at most 300"),
}


@pytest.mark.parametrize("kind", sorted(BOMBS))
def test_keyword_bombs_through_score_response(kind):
    pattern, says = BOMBS[kind]
    start = time.monotonic()
    got = _score("ifeval.keyword", {"keyword": pattern, "frequency": 1, "relation": "at least"})
    assert time.monotonic() - start < LIMIT_S
    assert got["reward"] is None and says in got["reason"] and "'keyword'" in got["reason"]
    assert len(got["reason"]) < 500


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("ifeval.include_keywords", {"keywords": ["fine", "(?:ab){100000000}"]}),
        ("ifeval.forbidden_words", {"forbidden_words": ["(?:ab){100000000}"]}),
        ("ifeval.postscript", {"postscript_marker": "(?:ab){100000000}"}),
        ("ifeval.sections", {"section_spliter": "(?:ab){100000000}", "num_sections": 1}),
    ],
)
def test_every_pattern_kwarg_is_checked(name, kwargs):
    start = time.monotonic()
    got = _score(name, kwargs)
    assert time.monotonic() - start < LIMIT_S
    assert got["reward"] is None and "counts to 100,000,000; at most 1,000" in got["reason"]


def test_a_catastrophic_pattern_that_passes_the_check_is_stopped():
    """``(x+x+)+y`` compiles fine and backtracks exponentially on ``x`` * 40 in ``re``: it runs in the worker,
    which is killed after its budget; the verdict says so."""
    kw = {"keyword": "(x+x+)+y", "frequency": 1, "relation": "at least"}
    start = time.monotonic()
    ok, reason = check("keywords:frequency", "x" * 40, kw)
    assert time.monotonic() - start < LIMIT_S
    assert not ok and f"took longer than {patterns.MATCH_BUDGET_S:g} s" in reason
    assert check("keywords:frequency", "xxy xy", kw)[0]  # the same pattern still works where it is fast


def test_memory_stays_bounded_over_distinct_patterns():
    """20 distinct nested-repeat patterns that pass the check (product 100,000: ~25 MB each once ``regex``
    expands them) as custom verifiers, and 20 as IFEval keywords. Before, each stayed in the ``regex`` module's
    cache (20 x 25 MB); now only :data:`patterns.CACHE` keeps any, within its byte bound."""
    patterns.CACHE.clear()
    before = _rss_mb()
    for i in range(20):
        start = time.monotonic()
        v = build_declarative(
            DeclarativeSpec(
                name=f"custom.p{i}", title="t", info="i", kind="regex_must", pattern=f"(?:a{{100}}b{i}){{1000}}"
            )
        )
        assert v.score("ab", None) == 0.0
        got = _score("ifeval.keyword", {"keyword": f"(?:a{{100}}c{i}){{1000}}", "frequency": 1, "relation": "at least"})
        assert got["reward"] == 0.0
        assert time.monotonic() - start < LIMIT_S
        del v
    grown = _rss_mb() - before
    assert patterns.CACHE.bytes <= patterns.CACHE_BYTES
    # the cache's bound (64 MB) plus the allocator's slack; 20 cached patterns were ~500 MB
    assert grown < patterns.CACHE_BYTES / 2**20 + 120, f"RSS grew by {grown:.0f} MB"


def test_the_cache_is_bounded_in_entries_and_bytes():
    cache = patterns.BoundedCache(entries=3, max_bytes=100)
    for i in range(5):
        cache.put(i, str(i), 10)
    assert list(cache.items) == [2, 3, 4] and cache.bytes == 30
    cache.put("big", "x", 90)  # evicts the oldest until the bytes fit
    assert list(cache.items) == [4, "big"] and cache.bytes == 100
    cache.put("huge", "x", 101)  # larger than the whole cache: not kept
    assert "huge" not in cache.items


def test_kwargs_errors_name_the_reason():
    with pytest.raises(KwargsError, match=r"'keyword'.*bad regex '\(' \(missing \)"):
        validate_kwargs("keywords:frequency", {"keyword": "(", "frequency": 1, "relation": "at least"})


def test_an_ifeval_row_with_pattern_bombs_needs_input_with_the_reason():
    """Rows of IFEval files and rollouts reach the same check (through the verifiers' kwargs validation)."""
    from mrtpo_viz import get_verifier
    from mrtpo_viz.tasks.ifeval.row_format import example_from_row

    start = time.monotonic()
    ex = example_from_row(
        {
            "key": 1,
            "prompt": "p",
            "instruction_id_list": ["keywords:frequency", "detectable_format:multiple_sections"],
            "kwargs": [
                {"keyword": "a{4294967294}", "frequency": 1, "relation": "at least"},
                {"section_spliter": "((a{100}){100}){100}", "num_sections": 2},
            ],
        }
    )
    keyword = get_verifier("ifeval.keyword").check("a" * 100, ex)
    sections = get_verifier("ifeval.sections").check("a" * 100, ex)
    assert time.monotonic() - start < LIMIT_S
    assert keyword.reason.startswith("needs input") and "counts to 4,294,967,294" in keyword.reason
    assert sections.reason.startswith("needs input") and "multiply to more than 100,000" in sections.reason
