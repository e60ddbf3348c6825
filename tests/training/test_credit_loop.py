"""The credit methods in the project's training loop: each takes its own per-token input (the registry declares it),
alpha = 0 gives GDPO's update to the bit for every method, the one-context branch joins the replay's batch and is
built from the same pieces, and the wrong-hint contrast is bounded by the corrupted control it is built from."""

from __future__ import annotations

import math

import pytest
import torch

from mrtpo_viz import names
from mrtpo_viz.advantages import ADVANTAGE_METHODS, register_credit
from mrtpo_viz.relevance.engine import plan_replay, replay
from mrtpo_viz.tasks import Verdict, Verifier, get_verifier, register
from mrtpo_viz.training.config import TrainConfig
from mrtpo_viz.training.group_replay import group_relevance
from tests.training.test_loop import _config, _examples

NEW = ["mrtpo@others", "mrtpo@kl", "wrong_hint", "one_context", "entropy_top"]

register(
    Verifier(
        "test.city",
        "custom",
        "City",
        "Rewards responses rich in the letter a.",
        lambda ex: f"Name city number {ex.id} and use the letter a.",  # differs per example: corrupted can borrow
        lambda response, ex: Verdict(min(1.0, 4 * response.count("a") / max(len(response), 1)), "share of a"),
    ),
    replace=True,
)
VERIFIERS = ("test.letter_e", "test.city")


def _step(tiny_policy, verifiers=VERIFIERS, **kw):
    """Parameters after one step on one prompt of G = 6 (as test_loop's ``_one_step_params``), and its metrics."""
    from mrtpo_viz.training.loop import setup_run, train_step

    config = _config(steps=1, prompts_per_step=1, group_size=6, lr=1e-3, **kw)
    run = setup_run(config, _examples(verifiers), tiny_policy)
    m = train_step(run, 0)
    return torch.cat([p.detach().flatten() for p in run.policy.model.parameters()]), m


@pytest.mark.parametrize("method", NEW)
def test_a_new_method_trains_a_step_and_alpha_zero_is_gdpo_to_the_bit(tiny_policy, method):
    gdpo, m_gdpo = _step(tiny_policy, method="gdpo")
    zero, _ = _step(tiny_policy, method=method, alpha=0.0)
    one, m1 = _step(tiny_policy, method=method, alpha=1.0)
    assert m_gdpo.adv_absmax > 0.5 and m1.method == method and math.isfinite(m1.loss)
    assert torch.equal(zero, gdpo)  # w = 1 exactly: the same operations on the same numbers
    assert float((one - gdpo).abs().max()) > 1e-4  # the comparison can fail: alpha = 1 moves the credit
    if method != "entropy_top":
        assert m1.relevance_mean > 0  # the replay ran with the method's own settings


def test_the_method_fixes_its_replay_settings(tiny_policy, monkeypatch):
    import mrtpo_viz.training.rollouts as ro

    seen = []
    real = ro.rollout_relevance
    monkeypatch.setattr(
        ro, "rollout_relevance", lambda *a, **k: seen.append((k["control"], k["metric"])) or real(*a, **k)
    )
    for method in ("mrtpo", "mrtpo@others", "mrtpo@kl", "wrong_hint"):
        _step(tiny_policy, method=method, control="placebo")
    assert seen == [("placebo", "js"), ("others", "js"), ("placebo", "kl"), ("wrong_hint", "js")]


def test_one_context_branch_is_built_from_the_same_pieces(tiny_policy):
    ex = _examples(VERIFIERS)[0]
    response = tiny_policy.tokenizer("Sunny and warm.", add_special_tokens=False)["input_ids"]
    plain = plan_replay(tiny_policy, ex, response, list(ex.verifiers))
    plan = plan_replay(tiny_policy, ex, response, list(ex.verifiers), one_context=True)
    br = plan.branches
    assert br.B == plain.branches.B + 1 == 4 and br.response_ids == plain.branches.response_ids == response
    assert br.prefix_ids == plain.branches.prefix_ids and br.suffix_ids[:-1] == plain.branches.suffix_ids
    last = plan.texts[-1]
    assert all(info in last for info in plan.infos) and all(v.title in last for v in plan.verifiers)
    # with one verifier, the one-context branch is that verifier's own branch: the same numbers
    scores, one = group_relevance(tiny_policy, ex, [response, response[:3]], ["test.letter_e"], one_context=True)
    assert torch.allclose(one, scores[:, 0], rtol=0, atol=1e-6) and float(one.max()) > 1e-3
    assert float(one[1, 3:].abs().max()) == 0.0  # padding of the shorter response
    both, one2 = group_relevance(tiny_policy, ex, [response], list(ex.verifiers), one_context=True)
    assert torch.allclose(both, group_relevance(tiny_policy, ex, [response], list(ex.verifiers)), atol=1e-6)
    assert float((one2[0] - both[0, 0]).abs().max()) > 1e-4  # both informations at once differ from either alone


def test_wrong_hint_is_the_corrupted_branches_contrast_and_never_exceeds_corrupted(tiny_policy):
    """Both controls run the same branches (right information, another example's, none); ``corrupted`` is
    JS(right, wrong), ``wrong_hint`` clip(JS(right, none) - JS(wrong, none), 0), at most JS(right, wrong)."""
    ex, other = _examples(("test.letter_e", "test.brief"), n=2)
    other = type(other)(other.task, "Describe a mountain.", id=other.id, verifiers=("test.brief",))
    response, names_ = "Rain is expected over the entire region.", ["test.letter_e"]
    corrupted = replay(tiny_policy, ex, response, names_, control="corrupted", pool=[ex, other]).scores
    contrast = replay(tiny_policy, ex, response, names_, control="wrong_hint", pool=[ex, other]).scores
    raw = replay(tiny_policy, ex, response, names_).scores  # JS(right, none)
    borrowed = {"test.letter_e": get_verifier("test.brief").info(other)}  # what corrupted borrows, under e's title
    wrong = replay(tiny_policy, ex, response, names_, infos=borrowed).scores  # JS(wrong, none)
    assert corrupted.shape == contrast.shape == (1, raw.shape[-1])
    assert torch.allclose(contrast, (raw - wrong).clamp_min(0), atol=1e-5)
    assert bool((contrast <= corrupted + 1e-5).all())  # the triangle inequality of the JS distance
    assert float((corrupted - contrast).abs().max()) > 1e-3  # they differ: not the same method


def test_a_registered_credit_method_trains_in_the_loop(tiny_policy):
    def last_token(K, mask, relevance=None, entropy=None, alpha=1.0, gamma=1.0):
        m = torch.as_tensor(mask)[:, :, None, :].expand(-1, -1, K, -1).float()  # (N, G, K, T)
        last = m * (m.flip(-1).cumsum(-1).flip(-1) == 1)  # each response's last valid token
        return m * ((1 - alpha) + alpha * last * m.sum(-1, keepdim=True))

    register_credit("last_token", last_token, needs="")
    try:
        assert "last_token" not in names.METHODS
        TrainConfig(method="last_token")  # accepted by name
        gdpo, _ = _step(tiny_policy, method="gdpo")
        moved, m = _step(tiny_policy, method="last_token")
        assert m.method == "last_token" and float((moved - gdpo).abs().max()) > 1e-4
    finally:
        ADVANTAGE_METHODS.pop("last_token")
    with pytest.raises(ValueError, match="unknown method 'last_token'"):
        _config(method="last_token")
