"""The Python blocks of the README and of the docs pages run: each page's blocks in order, in one namespace, in a
temporary folder, offline, on the bundled policy. A block after ``<!-- no-run: why -->`` is not run (it needs a
running app, say); one after ``<!-- snippet: needs MODULE -->`` is skipped where MODULE is not installed (a failure
under ``MRTPO_REQUIRE_REFERENCES=1``, as in CI). The tutorial's blocks run in test_tutorial.py, which also checks
what they built.

Two substitutions keep the run short, each checked to apply: a TRL example's ``max_steps=20`` becomes 1 (one
optimizer step shows that the code is right; 20 would take a minute more)."""

import os
import warnings

import pytest

from tests.docs.pages import DOCS, REPO, doc_files, needs, python_blocks

SHORTER = {"max_steps=20": "max_steps=1"}
SLOW = ("MRTPOTrainer", "train(TrainConfig", "load_policy(", "mrtpo_viz.ui")
"""A page whose blocks load a policy, train or import the app (gradio) is marked slow (seconds to a minute)."""
TUTORIAL = DOCS / "tutorial.md"


def pages():
    out = []
    for page in doc_files():
        blocks = python_blocks(page)
        if page == TUTORIAL or not blocks:
            continue
        slow = any(s in b.code for b in blocks for s in SLOW)
        out.append(pytest.param(page, id=str(page.relative_to(REPO)), marks=[pytest.mark.slow] if slow else []))
    return out


def run_blocks(blocks, namespace: dict) -> list[str]:
    """Run the blocks in order; the ones left out, with why."""
    left_out = []
    for block in blocks:
        if block.marker.startswith("no-run"):
            left_out.append(f"{block.where}: {block.marker}")
            continue
        missing = needs(block)
        if missing:
            if os.environ.get("MRTPO_REQUIRE_REFERENCES"):
                pytest.fail(f"{block.where} needs {missing}, which is not installed")
            left_out.append(f"{block.where}: needs {missing}")
            continue
        code = block.code
        for old, new in SHORTER.items():
            code = code.replace(old, new)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code, block.where, "exec"), namespace)
    return left_out


@pytest.mark.parametrize("page", pages())
def test_the_python_blocks_of_a_page_run(page, tmp_path, monkeypatch):
    from mrtpo_viz.tasks.base import VERIFIERS

    monkeypatch.chdir(tmp_path)
    saved = dict(VERIFIERS)
    try:
        left_out = run_blocks(python_blocks(page), {"__name__": "__docs__"})
    finally:
        VERIFIERS.clear()
        VERIFIERS.update(saved)
    assert len(left_out) < len(python_blocks(page)), left_out  # something ran
    if page.name == "README.md":  # the library example writes its table, the TRL example its per-token log
        assert (tmp_path / "relevance.csv").stat().st_size > 1000
        assert any((tmp_path / "runs" / "tool" / "mrtpo").glob("tokens_*.parquet"))


def test_every_substitution_applies_somewhere():
    code = "".join(b.code for page in doc_files() for b in python_blocks(page))
    for old in SHORTER:
        assert old in code, f"{old!r} no longer appears in any block: drop it from SHORTER"


def test_a_failing_snippet_fails_the_test(tmp_path):
    """A block whose code drifted from the library (a renamed function) raises, naming the page and line."""
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```python\nfrom mrtpo_viz import load_examples\n```\n\n<!-- no-run: needs the app -->\n"
        "```python\nraise SystemExit\n```\n\n```python\nfrom mrtpo_viz import load_exampels\n```\n"
    )
    blocks = python_blocks(page)
    assert [b.line for b in blocks] == [3, 8, 12] and blocks[1].marker == "no-run: needs the app"
    with pytest.raises(ImportError, match="load_exampels"):
        run_blocks(blocks, {})
