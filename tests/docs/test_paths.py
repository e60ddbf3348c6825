"""Every repository path the README and the docs cite exists, and every relative link of theirs resolves (to a file,
and into a page to a heading that exists). ``mkdocs build --strict`` checks the pages' links too; this also covers
the README, which the site does not build, and paths written in code spans and commands."""

import pytest

from tests.docs.pages import REPO, broken_links, cited_paths, doc_files, missing_paths


@pytest.mark.parametrize("page", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_cited_path_exists(page):
    text = page.read_text(encoding="utf-8")
    assert missing_paths(text) == [], f"{page.relative_to(REPO)} cites paths that do not exist"


def test_the_pattern_finds_the_readmes_paths():
    found = set(cited_paths((REPO / "README.md").read_text(encoding="utf-8")))
    assert {
        "assets/screenshot_relevance.png",
        "docs/tutorial.md",
        "examples/trl_mrtpo.py",
        "sample_data/rollouts/sample_rollouts.jsonl",
    } <= found


@pytest.mark.parametrize("page", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    assert broken_links(page) == [], f"{page.relative_to(REPO)} has broken links"


def test_the_checks_catch_a_moved_module_and_a_broken_link(tmp_path):
    """The checkers on text with a drift: a renamed module, a placeholder that matches nothing, a missing anchor."""
    text = (
        "see `mrtpo_viz/relevance/engine.py` and `python benchmarks/memory.py --layers 2`, not "
        "`mrtpo_viz/malloc.py`; results in `benchmarks/results/<name>.md`, "
        "tests in `tests/<part>/test_nothing_x.py`, "
        "`benchmarks/results/convergence.{md,csv}` and `benchmarks/results/memory.{md,svg}`"
    )
    assert missing_paths(text) == [
        "benchmarks/results/memory.{md,svg}",
        "mrtpo_viz/malloc.py",
        "tests/<part>/test_nothing_x.py",
    ]
    (tmp_path / "a.md").write_text("# Title\n\n## Live training (the app tab)\n")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md#live-training-the-app-tab) [gone](c.md) [no anchor](a.md#live-training) "
        "[web](https://example.org/x.md)"
    )
    assert broken_links(page) == ["c.md", "a.md#live-training"]
