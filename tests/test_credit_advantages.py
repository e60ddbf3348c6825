"""Credit separated from scale: the mask-only oracle puts each reward's group advantage exactly on its span tokens
(no T/|S| factor), MRTPO's JS weights take the same construction, and the placebo's spans have the oracle's sizes."""

import pytest
import torch

from mrtpo_viz.advantages import (
    ADVANTAGE_METHODS,
    EPS,
    NORMALIZATIONS,
    gdpo_advantages,
    mrtpo_token_parts,
    mrtpo_token_weights,
    placebo_spans,
)


def _case():
    """N=2 prompts, G=4, K=2 rewards, T=6 tokens; the last two tokens of prompt 1's completions are padding."""
    rewards = torch.tensor(
        [[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0]]],
        dtype=torch.float64,
    )  # (2, 4, 2)
    mask = torch.ones(2, 4, 6, dtype=torch.float64)
    mask[1, :, 4:] = 0
    spans = torch.zeros(2, 4, 2, 6, dtype=torch.float64)
    spans[:, :, 0, 1] = 1  # reward 0 decided by token 1
    spans[:, :, 1, 3] = 1  # reward 1 decided by tokens 3 and 2
    spans[:, :, 1, 2] = 1
    return rewards, mask, spans


def test_mask_only_oracle_puts_each_reward_exactly_on_its_span_tokens():
    rewards, mask, spans = _case()
    parts = mrtpo_token_parts(rewards, spans, mask, normalization="mask")
    ahat, final = gdpo_advantages(rewards)
    std_b = (ahat.sum(-1)).reshape(-1).std()
    expected = spans * ahat[..., None] / (std_b + EPS) * mask[:, :, None]  # (N, G, K, T)
    assert torch.allclose(parts.parts, expected, atol=1e-12)  # float64, same operations: rounding only
    assert bool((parts.parts[spans == 0] == 0).all())  # nothing of a reward outside its spans
    # the sum over rewards and the (here zero) batch centering give the token advantages: no T/|S| factor
    assert torch.allclose(parts.token_advantages, expected.sum(2) + parts.baseline, atol=1e-12)
    assert float(parts.baseline.abs().max()) < 1e-12  # every group is centred, so the batch mean of S is 0
    # the mean-preserving oracle on the same spans multiplies reward 0's one-token span by T_i (6, or 4 with padding)
    mean_parts = mrtpo_token_parts(rewards, spans, mask, normalization="mean").parts
    assert torch.allclose(mean_parts[0, :, 0, 1], 6 * expected[0, :, 0, 1], atol=1e-12)
    assert torch.allclose(mean_parts[1, :, 0, 1], 4 * expected[1, :, 0, 1], atol=1e-12)
    via_registry = ADVANTAGE_METHODS["mrtpo:oracle-mask"](rewards, mask, relevance=spans)
    assert torch.allclose(via_registry, parts.token_advantages, atol=1e-12)


def test_mask_normalization_of_js_weights_is_the_peak_normalized_relevance():
    d = torch.tensor([[[[0.1, 0.4, 0.2, 0.0]]]])  # (1, 1, 1, 4)
    mask = torch.ones(1, 1, 4)
    w = mrtpo_token_weights(d, mask, normalization="mask")
    assert torch.allclose(w, torch.tensor([[[[0.25, 1.0, 0.5, 0.0]]]]))
    assert torch.allclose(
        mrtpo_token_weights(d, mask, gamma=2.0, normalization="mask"), torch.tensor([[[[0.0625, 1.0, 0.25, 0.0]]]])
    )
    assert torch.allclose(mrtpo_token_weights(d, mask, alpha=0.0, normalization="mask"), mask[:, :, None])
    # no relevance at all: uniform weight 1 (GDPO's credit for that reward), as with the mean normalization
    assert torch.equal(mrtpo_token_weights(torch.zeros(1, 1, 1, 4), mask, normalization="mask"), torch.ones(1, 1, 1, 4))
    assert NORMALIZATIONS == ("mean", "mask")
    with pytest.raises(ValueError, match="unknown normalization 'sum'"):
        mrtpo_token_weights(d, mask, normalization="sum")


def test_placebo_spans_match_the_sizes_and_stay_on_valid_tokens():
    rewards, mask, spans = _case()
    spans[0, 0, 0, :] = 0  # one row without any span: the placebo has none either
    spans[0, 1, 1, :5] = 1  # a wide span of 5 tokens
    draw = lambda seed: placebo_spans(spans, mask, torch.Generator().manual_seed(seed))  # noqa: E731
    placebo = draw(0)
    assert torch.equal(placebo.sum(-1), spans.sum(-1))
    assert bool((placebo[mask[:, :, None, :].expand_as(placebo) == 0] == 0).all())
    assert set(placebo.unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(draw(0), placebo) and not torch.equal(draw(1), placebo)  # seeded, and it does vary
    # over many draws every valid position of a one-token span's row is hit (uniform over valid tokens)
    hits = sum(placebo_spans(spans, mask, torch.Generator().manual_seed(s))[1, 0, 0] for s in range(200))
    assert bool((hits[:4] > 0).all()) and bool((hits[4:] == 0).all())
    rel = torch.rand(2, 4, 2, 6)
    assert ADVANTAGE_METHODS["mrtpo:placebo-mask"].needs == "placebo"
    with pytest.raises(ValueError, match="needs the placebo span masks"):
        ADVANTAGE_METHODS["mrtpo:placebo"](rewards, mask)
    assert ADVANTAGE_METHODS["mrtpo:placebo"](rewards, mask, relevance=rel).shape == (2, 4, 6)


def test_shuffle_relevance_permutes_each_row_among_valid_tokens():
    """MRTPO's matched placebo keeps each row's values (a permutation of its valid tokens' relevance, 0 on padding)
    and moves them: hand-built rows with distinct values, one padded."""
    from mrtpo_viz.advantages import shuffle_relevance

    rel = torch.tensor([[[[0.1, 0.2, 0.3, 0.4, 0.5], [0.9, 0.0, 0.0, 0.0, 0.7]]]])  # (1, 1, 2, 5)
    mask = torch.tensor([[[1.0, 1.0, 1.0, 1.0, 0.0]]])  # the last token is padding
    moved = 0
    for seed in range(20):
        out = shuffle_relevance(rel, mask, torch.Generator().manual_seed(seed))
        assert out.shape == rel.shape
        assert out[..., 4].abs().sum() == 0  # padding gets nothing
        assert sorted(out[0, 0, 0, :4].tolist()) == pytest.approx([0.1, 0.2, 0.3, 0.4])
        assert sorted(out[0, 0, 1, :4].tolist()) == pytest.approx([0.0, 0.0, 0.0, 0.9])
        moved += not torch.equal(out[0, 0, 0, :4], rel[0, 0, 0, :4])
    assert moved >= 15  # 1 of 24 orders is the identity


def test_shuffle_method_is_mrtpo_on_the_shuffled_relevance():
    from mrtpo_viz.advantages import ADVANTAGE_METHODS, shuffle_relevance

    g = torch.Generator().manual_seed(0)
    rewards = torch.rand(2, 4, 3, generator=g)
    rel = torch.rand(2, 4, 3, 6, generator=g)
    mask = torch.ones(2, 4, 6)
    m = ADVANTAGE_METHODS["mrtpo:shuffle"]
    assert m.needs == "shuffled" and m.needs_relevance
    shuffled = shuffle_relevance(rel, mask, torch.Generator().manual_seed(3))
    assert torch.allclose(m(rewards, mask, shuffled), ADVANTAGE_METHODS["mrtpo"](rewards, mask, shuffled))
    # the token mean is GDPO's advantage, as for MRTPO
    gdpo = ADVANTAGE_METHODS["gdpo"](rewards, mask)
    assert torch.allclose(m(rewards, mask, shuffled).mean(-1), gdpo.mean(-1), atol=1e-5)
