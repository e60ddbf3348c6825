"""The tutorial (docs/tutorial.md) works as written: its own code blocks, run in order in a temporary folder, build
the ``arithmetic`` family's examples, register its two verifiers, score the golds and replay one response with the
bundled policy; then this test checks what they built."""

import pytest
import torch

from tests.docs.pages import DOCS, python_blocks
from tests.docs.test_snippets import run_blocks


@pytest.mark.slow
def test_the_tutorial_builds_registers_and_replays_its_family(tmp_path, monkeypatch):
    from mrtpo_viz import get_verifier, list_verifiers, load_examples
    from mrtpo_viz.tasks.base import VERIFIERS

    blocks = python_blocks(DOCS / "tutorial.md")
    assert len(blocks) == 5 and not any(b.marker for b in blocks)  # every block runs
    monkeypatch.chdir(tmp_path)
    saved = dict(VERIFIERS)
    ns = {"__name__": "__tutorial__"}
    try:
        assert run_blocks(blocks, ns) == []
        # built: the examples file, read back by the library
        examples = load_examples("arithmetic", split="all", path=tmp_path / "arithmetic.jsonl")
        assert len(examples) == 20 and len(ns["examples"]) == 5
        # registered: under the family's name, the objects the tutorial made
        assert list_verifiers("arithmetic") == ["arith.format", "arith.correct"]
        assert get_verifier("arith.correct") is ns["correct"]
        ex, wrong = ns["ex"], ns["wrong"]
        assert [get_verifier(n).score(wrong, ex) for n in ex.verifiers] == [1.0, 0.0]
        number = ex.reference.rindex(str(ex.meta["answer"]))
        assert ns["correct"].relevant_spans(ex.reference, ex) == [(number, number + len(str(ex.meta["answer"])))]
        # replayed: one row per verifier over the response's tokens, JS distances in [0, 1], the information used
        rel = ns["rel"]
        assert rel.verifiers == ["arith.format", "arith.correct"]
        assert rel.scores.shape == (2, len(rel.token_ids)) and len(rel.token_ids) > 10
        assert "".join(rel.tokens) == ex.reference
        assert float(rel.scores.min()) >= 0.0 and float(rel.scores.max()) <= 1.0
        assert torch.all(rel.scores.amax(dim=1) > 0.01)  # each verifier's information moves some prediction
        assert rel.infos["arith.correct"] == f"The correct answer is {ex.meta['answer']}."
        assert ns["reward"](prompts=[ex.prompt], completions=[wrong], answer=[ex.meta["answer"]]) == [0.0]
    finally:
        VERIFIERS.clear()
        VERIFIERS.update(saved)
    assert "arith.format" not in VERIFIERS
