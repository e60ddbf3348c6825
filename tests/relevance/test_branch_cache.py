"""The branch cache (``mrtpo_viz.relevance.branch_cache``): with it on, a replay reruns only the branches it has not
seen, and gives what a replay without it gives; a change of the weights is never served from it; it keeps to its
byte budget. Off by default.

Tolerances: a branch replayed alone, or in another batch, rounds differently in float32 than in the batch the
uncached replay runs (padding changes the kernels' blocking): ~1e-7 on these scores; 1e-5 leaves room for other
CPUs' kernels and stays far below any difference a changed branch makes (~1e-2 and up)."""

import copy
import dataclasses

import pytest
import torch

from mrtpo_viz.relevance import branch_cache
from mrtpo_viz.relevance.engine import replay, replay_steps
from mrtpo_viz.tasks.example_sources import load_examples

ATOL = 1e-5


HOOKS = []


@pytest.fixture(autouse=True)
def _remove_hooks():
    yield
    while HOOKS:
        HOOKS.pop().remove()


@pytest.fixture
def cache():
    before = branch_cache.active()
    c = branch_cache.enable(64)
    yield c
    branch_cache._ACTIVE[0] = before


@pytest.fixture(scope="module")
def example():
    return load_examples("instruction_following", split="test")[5]  # three verifiers


class Forwards:
    """Counts the model's forward calls (each forward of a replay: the prefix pass, a batch of suffixes, ...); the
    hook goes when the test ends (:func:`forwards`): the policy is the session's."""

    def __init__(self, model):
        self.n = 0
        self.handle = model.register_forward_pre_hook(self._count)
        HOOKS.append(self.handle)

    def _count(self, *_):
        self.n += 1

    def take(self) -> int:
        n, self.n = self.n, 0
        return n


def _close(a, b) -> None:
    assert a.verifiers == b.verifiers and a.token_ids == b.token_ids
    assert torch.allclose(a.scores, b.scores, atol=ATOL) and torch.allclose(a.raw_scores, b.raw_scores, atol=ATOL)
    assert torch.allclose(a.logp_with, b.logp_with, atol=ATOL) and torch.allclose(a.entropy, b.entropy, atol=ATOL)


def _edited(rel, which: int = 1) -> dict:
    infos = dict(rel.infos)
    name = rel.verifiers[which]
    infos[name] = "Check this first. " + infos[name]
    return infos


def test_off_by_default():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", "from mrtpo_viz.relevance import branch_cache; print(branch_cache.active())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "None"


def test_a_second_replay_runs_no_forward_and_an_edit_runs_one_branch(tiny_policy, example, cache):
    vs = list(example.verifiers)
    count = Forwards(tiny_policy.model)
    first = replay(tiny_policy, example, example.reference, vs)
    assert count.take() == 2 and len(cache) == 4  # the branch without information whole, then the 3 others
    again = replay(tiny_policy, example, example.reference, vs)
    assert count.take() == 0 and cache.hits == 4
    assert torch.equal(again.scores, first.scores)  # the same logits: the same numbers, bit for bit

    infos = _edited(first)
    edited = replay(tiny_policy, example, example.reference, vs, infos=infos)
    assert count.take() == 2  # the prefix, then the edited verifier's branch
    branch_cache._ACTIVE[0] = None
    fresh = replay(tiny_policy, example, example.reference, vs, infos=infos)
    _close(edited, fresh)
    assert torch.equal(edited.scores[0], first.scores[0]) and torch.equal(edited.scores[2], first.scores[2])
    assert (edited.scores[1] - first.scores[1]).abs().max() > 1e-3  # the edit does change its row


@pytest.mark.parametrize("control", ["none", "placebo", "others"])
def test_progressive_and_one_shot_replays_read_the_same_cache(tiny_policy, example, cache, control):
    vs = list(example.verifiers)
    branch_cache._ACTIVE[0] = None
    plain = replay(tiny_policy, example, example.reference, vs, control=control)
    edited_plain = replay(tiny_policy, example, example.reference, vs, control=control, infos=_edited(plain, 2))
    branch_cache._ACTIVE[0] = cache
    count = Forwards(tiny_policy.model)
    for progressive in (True, False, True):
        steps = list(
            replay_steps(tiny_policy, example, example.reference, vs, [("js", control)], progressive=progressive)
        )
        _close(steps[-1].relevance, plain)
    extra = 3 if control == "placebo" else 0  # placebo's K extra branches
    assert len(cache) == 4 + extra
    count.take()
    steps = list(
        replay_steps(
            tiny_policy, example, example.reference, vs, [("js", control)], infos=_edited(plain, 2), progressive=True
        )
    )
    # the prefix and verifier 3's branch, alone; placebo's third extra branch too (its text follows the information's
    # length), in a forward of its own
    assert count.take() == (3 if control == "placebo" else 2)
    _close(steps[-1].relevance, edited_plain)
    assert [s.done for s in steps] == [0, 1, 2, 3][: len(steps) - 1] + [3]


@pytest.mark.parametrize("how", ["optimizer step", "write through .data"])
def test_changed_weights_are_never_served_from_the_cache(tiny_policy, example, cache, how):
    # a copy of the model (load_policy returns the session's one, which other tests use): its weights change below
    policy = dataclasses.replace(tiny_policy, model=copy.deepcopy(tiny_policy.model))
    vs = list(example.verifiers)
    before = replay(policy, example, example.reference, vs)
    with torch.no_grad():
        for p in policy.model.parameters():
            if how == "optimizer step":
                p.add_(0.05 * torch.randn_like(p))
            else:
                p.data.copy_(p.data + 0.05 * torch.randn_like(p))
    count = Forwards(policy.model)
    after = replay(policy, example, example.reference, vs)
    assert count.take() == 2  # every branch again
    branch_cache._ACTIVE[0] = None
    _close(after, replay(policy, example, example.reference, vs))
    assert (after.scores - before.scores).abs().max() > 1e-3


def test_the_budget_holds_and_views_are_kept_as_their_own_copies():
    cache = branch_cache.BranchCache(max_bytes=3 * 4 * 10 * 7)  # three (1, 10, 7) float32 rows
    batch = torch.randn(4, 10, 7)
    for b in range(4):
        cache.put(("w",), [b], batch[b : b + 1])
    assert len(cache) == 3 and cache.bytes == 3 * 280  # the oldest went out
    assert cache.get(("w",), [0]) is None and torch.equal(cache.get(("w",), [3]), batch[3:4])
    held = cache.get(("w",), [1])
    assert held.untyped_storage().nbytes() == held.nbytes == 280  # not a view into the whole batch
    cache.get(("w",), [2])
    cache.put(("w",), [9], torch.zeros(1, 10, 7))  # the least recently used (row 1 was read before row 2... and 3)
    assert cache.get(("w",), [3]) is None and cache.get(("w",), [1]) is not None
    cache.put(("w",), [10], torch.zeros(1, 100, 7))  # larger than the whole budget: not kept, nothing evicted
    assert cache.get(("w",), [10]) is None and len(cache) == 3
    assert cache.get(("other weights",), [1]) is None
    cache.clear()
    assert len(cache) == 0 and cache.bytes == 0


def test_the_setting_turns_it_off_with_zero_and_refuses_a_negative_budget():
    from mrtpo_viz.settings import SettingsError, get_settings

    assert get_settings({}).replay_cache_mb == 256.0
    assert get_settings({"MRTPO_REPLAY_CACHE_MB": "0"}).replay_cache_mb == 0
    with pytest.raises(SettingsError, match="MRTPO_REPLAY_CACHE_MB must be a positive number"):
        get_settings({"MRTPO_REPLAY_CACHE_MB": "-1"})
    before = branch_cache.active()
    try:
        assert branch_cache.enable(0) is None and branch_cache.active() is None
        assert branch_cache.enable(1).max_bytes == 2**20
    finally:
        branch_cache._ACTIVE[0] = before


def test_the_estimate_counts_only_the_branches_the_cache_lacks(tiny_policy, example, cache):
    """So that a replay after an edit, one branch to run, is not split into steps it does not need."""
    from mrtpo_viz.relevance import progressive
    from mrtpo_viz.relevance.engine import plan_replay

    vs = list(example.verifiers)
    br = plan_replay(tiny_policy, example, example.reference, vs).branches
    cold = progressive.estimate_seconds(tiny_policy, br)
    rel = replay(tiny_policy, example, example.reference, vs)
    assert progressive.estimate_seconds(tiny_policy, br) == 0  # every branch held
    edited = plan_replay(tiny_policy, example, example.reference, vs, infos=_edited(rel)).branches
    one = progressive.estimate_seconds(tiny_policy, edited)
    T, P = len(edited.response_ids), len(edited.prefix_ids)
    assert one == pytest.approx(
        cold * (P + len(edited.suffix_ids[2]) + T) / (P + sum(len(s) + T for s in br.suffix_ids))
    )
    assert cache.hits == 0  # asking what it holds is not a read
