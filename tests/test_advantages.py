"""Advantages: GRPO / GDPO against TRL's formulas and hand-worked numbers; MRTPO's invariants; edge cases."""

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from mrtpo_viz.advantages.core import gdpo_advantages, grpo_advantages
from mrtpo_viz.advantages.mrtpo import mrtpo_token_advantages, mrtpo_token_weights
from mrtpo_viz.advantages.registry import ADVANTAGE_METHODS, get_method

torch.set_num_threads(1)
EPS = 1e-4
NAN = math.nan


# ------------------------------------------------------------------------------------------ TRL, re-implemented


def trl_nanstd(x: torch.Tensor) -> torch.Tensor:
    """TRL's ``nanstd``: Bessel-corrected std of the non-NaN values."""
    var = torch.nanmean((x - torch.nanmean(x)) ** 2)
    n = (~x.isnan()).sum()
    return torch.sqrt(var * n / (n - 1))


def trl_sum_then_normalize(rewards_per_func, weights, G):
    """TRL's default aggregation on flat ``(B, K)`` rewards, ``B = N * G``."""
    r = (rewards_per_func * weights[None]).nansum(1)  # (B,)
    mean = r.view(-1, G).mean(1).repeat_interleave(G)
    std = r.view(-1, G).std(1).repeat_interleave(G)
    return (r - mean) / (std + EPS)


def trl_normalize_then_sum(rewards_per_func, weights, G):
    """TRL's ``multi_objective_aggregation="normalize_then_sum"`` on flat ``(B, K)`` rewards."""
    B, K = rewards_per_func.shape
    grouped = rewards_per_func.view(-1, G, K)
    mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
    std_k = torch.stack(
        [torch.stack([trl_nanstd(grouped[i, :, k]) for k in range(K)]) for i in range(grouped.shape[0])]
    )[:, None, :]
    reward_k = ((grouped - mean_k) / (std_k + EPS)).view(B, K)
    summed = (reward_k * weights[None]).nansum(1)  # (B,)
    return (summed - summed.mean()) / (summed.std() + EPS)


def _random_rewards(N, G, K, seed, nan_frac=0.0):
    g = torch.Generator().manual_seed(seed)
    r = torch.randint(0, 3, (N, G, K), generator=g).double()
    r = r + 0.1 * torch.rand(N, G, K, generator=g, dtype=torch.float64)
    return r.masked_fill(torch.rand(N, G, K, generator=g) < nan_frac, NAN)


def _random_case(N, G, K, T, seed):
    """Relevance in [0, 1] and a mask with random response lengths >= 1 (right padding)."""
    g = torch.Generator().manual_seed(seed)
    relevance = torch.rand(N, G, K, T, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (N, G, 1), generator=g)
    mask = (torch.arange(T) < lengths).double()  # (N, G, T)
    return relevance, mask


def _token_mean(adv, mask):
    return (adv * mask).sum(-1) / mask.sum(-1)


# ------------------------------------------------------------------------------------------ GRPO and GDPO


def test_grpo_equals_trl_sum_then_normalize():
    rewards, weights = _random_rewards(3, 4, 2, seed=1), torch.tensor([1.0, 0.5], dtype=torch.float64)
    expected = trl_sum_then_normalize(rewards.view(-1, 2), weights, G=4).view(3, 4)
    assert torch.allclose(grpo_advantages(rewards, weights), expected, atol=1e-10)


def test_gdpo_equals_trl_normalize_then_sum():
    rewards, weights = _random_rewards(3, 5, 3, seed=2), torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    expected = trl_normalize_then_sum(rewards.view(-1, 3), weights, G=5).view(3, 5)
    assert torch.allclose(gdpo_advantages(rewards, weights)[1], expected, atol=1e-10)


def test_gdpo_worked_example_by_hand():
    # One prompt, G = 3, two rewards, weights (1, 0.5).
    # r1 = (1, 0, 0): mean 1/3, Bessel std sqrt((4/9 + 1/9 + 1/9) / 2) = 0.5773503
    #   Ahat1 = (2/3, -1/3, -1/3) / 0.5774503 = (1.1545006, -0.5772503, -0.5772503)
    # r2 = (1, 1, 0): mean 2/3, same std; Ahat2 = (0.5772503, 0.5772503, -1.1545006)
    # S = Ahat1 + 0.5 Ahat2 = (1.4431257, -0.2886251, -1.1545006); mean 0, Bessel std 1.3226466
    # A = S / 1.3227466 = (1.0910070, -0.2182014, -0.8728056)
    rewards = torch.tensor([[[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]]])
    per_reward, final = gdpo_advantages(rewards, weights=[1.0, 0.5])
    expected_ahat = torch.tensor([[[1.1545006, 0.5772503], [-0.5772503, 0.5772503], [-0.5772503, -1.1545006]]])
    assert torch.allclose(per_reward, expected_ahat, atol=1e-6)
    assert torch.allclose(final, torch.tensor([[1.0910070, -0.2182014, -0.8728056]]), atol=1e-6)


def test_gdpo_paper_collapse_case():
    """Groups (0,0)|(0,1) and (0,0)|(1,1): same GRPO advantages, GDPO tells them apart."""
    rewards = torch.tensor([[[0.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [1.0, 1.0]]])
    grpo = grpo_advantages(rewards)  # sums (0, 1) and (0, 2): the same up to eps
    assert torch.allclose(grpo[0], torch.tensor([-0.7070068, 0.7070068]), atol=1e-6)  # 0.5 / (0.7071068 + 1e-4)
    assert torch.allclose(grpo[1], torch.tensor([-0.7070568, 0.7070568]), atol=1e-6)  # 1.0 / (1.4142136 + 1e-4)
    # S = (-a, a, -2a, 2a), a = 0.7070068; batch std a * sqrt(10/3): A = S / std = (-0.5477, 0.5477, -1.0954, 1.0954)
    _, gdpo = gdpo_advantages(rewards)
    assert torch.allclose(gdpo, torch.tensor([[-0.5476801, 0.5476801], [-1.0953603, 1.0953603]]), atol=1e-6)
    assert torch.allclose(gdpo[1], 2 * gdpo[0], atol=1e-6)


def test_zero_variance_reward_contributes_exactly_zero():
    rewards = torch.tensor([[[0.1, 1.0], [0.1, 0.0], [0.1, 3.0]]])  # reward 0 is 0.1 for the whole group
    per_reward, _ = gdpo_advantages(rewards)
    assert torch.equal(per_reward[..., 0], torch.zeros(1, 3))
    assert torch.equal(grpo_advantages(torch.full((2, 3, 2), 0.1)), torch.zeros(2, 3))


def test_nan_rewards_are_left_out_like_trl_none():
    rewards = _random_rewards(2, 4, 2, seed=3)
    rewards[0, 1, 0] = NAN  # a verifier that does not apply to this sample
    rewards[1, :, 1] = NAN  # ... nor to any sample of the second group
    per_reward, final = gdpo_advantages(rewards)
    assert not per_reward.isnan().any() and not final.isnan().any()
    assert per_reward[0, 1, 0] == 0 and torch.equal(per_reward[1, :, 1], torch.zeros(4, dtype=torch.float64))
    others = rewards[0, [0, 2, 3], 0]  # the NaN is out of the group's mean and std
    assert torch.allclose(per_reward[0, [0, 2, 3], 0], (others - others.mean()) / (others.std() + EPS))
    assert torch.allclose(
        final,
        trl_normalize_then_sum(rewards.view(-1, 2), torch.ones(2, dtype=torch.float64), G=4).view(2, 4),
        atol=1e-10,
    )
    ones = torch.ones(2, dtype=torch.float64)
    assert torch.allclose(grpo_advantages(rewards), trl_sum_then_normalize(rewards.view(-1, 2), ones, 4).view(2, 4))


@pytest.mark.parametrize("name", list(ADVANTAGE_METHODS))
def test_group_of_one_and_batch_of_one_give_zero_not_nan(name):
    for N, G in [(3, 1), (1, 1)]:
        rewards = torch.rand(N, G, 2)
        relevance, mask = torch.rand(N, G, 2, 4), torch.ones(N, G, 4)
        adv = ADVANTAGE_METHODS[name](rewards, mask, relevance=relevance, entropy=torch.rand(N, G, 4))
        assert torch.equal(adv, torch.zeros(N, G, 4))


# ------------------------------------------------------------------------------------------ MRTPO


def test_mrtpo_hand_example():
    # One prompt, G = 2, one reward (0, 1): Ahat = S = (-a, a), a = 0.5 / (0.7071068 + 1e-4) = 0.7070068;
    # batch mean 0, std 0.9998586. Response 0 has 2 valid tokens with relevance (0.2, 0.6):
    # what = 2 * (0.2, 0.6) / 0.8 = (0.5, 1.5); A[t] = what * (-a) / (0.9998586 + 1e-4) = (-0.3535180, -1.0605541).
    rewards = torch.tensor([[[0.0], [1.0]]])
    relevance = torch.tensor([[[[0.2, 0.6, 0.9]], [[0.0, 0.0, 0.0]]]])
    mask = torch.tensor([[[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]])
    adv = mrtpo_token_advantages(rewards, relevance, mask)
    assert torch.allclose(adv[0, 0], torch.tensor([-0.3535180, -1.0605541, 0.0]), atol=1e-6)
    assert torch.allclose(adv[0, 1], torch.full((3,), 0.7070361), atol=1e-6)  # all-zero relevance: uniform (GDPO)
    half = mrtpo_token_advantages(rewards, relevance, mask, alpha=0.5)  # w = 0.5 + 0.5 * what = (0.75, 1.25)
    assert torch.allclose(half[0, 0, :2], torch.tensor([-0.5302770, -0.8837951]), atol=1e-6)


def test_mrtpo_token_weights_hand_values():
    relevance = torch.tensor([[[[0.2, 0.6, 0.0], [0.0, 0.0, 0.0]]]])  # (1, 1, 2, 3)
    mask = torch.tensor([[[1.0, 1.0, 0.0]]])
    w = mrtpo_token_weights(relevance, mask, alpha=1.0, gamma=2.0)  # 2 * (0.04, 0.36) / 0.4
    assert torch.allclose(w[0, 0, 0], torch.tensor([0.2, 1.8, 0.0]), atol=1e-6)
    assert torch.equal(w[0, 0, 1], torch.tensor([1.0, 1.0, 0.0]))  # all-zero relevance: uniform fallback
    assert torch.equal(mrtpo_token_weights(relevance, mask, gamma=0.0)[0, 0, 0], torch.tensor([1.0, 1.0, 0.0]))


def test_mrtpo_alpha_zero_equals_gdpo_broadcast():
    rewards = _random_rewards(3, 4, 3, seed=4)
    relevance, mask = _random_case(3, 4, 3, 7, seed=5)
    _, gdpo = gdpo_advantages(rewards)
    adv = mrtpo_token_advantages(rewards, relevance, mask, alpha=0.0)
    assert torch.allclose(adv, gdpo[..., None] * mask, atol=1e-12)


@pytest.mark.parametrize("alpha,gamma", [(1.0, 1.0), (0.3, 0.5), (1.0, 3.0), (0.7, 0.0)])
def test_mrtpo_token_mean_equals_gdpo(alpha, gamma):
    rewards = _random_rewards(2, 5, 2, seed=6)
    relevance, mask = _random_case(2, 5, 2, 9, seed=7)
    weights = torch.tensor([1.0, 0.25], dtype=torch.float64)
    adv = mrtpo_token_advantages(rewards, relevance, mask, weights, alpha=alpha, gamma=gamma)
    assert torch.allclose(_token_mean(adv, mask), gdpo_advantages(rewards, weights)[1], atol=1e-10)
    if alpha > 0 and gamma > 0:  # the credit really moves between tokens
        assert float((adv - gdpo_advantages(rewards, weights)[1][..., None] * mask).abs().max()) > 0.1


def test_mrtpo_zero_variance_reward_contributes_nothing():
    rewards = _random_rewards(2, 4, 2, seed=8)
    rewards[..., 1] = 1.0  # every completion passes verifier 1
    relevance, mask = _random_case(2, 4, 2, 6, seed=9)
    shuffled = relevance.clone()
    shuffled[:, :, 1] = torch.rand(2, 4, 6, dtype=torch.float64)
    a, b = mrtpo_token_advantages(rewards, relevance, mask), mrtpo_token_advantages(rewards, shuffled, mask)
    assert torch.equal(a, b)
    assert torch.equal(a, mrtpo_token_advantages(rewards[..., :1], relevance[:, :, :1], mask))


def test_mrtpo_padding_is_exactly_zero():
    rewards = _random_rewards(2, 3, 2, seed=10)
    relevance, mask = _random_case(2, 3, 2, 8, seed=11)
    mask[1, 2] = 0.0  # an empty response
    adv = mrtpo_token_advantages(rewards, relevance, mask)
    assert torch.equal(adv[1, 2], torch.zeros(8, dtype=torch.float64))
    assert bool((adv[mask == 0] == 0).all()) and bool((mask == 0).any())


# ------------------------------------------------------------------------------------------ registry, bad input


def test_registry_call_form_and_flags():
    assert list(ADVANTAGE_METHODS) == [
        "grpo",
        "gdpo",
        "mrtpo",
        "mrtpo:oracle",
        "entropy",
        "mrtpo-mask",
        "mrtpo:oracle-mask",
        "mrtpo:placebo",
        "mrtpo:placebo-mask",
        "mrtpo:shuffle",
        "mrtpo@others",
        "mrtpo@kl",
        "wrong_hint",
        "one_context",
        "entropy_top",
    ]
    assert [m.needs for m in ADVANTAGE_METHODS.values()] == [
        "",
        "",
        "relevance",
        "spans",
        "entropy",
        "relevance",
        "spans",
        "placebo",
        "placebo",
        "shuffled",
        "relevance",
        "relevance",
        "relevance",
        "one_context",
        "entropy",
    ]
    assert [m.needs_relevance for m in ADVANTAGE_METHODS.values()] == [
        False,
        False,
        True,
        True,
        False,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        False,
    ]
    assert [dict(m.replay) for m in ADVANTAGE_METHODS.values()][-5:-2] == [
        {"control": "others"},
        {"metric": "kl"},
        {"control": "wrong_hint"},
    ]
    rewards = _random_rewards(2, 3, 2, seed=12)
    relevance, mask = _random_case(2, 3, 2, 5, seed=13)
    assert torch.allclose(get_method("grpo")(rewards, mask), grpo_advantages(rewards)[..., None] * mask)
    assert torch.allclose(get_method("gdpo")(rewards, mask), gdpo_advantages(rewards)[1][..., None] * mask)
    assert torch.equal(
        get_method("mrtpo")(rewards, mask, relevance=relevance, alpha=0.5),
        mrtpo_token_advantages(rewards, relevance, mask, alpha=0.5),
    )
    with pytest.raises(ValueError, match="needs the replay's relevance"):
        get_method("mrtpo")(rewards, mask)
    with pytest.raises(ValueError, match="needs the relevant-span masks"):
        get_method("mrtpo:oracle")(rewards, mask)
    with pytest.raises(ValueError, match="needs the sampling entropy"):
        get_method("entropy")(rewards, mask)
    with pytest.raises(ValueError, match="unknown advantage method"):
        get_method("ppo")


def test_bad_input_gives_clear_value_errors():
    rewards, relevance, mask = torch.rand(2, 3, 2), torch.rand(2, 3, 2, 4), torch.ones(2, 3, 4)
    cases = [
        (lambda: grpo_advantages(torch.rand(2, 3)), "rewards must be"),
        (lambda: gdpo_advantages(rewards, weights=[1.0]), "weights must be"),
        (lambda: mrtpo_token_advantages(rewards, relevance, torch.full((2, 3, 4), 0.5)), "only 0 and 1"),
        (lambda: mrtpo_token_advantages(rewards, torch.rand(2, 3, 3, 4), mask), "relevance must be"),
        (lambda: mrtpo_token_advantages(rewards, relevance, torch.ones(2, 3, 5)), "tokens"),
        (lambda: mrtpo_token_advantages(rewards, relevance, mask, alpha=1.5), "alpha"),
        (lambda: mrtpo_token_advantages(rewards, relevance, mask, gamma=-1.0), "gamma"),
        (lambda: get_method("grpo")(rewards, torch.ones(3, 3, 4)), "mask must be"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


# ------------------------------------------------------------------------------------------ properties


@settings(max_examples=80, deadline=None)
@given(
    N=st.integers(1, 3),
    G=st.integers(1, 4),
    K=st.integers(1, 3),
    T=st.integers(1, 6),
    alpha=st.floats(0.0, 1.0),
    gamma=st.floats(0.0, 4.0),
    seed=st.integers(0, 10_000),
    nan_frac=st.sampled_from([0.0, 0.3]),
    zero_relevance=st.booleans(),
)
def test_mrtpo_invariants_property(N, G, K, T, alpha, gamma, seed, nan_frac, zero_relevance):
    rewards = _random_rewards(N, G, K, seed, nan_frac)
    relevance, mask = _random_case(N, G, K, T, seed + 1)
    if zero_relevance:
        relevance[:, 0] = 0.0
    _, gdpo = gdpo_advantages(rewards)
    adv = mrtpo_token_advantages(rewards, relevance, mask, alpha=alpha, gamma=gamma)
    assert adv.shape == (N, G, T) and bool(adv.isfinite().all())
    assert bool((adv[mask == 0] == 0).all())
    assert torch.allclose(_token_mean(adv, mask), gdpo, atol=1e-9)
    w = mrtpo_token_weights(relevance, mask, alpha, gamma)
    assert torch.allclose((w * mask[:, :, None]).sum(-1), mask.sum(-1)[:, :, None].expand(N, G, K), atol=1e-9)
    if zero_relevance:
        assert torch.allclose(adv[:, 0], gdpo[:, 0, None] * mask[:, 0], atol=1e-9)
    assert torch.allclose(
        mrtpo_token_advantages(rewards, relevance, mask, alpha=0.0), gdpo[..., None] * mask, atol=1e-12
    )


def test_a_degenerate_batch_keeps_mrtpo_bounded_with_gdpos_token_mean():
    """N=1, G=2, K=2, rewards [[1, 0], [0, 1]]: S is 0 on both rows (batch std 0), so GDPO gives 0; MRTPO's token
    terms are left unscaled instead of divided by eps alone (which gave +-15,000)."""
    rewards = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # (1, 2, 2)
    relevance = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]]])  # reward k on token k
    mask = torch.ones(1, 2, 2)
    assert torch.equal(gdpo_advantages(rewards)[1], torch.zeros(1, 2))
    adv = mrtpo_token_advantages(rewards, relevance, mask)  # (1, 2, 2)
    ahat = 0.5 / (math.sqrt(0.5) + 1e-4)  # G = 2: (1 - 0.5) / (Bessel std + eps)
    assert adv[0, 0].tolist() == pytest.approx([2 * ahat, -2 * ahat])  # w = 2 on its own token, 0 elsewhere
    assert adv[0, 1].tolist() == pytest.approx([-2 * ahat, 2 * ahat])
    assert adv.mean(-1).abs().max() < 1e-6  # the token mean is GDPO's 0
    assert adv.abs().max() < 2  # bounded by sum_k |lambda_k| max_t w |Ahat_k|


def test_unscorable_rows_get_zero_and_leave_the_statistics():
    rewards = torch.tensor([[[1.0, 1.0], [0.0, 0.0], [math.nan, math.nan], [1.0, 0.0]]])  # row 2 unscorable
    assert grpo_advantages(rewards)[0].tolist() == pytest.approx([1.0, -1.0, 0.0, 0.0], abs=1e-3)
    ahat, final = gdpo_advantages(rewards)
    without = gdpo_advantages(rewards[:, [0, 1, 3]])[1]  # the same batch without the unscorable row
    assert final[0, 2] == 0 and final[0, [0, 1, 3]].tolist() == pytest.approx(without[0].tolist())
    tokens = mrtpo_token_advantages(rewards, torch.rand(1, 4, 2, 3), torch.ones(1, 4, 3))
    assert torch.equal(tokens[0, 2], torch.zeros(3)) and tokens[0, [0, 1, 3]].mean(-1).tolist() == pytest.approx(
        final[0, [0, 1, 3]].tolist(), abs=1e-5
    )


def test_oracle_weights_are_the_span_mask_normalized_to_mean_one():
    from mrtpo_viz.advantages import span_relevance

    in_span = torch.tensor([[[[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]]]])  # (1, 1, 2, 5): reward 1 has no span token
    mask = torch.tensor([[[1.0, 1, 1, 1, 0]]])  # the last token is padding
    w = mrtpo_token_weights(span_relevance(in_span), mask)[0, 0]  # (K, T)
    assert w[0].tolist() == [2.0, 2.0, 0.0, 0.0, 0.0]  # 4 valid tokens, 2 in the span: 4 / 2 each
    assert w[1].tolist() == [1.0, 1.0, 1.0, 1.0, 0.0]  # no span token: uniform
    rewards = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])  # (1, 3, 2)
    rel = torch.zeros(1, 3, 2, 5)
    rel[0, 0] = span_relevance(in_span)[0, 0]
    adv = get_method("mrtpo:oracle")(rewards, mask.expand(1, 3, 5), relevance=rel)
    assert torch.allclose(adv, mrtpo_token_advantages(rewards, rel, mask.expand(1, 3, 5)))


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_entropy_baseline_keeps_the_gdpo_token_mean(beta):
    from mrtpo_viz.advantages import entropy_token_advantages

    rewards = _random_rewards(3, 4, 2, seed=21)
    g = torch.Generator().manual_seed(22)
    H = torch.rand(3, 4, 6, generator=g) * 3
    mask = torch.ones(3, 4, 6)
    mask[0, 0, 4:] = 0  # padding
    adv = entropy_token_advantages(rewards, H, mask, beta=beta)
    gdpo = gdpo_advantages(rewards)[1]
    mean = (adv * mask).sum(-1) / mask.sum(-1)
    assert torch.allclose(mean, gdpo, atol=1e-6) and (adv[0, 0, 4:] == 0).all()
    if beta == 0.0:
        assert torch.allclose(adv, gdpo[..., None] * mask)
    else:  # the most uncertain token of a response gets the largest share of its advantage
        t = int(H[1, 1].argmax())
        assert abs(float(adv[1, 1, t])) == pytest.approx(float(adv[1, 1].abs().max()))
    flat = entropy_token_advantages(rewards, torch.zeros(3, 4, 6), mask, beta=beta)
    assert torch.allclose(flat, gdpo[..., None] * mask)  # no uncertainty anywhere: uniform (GDPO)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_mrtpo_token_shift_on_some_rows_is_mrtpo_minus_gdpo(alpha):
    """GDPO's advantage plus the shift of some rows (another process's rows live elsewhere) is MRTPO's token
    advantage of the whole batch on those rows; exactly 0 at alpha = 0; zero mean per response; 0 on padding and on
    unscorable rows; the parts are MRTPOParts' parts."""
    from mrtpo_viz.advantages import mrtpo_token_parts, mrtpo_token_shift

    g = torch.Generator().manual_seed(3)
    N, G, K, T = 3, 4, 2, 5
    rewards = torch.randint(0, 5, (N, G, K), generator=g).double() / 4
    rewards[1, 2] = NAN  # an unscorable row
    relevance = torch.rand(N, G, K, T, generator=g, dtype=torch.float64)
    mask = torch.ones(N, G, T, dtype=torch.float64)
    mask[0, 1, 3:] = 0
    full = mrtpo_token_parts(rewards, relevance, mask, [1.0, 0.5], alpha)
    rows = slice(4, 10)  # rows of two groups, as one process of three would hold
    flat = lambda x: x.reshape(N * G, *x.shape[2:])[rows]  # noqa: E731
    s = mrtpo_token_shift(rewards, flat(relevance), flat(mask), rows, [1.0, 0.5], alpha)
    want = torch.where(flat(mask) > 0, flat(full.token_advantages) - flat(full.gdpo)[:, None], 0.0)
    assert torch.allclose(s.shift, want, atol=1e-12)
    assert torch.allclose(s.parts, flat(full.parts), atol=1e-12)
    assert s.shift[2].abs().max() == 0  # row 6 = (1, 2) is unscorable
    means = (s.shift * flat(mask)).sum(-1) / flat(mask).sum(-1)
    assert means.abs().max() < 1e-12
    if alpha == 0.0:
        assert torch.equal(s.shift, torch.zeros_like(s.shift))  # exactly, so alpha = 0 is GDPO bitwise
    with pytest.raises(ValueError, match="relevance must be"):
        mrtpo_token_shift(rewards, flat(relevance)[:, :1], flat(mask), rows)
