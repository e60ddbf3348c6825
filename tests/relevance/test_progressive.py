"""The progressive replay: one forward per verifier over the shared prefix cache, a step after each row, and a last
step equal to the one-shot replay; the app's choice between the two by the replay's estimated time."""

import pytest
import torch

from mrtpo_viz.relevance import progressive
from mrtpo_viz.relevance.branches import split_logits, split_logits_each
from mrtpo_viz.relevance.columns import replay_columns, stack_columns
from mrtpo_viz.relevance.engine import plan_replay, replay, replay_steps
from mrtpo_viz.serving import turns
from mrtpo_viz.tasks.example_sources import load_examples

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def bundled():
    from mrtpo_viz.policy import load_policy

    return load_policy("tiny-mrtpo", device="cpu")


@pytest.fixture(scope="module")
def example():
    ex = load_examples("instruction_following", "test")[5]
    assert len(ex.verifiers) == 3  # K = 3, as benchmarks/progressive_replay.py
    return ex


@pytest.mark.parametrize("which", ["bundled", "tiny_policy"])
def test_each_row_alone_equals_the_batched_suffixes(which, example, request):
    """split_logits_each: row 0 whole, then every with-row in a forward of its own over the cropped prefix cache;
    the same logits as split_logits' padded batch (on the bundled policy and on the sharp random one, where a wrong
    mask or position shows up as errors of whole nats)."""
    policy = request.getfixturevalue(which)
    br = plan_replay(policy, example, example.reference, list(example.verifiers), control="placebo").branches
    assert br.B == 7 and len({len(s) for s in br.suffix_ids[1:4]}) > 1  # suffixes of different lengths: padding
    without, others = split_logits(policy.model, br, policy.pad_id, "cpu")
    parts = list(split_logits_each(policy.model, br, policy.pad_id, "cpu", each=3))
    T = len(br.response_ids)
    # row 0, rows 1..3 one forward each, the control's 3 extras as one batch
    assert [tuple(p.shape[:2]) for p in parts] == [(1, T)] * 4 + [(3, T)]
    # float32 logits of a batch with padding vs one row alone differ by rounding only (~1e-5 at logits ~10)
    assert torch.allclose(parts[0], without, atol=1e-4)
    assert torch.allclose(torch.cat(parts[1:]), others, atol=1e-4)


def test_stacked_row_columns_equal_the_columns_of_all_rows():
    g = torch.Generator().manual_seed(3)
    logits, ids = 3.0 * torch.randn(4, 11, 60, generator=g), torch.randint(0, 60, (11,), generator=g)
    whole = replay_columns(logits[:1], logits[1:], ids, ("js", "kl"), topk=5)
    parts = [replay_columns(logits[:1], logits[k : k + 1], ids, ("js", "kl"), topk=5) for k in (1, 2, 3)]
    stacked = stack_columns(parts)
    for m in ("js", "kl"):
        assert torch.allclose(stacked.metrics[m], whole.metrics[m], atol=1e-6)
    assert torch.allclose(stacked.logprob, whole.logprob) and torch.allclose(stacked.entropy, whole.entropy)
    assert torch.equal(stacked.top_ids, whole.top_ids) and torch.allclose(stacked.top_probs, whole.top_probs)
    assert stacked.logprob.shape == (4, 11) and stacked.top_ids.shape == (4, 11, 5)


@pytest.mark.parametrize("control", ["none", "placebo", "others"])
def test_steps_grow_row_by_row_and_end_with_the_one_shot_result(bundled, example, control):
    verifiers = list(example.verifiers)
    steps = list(replay_steps(bundled, example, example.reference, verifiers, [("js", control)], progressive=True))
    K, T = len(verifiers), len(steps[0].tokens)
    assert [s.done for s in steps] == [0, 1, 2, 3, 3] and K == 3
    assert [s.results is None for s in steps] == [True] * 4 + [False]
    assert all(s.verifiers == verifiers and s.K == K and s.rows.shape == (s.done, T) for s in steps)
    one_shot = replay(bundled, example, example.reference, verifiers, control=control)
    rel = steps[-1].relevance
    assert steps[0].tokens == one_shot.tokens and steps[0].token_ids == one_shot.token_ids
    # a row alone and the same row in a padded batch of 3 round differently in float32: ~1e-7 in the JS here
    assert torch.allclose(rel.scores, one_shot.scores, atol=1e-5)
    assert torch.allclose(rel.raw_scores, one_shot.raw_scores, atol=1e-5)
    assert torch.allclose(rel.logp_with, one_shot.logp_with, atol=1e-5)
    assert torch.allclose(rel.logp_without, one_shot.logp_without, atol=1e-5)
    assert torch.allclose(rel.entropy, one_shot.entropy, atol=1e-5)
    assert rel.top_with == one_shot.top_with and rel.top_without == one_shot.top_without
    assert rel.rewards == one_shot.rewards and rel.spans == one_shot.spans and rel.control == control
    assert rel.info_position == one_shot.info_position == "user_end"
    for s in steps[1:-1]:  # each partial row is already the final raw row
        assert torch.allclose(s.rows, one_shot.raw_scores[: s.done], atol=1e-5)
    assert one_shot.raw_scores.max() > 0.01  # real values, not zeros
    assert set(rel.timings) == set(one_shot.timings) == {"tokenize", "forward", "metric", "verify"}


def test_one_shot_yields_only_the_result(bundled, example):
    steps = list(replay_steps(bundled, example, example.reference, list(example.verifiers)))
    assert len(steps) == 1 and steps[0].done == 3 and steps[0].relevance is not None


def test_automatic_choice_follows_the_estimated_time(bundled, example, monkeypatch):
    """The bundled policy (1.3M parameters) is far below the threshold: one step; a policy of SmolLM2's size (135M)
    on the same replay is above it: K + 2 steps."""
    br = plan_replay(bundled, example, example.reference, list(example.verifiers)).branches
    small = progressive.estimate_seconds(bundled, br)
    assert 0 < small < 0.1 * progressive.PROGRESSIVE_FROM_S
    auto = lambda: list(  # noqa: E731
        replay_steps(bundled, example, example.reference, list(example.verifiers), progressive=None)
    )
    assert len(auto()) == 1
    monkeypatch.setattr(type(bundled.model), "num_parameters", lambda self, **kw: 134_515_008)
    assert progressive.estimate_seconds(bundled, br) > progressive.PROGRESSIVE_FROM_S
    assert [s.done for s in auto()] == [0, 1, 2, 3, 3]


def test_no_model_turn_is_held_between_steps(bundled, example, monkeypatch):
    """The app resumes a generator on any worker thread (or never, when the client leaves): each row's forward is a
    model job of its own, so between steps nobody holds the model."""
    monkeypatch.setattr(turns._TURNS, "enabled", True)
    held = []
    for _ in replay_steps(bundled, example, example.reference, list(example.verifiers), progressive=True):
        held.append(turns._TURNS._holder)
    assert held == [None] * 5


def test_bad_input_raises_before_the_first_step(bundled, example):
    steps = replay_steps(bundled, example, "", list(example.verifiers), progressive=True)
    with pytest.raises(ValueError, match="the response is empty"):
        next(steps)
