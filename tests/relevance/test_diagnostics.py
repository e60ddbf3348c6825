"""Weight diagnostics: Gini, effective-token ratio and span share of MRTPO's token weights, on hand-built cases."""

import pytest
import torch

from mrtpo_viz.advantages import mrtpo_token_weights
from mrtpo_viz.relevance.results import Relevance
from mrtpo_viz.relevance.diagnostics import (
    effective_token_ratio,
    gini,
    relevance_weight_diagnostics,
    span_share,
    weight_diagnostics,
)


def test_gini_of_uniform_one_hot_and_a_worked_case():
    assert float(gini(torch.ones(8))) == 0.0
    assert float(gini(torch.tensor([0.0, 0.0, 0.0, 5.0]))) == pytest.approx(3 / 4)  # (T - 1) / T
    # [1, 2, 3, 4]: mean |x_i - x_j| over all 16 pairs is 20/16 = 1.25; over twice the mean 2.5: 0.25
    assert float(gini(torch.tensor([4.0, 1.0, 3.0, 2.0]))) == pytest.approx(0.25)
    assert float(gini(torch.zeros(3))) == 0.0  # nothing to share: no NaN


def test_gini_equals_the_mean_absolute_difference_over_twice_the_mean():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(5, 13, generator=g) ** 3  # (5, 13), skewed
    mad = (x[:, :, None] - x[:, None, :]).abs().mean((-1, -2))  # the pairwise definition, another formula
    assert torch.allclose(gini(x), (mad / (2 * x.mean(-1))).double(), atol=1e-12)


def test_effective_token_ratio():
    assert float(effective_token_ratio(torch.ones(10))) == 1.0
    assert float(effective_token_ratio(torch.tensor([0.0, 4.0, 0.0, 0.0]))) == pytest.approx(1 / 4)
    assert float(effective_token_ratio(torch.tensor([2.0, 2.0, 0.0, 0.0]))) == pytest.approx(1 / 2)
    assert float(effective_token_ratio(torch.zeros(4))) == 1.0


def test_span_share():
    w = torch.tensor([1.0, 3.0, 0.0, 4.0])
    assert span_share(w, [False, True, False, True]) == pytest.approx(7 / 8)
    assert span_share(w, [False] * 4) is None  # no deciding token
    with pytest.raises(ValueError, match="flags"):
        span_share(w, [True])


def test_diagnostics_of_a_peaked_and_a_flat_verifier():
    d = torch.tensor(
        [
            [0.0, 0.9, 0.0, 0.0, 0.0],  # all on token 1
            [0.2, 0.2, 0.2, 0.2, 0.2],
        ]
    )  # flat: GDPO credit
    out = weight_diagnostics(d, ["peak", "flat"], [[False, True, False, False, False], None])
    w = mrtpo_token_weights(d[None, None], torch.ones(1, 1, 5))[0, 0]
    assert torch.equal(out.weights, w) and out.weights.sum(-1).tolist() == pytest.approx([5.0, 5.0])
    assert out.gini.tolist() == pytest.approx([4 / 5, 0.0], abs=1e-6)
    assert out.effective_ratio.tolist() == pytest.approx([1 / 5, 1.0], abs=1e-6)
    assert out.span_share == (pytest.approx(1.0), None) and out.span_tokens == (pytest.approx(1 / 5), None)
    half = weight_diagnostics(d, ["peak", "flat"], [[False, True, False, False, False], None], alpha=0.5)
    # w = 0.5 + 0.5 * (5, 0, ...) on the peak: (0.5, 3, 0.5, 0.5, 0.5); Kish: 25 / (5 * (4 * 0.25 + 9)) = 0.5
    assert float(half.effective_ratio[0]) == pytest.approx(0.5) and half.span_share[0] == pytest.approx(3 / 5)
    assert float(weight_diagnostics(d, ["peak", "flat"], [None, None], alpha=0.0).gini.max()) == 0.0  # GDPO
    with pytest.raises(ValueError, match="need 2 verifier names"):
        weight_diagnostics(d, ["one"], [None])


def test_diagnostics_of_a_replay_use_its_spans():
    rel = Relevance(
        tokens=["a", "b", "c"],
        token_ids=[1, 2, 3],
        verifiers=["v"],
        scores=[[0.1, 0.8, 0.1]],
        raw_scores=[[0.3, 0.3, 0.3]],
        response="abc",
        offsets=[(0, 1), (1, 2), (2, 3)],
        spans={"v": [(1, 2)]},
    )
    out = relevance_weight_diagnostics(rel)
    assert out.span_share[0] == pytest.approx(0.8) and out.span_tokens[0] == pytest.approx(1 / 3)
    assert float(relevance_weight_diagnostics(rel, raw=True).gini[0]) == pytest.approx(0.0, abs=1e-6)
