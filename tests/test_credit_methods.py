"""The credit methods on hand-built tensors: every method's weights have its shape and invariants, alpha = 0 gives
GDPO exactly for every method, entropy_top equals TRL's own mask, negative relevance counts as 0, a non-integer gamma
sharpens as written, and register_credit adds a method the registry runs."""

from __future__ import annotations

import math

import pytest
import torch

from mrtpo_viz import names
from mrtpo_viz.advantages import (
    ADVANTAGE_METHODS,
    ENTROPY_TOP_Q,
    entropy_top_mask,
    gdpo_advantages,
    get_method,
    mrtpo_token_weights,
    register_credit,
)

N, G, K, T = 2, 4, 3, 6


def _case():
    g = torch.Generator().manual_seed(5)
    rewards = torch.tensor(
        [
            [[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            [[1.0, 1.0, 0.0], [0.0, 1.0, math.nan], [0.0, 0.0, 1.0], [1.0, 0.0, 0.5]],
        ]
    )  # (N, G, K), one reward that does not apply
    mask = torch.ones(N, G, T)
    mask[1, :, 4:] = 0  # padding
    relevance = torch.rand(N, G, K, T, generator=g)  # (N, G, K, T)
    entropy = torch.rand(N, G, T, generator=g) * 3
    return rewards, mask, relevance, entropy


CREDITS = [m for m in names.METHODS if m != "grpo"]


def test_every_method_but_grpo_is_a_credit_method_with_k_weight_rows():
    rewards, mask, rel, ent = _case()
    assert len(CREDITS) == 14 and set(CREDITS) <= set(ADVANTAGE_METHODS)
    for name in CREDITS:
        w = get_method(name).token_weights(K, mask, relevance=rel, entropy=ent, alpha=1.0)
        assert w.shape == (N, G, K, T), name
        assert float(w[mask[:, :, None, :].expand_as(w) == 0].abs().max()) == 0.0, name  # 0 on padding
        assert float(w.min()) >= 0.0, name


@pytest.mark.parametrize("name", CREDITS)
def test_alpha_zero_gives_gdpo_exactly(name):
    rewards, mask, rel, ent = _case()
    gdpo = gdpo_advantages(rewards)[1][..., None] * mask  # (N, G, T)
    adv = ADVANTAGE_METHODS[name](rewards, mask, relevance=rel, entropy=ent, alpha=0.0)
    assert torch.allclose(adv, gdpo, rtol=0, atol=1e-6)
    weights = get_method(name).token_weights(K, mask, relevance=rel, entropy=ent, alpha=0.0)
    assert torch.equal(weights, mask[:, :, None, :].expand_as(weights))  # w = 1 exactly on every valid token


@pytest.mark.parametrize("name", CREDITS)
def test_the_token_mean_is_gdpos_where_the_method_says_so(name):
    rewards, mask, rel, ent = _case()
    method = get_method(name)
    adv = method(rewards, mask, relevance=rel, entropy=ent, alpha=1.0)  # (N, G, T)
    mean = adv.sum(-1) / mask.sum(-1)
    gdpo = gdpo_advantages(rewards)[1]
    differs = float((mean - gdpo).abs().max())
    if method.mean_preserving:
        assert differs < 1e-5, name
    else:
        assert differs > 1e-2, name  # the mask forms and entropy_top keep size, not the mean
    if name != "gdpo":
        assert float((adv - gdpo[..., None] * mask).abs().max()) > 1e-2, name  # the credit really moves


def test_one_context_and_entropy_share_one_row_for_every_reward():
    _, mask, rel, ent = _case()
    for name in ("one_context", "entropy", "entropy_top", "gdpo"):
        w = get_method(name).token_weights(K, mask, relevance=rel, entropy=ent)
        assert torch.equal(w, w[:, :, :1].expand_as(w)), name
    per_reward = get_method("mrtpo").token_weights(K, mask, relevance=rel)
    assert not torch.equal(per_reward, per_reward[:, :, :1].expand_as(per_reward))


def _trl_mask(entropies, mask, threshold):
    """TRL's own ``GRPOTrainer.get_high_entropy_mask`` (trl 1.16), run on one process."""
    trl = pytest.importorskip("trl")

    class OneProcess:
        def pad_across_processes(self, x, dim=0, pad_index=0):
            return x

        def gather(self, x):
            return x

    fake = type("Trainer", (), {"accelerator": OneProcess()})()
    return trl.GRPOTrainer.get_high_entropy_mask(fake, entropies, mask, threshold)


@pytest.mark.parametrize("q", [0.2, 0.5, 0.05, 1.0])
def test_entropy_top_equals_trls_own_mask(q):
    g = torch.Generator().manual_seed(11)
    entropy = torch.rand(6, 9, generator=g) * 4  # (B, T)
    entropy[0, 3] = entropy[2, 5]  # a tie
    mask = torch.ones(6, 9)
    mask[3, 5:] = 0
    mask[4, 2:] = 0
    ours = entropy_top_mask(entropy, mask, q)
    theirs = _trl_mask(entropy, mask, 1 - q)
    assert torch.equal(ours, theirs)
    kept = int(ours.sum())
    assert kept == int(theirs.sum()) and 0 < kept <= int(mask.sum())
    if q == 0.2:
        assert abs(kept / mask.sum() - 0.2) < 0.05  # about the top 20% of valid tokens
    if q == ENTROPY_TOP_Q:  # through the registry: GDPO's advantage times TRL's mask, as TRL's loss applies it
        rewards = torch.tensor([[[1.0], [0.0], [0.5]], [[0.0], [1.0], [1.0]]])  # (2, 3, 1)
        adv = ADVANTAGE_METHODS["entropy_top"](rewards, mask.view(2, 3, 9), entropy=entropy.view(2, 3, 9))
        expected = gdpo_advantages(rewards)[1][..., None] * theirs.view(2, 3, 9)  # (2, 3, 9)
        assert torch.allclose(adv, expected, rtol=0, atol=1e-7) and float(adv.abs().max()) > 0.5


def test_negative_relevance_counts_as_zero():
    """The contract of mrtpo_token_weights: a control that subtracts a baseline may go below 0; such tokens get the
    weight of a 0 relevance (pins ``clamp_min(0)``: without it, gamma = 1 gives negative weights and a non-integer
    gamma NaN)."""
    d = torch.tensor([[[[0.5, -0.3, 0.25, 0.0, -1.0]]]])  # (1, 1, 1, 5)
    mask = torch.ones(1, 1, 5)
    for gamma in (1.0, 0.5, 1.7):
        for normalization in ("mean", "mask"):
            w = mrtpo_token_weights(d, mask, 1.0, gamma, normalization)
            assert torch.equal(w, mrtpo_token_weights(d.clamp_min(0), mask, 1.0, gamma, normalization))
            assert bool(torch.isfinite(w).all()) and float(w.min()) == 0.0


def test_a_non_integer_gamma_sharpens_as_written():
    """``what = T * d^gamma / sum d^gamma``: d = (0.25, 1, 0, 0.0625), gamma = 0.5 -> d^gamma = (0.5, 1, 0, 0.25),
    sum 1.75, T = 4."""
    d = torch.tensor([[[[0.25, 1.0, 0.0, 0.0625]]]], dtype=torch.float64)
    mask = torch.ones(1, 1, 4, dtype=torch.float64)
    w = mrtpo_token_weights(d, mask, 1.0, 0.5)[0, 0, 0]
    expected = torch.tensor([0.5, 1.0, 0.0, 0.25], dtype=torch.float64) * 4 / 1.75
    assert torch.allclose(w, expected, rtol=0, atol=1e-12)
    half = mrtpo_token_weights(d, mask, 0.5, 0.5)[0, 0, 0]  # (1 - alpha) + alpha * what
    assert torch.allclose(half, 0.5 + 0.5 * expected, rtol=0, atol=1e-12)
    assert torch.allclose(mrtpo_token_weights(d, mask, 1.0, 0.5, "mask")[0, 0, 0], expected * 1.75 / 4, atol=1e-12)


@pytest.fixture
def registered():
    added = []
    yield added
    for name in added:
        ADVANTAGE_METHODS.pop(name, None)


def test_register_credit_adds_a_method_the_registry_runs(registered):
    def first_token(K, mask, relevance=None, entropy=None, alpha=1.0, gamma=1.0):
        """All of every reward's advantage on the first token (what = T on token 0)."""
        m = torch.as_tensor(mask)[:, :, None, :].expand(-1, -1, K, -1)  # (N, G, K, T)
        what = torch.zeros_like(m)
        what[..., 0] = m.sum(-1)
        return m * ((1 - alpha) + alpha * what)

    m = register_credit("first_token", first_token, title="First token", needs="")
    registered.append("first_token")
    assert get_method("first_token") is m and "first_token" not in names.METHODS
    rewards, mask, _, _ = _case()
    adv = ADVANTAGE_METHODS["first_token"](rewards, mask)
    gdpo = gdpo_advantages(rewards)[1]
    length = mask.sum(-1)
    assert torch.allclose(adv[..., 0], gdpo * length, atol=1e-5) and float(adv[..., 1:].abs().max()) < 1e-6
    with pytest.raises(ValueError, match="taken"):
        register_credit("mrtpo", first_token)
    with pytest.raises(ValueError, match="unknown input 'tokens'"):
        register_credit("other", first_token, needs="tokens")
    with pytest.raises(ValueError, match="unknown control 'loud'"):
        register_credit("other", first_token, replay={"control": "loud"})
