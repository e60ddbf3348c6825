"""Resource exhaustion: every input is capped before its expensive step (the Python API and the CLI too)."""

import json
import re

import pandas as pd
import pytest
import torch

from mrtpo_viz.relevance.engine import replay
from mrtpo_viz.relevance.scoring import score_rollouts
from mrtpo_viz.viz.advantages import advantage_breakdown

pytestmark = pytest.mark.usefixtures("sample_data_unchanged")


def _no_tokenizing(monkeypatch, limit: int = 100_000, prompt: bool = True):
    """Fail the test if a response longer than ``limit`` characters is tokenized (or, with ``prompt``, if any
    prompt is)."""
    import mrtpo_viz.relevance.branches as branches
    import mrtpo_viz.relevance.engine as engine

    real = branches.tokenize_response

    def guarded(tokenizer, text):
        assert len(text) <= limit, f"a {len(text):,}-character text was tokenized"
        return real(tokenizer, text)

    monkeypatch.setattr(engine, "tokenize_response", guarded)
    if prompt:
        monkeypatch.setattr(engine, "split_branches", lambda *a, **k: pytest.fail("the prompt was tokenized"))


def test_a_long_information_template_is_refused_before_rendering(tiny_policy, monkeypatch):
    """Uncapped, a 10 MB template takes 70 s and keeps 2.1 GB (a 1 MB one reaches the tokenizer and only the
    context window refuses it); it is refused before anything is rendered."""
    _no_tokenizing(monkeypatch)
    template = "{title} {info}" + " " * 1_000_000
    with pytest.raises(
        ValueError, match=f"bad information template: {len(template):,} characters; it must be text of at most 1,000"
    ):
        replay(tiny_policy, "p", "r", ["ifeval.no_comma"], infos={"ifeval.no_comma": "no commas"}, template=template)


def test_a_huge_response_is_refused_before_it_is_tokenized(tiny_policy, monkeypatch):
    """Tokenizing the whole response before checking its length lets a 57 MB line peak at 19 GB in the CLI; the
    replay refuses texts that cannot fit the context window from their length alone."""
    _no_tokenizing(monkeypatch)
    with pytest.raises(ValueError, match="the replay's texts have 3,000,0.. characters"):
        replay(tiny_policy, "p", "x " * 1_500_000, ["ifeval.no_comma"], infos={"ifeval.no_comma": "no commas"})


def test_rollout_rows_obey_the_caps_before_tokenizing(tiny_policy, tmp_path, monkeypatch):
    """A rollouts file's rows go through the same caps (characters, verifiers per row, rows per file). A row that
    skipped them could hold the app's model queue for minutes (24 rows x 14 verifiers x 1,900 tokens: 168 s), and a
    3 MB response would reach the tokenizer."""
    from mrtpo_viz.relevance.rows import RowLimits

    _no_tokenizing(monkeypatch, prompt=False)
    good = {
        "task": "instruction_following",
        "prompt": "Say hi.",
        "response": "hi there",
        "verifiers": ["ifeval.no_comma"],
    }
    rows = [
        good,
        {**good, "response": "y " * 1_500_000},
        {**good, "verifiers": ["ifeval.no_comma"] * 7},
        {**good, "verifiers": []},
        {**good, "id": "late"},
    ]  # no list: the task's 14 verifiers count
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    limits = RowLimits(max_chars=8000, max_tokens=2048, max_verifiers=6, max_rows=2)
    last = list(score_rollouts(tiny_policy, path, out=tmp_path / "o.jsonl", limits=limits))[-1]
    problems = dict(last.problems)
    assert "'response' has 3,000,000 characters; at most 8,000 here" in problems[2]
    assert "7 verifiers; at most 6 per row here" in problems[3]
    assert re.search(r"\d+ verifiers to replay; at most 6 per row here", problems[4])
    assert "more than 2 rollouts" in problems[5]
    assert last.scored == 1


def test_the_advantages_table_has_a_row_cap():
    """Uncapped, a typed table of 1,000,000 rows is computed (27 s, +950 MB: a (G, K, T) relevance tensor)."""
    from mrtpo_viz.ui.relevance_tab import _group_rewards
    from mrtpo_viz.viz.advantages import MAX_GROUP

    with pytest.raises(ValueError, match="at most 256 are shown"):
        advantage_breakdown(torch.ones(100_000, 2), torch.rand(2, 50))
    with pytest.raises(ValueError, match=f"at most {MAX_GROUP} are shown"):  # the app's table: refused before parsing
        _group_rewards(pd.DataFrame({"a": range(100_000)}), ["a"])
    assert _group_rewards(pd.DataFrame({"a": range(MAX_GROUP)}), ["a"]).shape == (MAX_GROUP, 1)  # the cap itself
    assert advantage_breakdown(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.rand(2, 5)).mrtpo.shape == (5,)
