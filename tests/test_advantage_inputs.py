"""Every advantage entry point refuses a malformed input with a message that names the argument and its shape, before
any arithmetic (a wrong-shaped tensor would otherwise broadcast into plausible-looking advantages)."""

import pytest
import torch

from mrtpo_viz.advantages import (
    entropy_token_advantages,
    entropy_top_mask,
    get_method,
    mrtpo_token_weights,
    register_credit,
    weighted_token_parts,
)
from mrtpo_viz.advantages import credit
from mrtpo_viz.advantages.credit import uniform_weights

N, G, K, T = 1, 4, 2, 5
REWARDS = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]])  # (1, 4, 2)
MASK = torch.ones(N, G, T)
ENTROPY = torch.arange(N * G * T, dtype=torch.float32).reshape(N, G, T) / 10


def test_mask_of_the_wrong_rank_is_refused():
    with pytest.raises(ValueError, match=r"mask must be \(N, G, T\), got shape \(4, 5\)"):
        uniform_weights(K, torch.ones(G, T))


@pytest.mark.parametrize("alpha", [-0.1, 1.5])
def test_entropy_weights_alpha_outside_0_1(alpha):
    with pytest.raises(ValueError, match=rf"alpha must lie in \[0, 1\], got {alpha}"):
        credit.entropy_weights(K, MASK, entropy=ENTROPY, alpha=alpha)


def test_entropy_weights_entropy_of_another_shape():
    with pytest.raises(ValueError, match=r"entropy must be \(N, G, T\) = \(1, 4, 5\), got \(1, 4, 3\)"):
        credit.entropy_weights(K, MASK, entropy=ENTROPY[..., :3].clone())


def test_entropy_weights_values():
    # row 0's entropies 0, .1, .2, .3, .4: mean .2, so w = H / mean = 0, .5, 1, 1.5, 2 at alpha 1; half-way at .5
    w = credit.entropy_weights(K, MASK, entropy=ENTROPY, alpha=1.0)
    assert w.shape == (N, G, K, T)
    assert torch.allclose(w[0, 0, 0], torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0]))
    assert torch.equal(w[0, 0, 0], w[0, 0, 1])  # every reward alike
    half = credit.entropy_weights(K, MASK, entropy=ENTROPY, alpha=0.5)
    assert torch.allclose(half[0, 0, 0], torch.tensor([0.5, 0.75, 1.0, 1.25, 1.5]))


@pytest.mark.parametrize("q", [0.0, 1.5])
def test_entropy_top_quantile_outside_0_1(q):
    with pytest.raises(ValueError, match=r"q must lie in \(0, 1\]"):
        entropy_top_mask(ENTROPY, MASK, q=q)


def test_entropy_top_with_no_valid_token_keeps_nothing():
    kept = entropy_top_mask(ENTROPY, torch.zeros(N, G, T))
    assert kept.dtype == torch.bool and kept.shape == (N, G, T) and not kept.any()


def test_relevance_of_the_wrong_rank_is_refused():
    with pytest.raises(ValueError, match=r"relevance must be \(N, G, K, T\), got shape \(1, 4, 5\)"):
        mrtpo_token_weights(torch.rand(N, G, T), MASK)


def test_token_weights_that_do_not_match_the_rewards_are_refused():
    with pytest.raises(
        ValueError, match=r"token weights must be \(N, G, K, T\) with N, G, K = 1, 4, 2, got \(1, 4, 3, 5\)"
    ):
        weighted_token_parts(REWARDS, torch.ones(N, G, 3, T), MASK)


@pytest.mark.parametrize("beta", [-0.5, 2.0])
def test_entropy_baseline_beta_outside_0_1(beta):
    with pytest.raises(ValueError, match=rf"beta must lie in \[0, 1\], got {beta}"):
        entropy_token_advantages(REWARDS, ENTROPY, MASK, beta=beta)


def test_entropy_baseline_entropy_of_another_shape():
    with pytest.raises(ValueError, match=r"entropy must be \(N, G, T\) = \(1, 4, 5\), got \(1, 4, 2\)"):
        entropy_token_advantages(REWARDS, ENTROPY[..., :2].clone(), MASK)


def test_a_method_refuses_rewards_of_the_wrong_rank():
    with pytest.raises(ValueError, match=r"rewards must be \(N, G, K\), got shape \(4, 2\)"):
        get_method("gdpo")(REWARDS[0], MASK)


def test_register_credit_refuses_unknown_replay_settings():
    with pytest.raises(ValueError, match=r"replay settings are control and metric, got \['temperature'\]"):
        register_credit("test_unknown_replay", credit.uniform_weights, replay={"temperature": 1.0})


def test_an_entropy_that_would_broadcast_is_refused():
    # (N, G, 1) multiplies with a (N, G, T) mask without complaint; the check must come before the product
    with pytest.raises(ValueError, match=r"entropy must be \(N, G, T\) = \(1, 4, 5\), got \(1, 4, 1\)"):
        entropy_token_advantages(REWARDS, ENTROPY[..., :1].clone(), MASK)
    with pytest.raises(ValueError, match=r"entropy must be \(N, G, T\) = \(1, 4, 5\), got \(1, 4, 1\)"):
        credit.entropy_weights(K, MASK, entropy=ENTROPY[..., :1].clone())
