"""The training loop on the tiny random-init policy: learning, method equivalence, resume, the UI generator."""
import csv
import math

import pytest
import torch

from mrtpo_viz.results import StepMetrics
from mrtpo_viz.tasks import Example
from mrtpo_viz.training import TrainConfig, train
from mrtpo_viz.verifiers import Verdict, Verifier, register

torch.set_num_threads(1)

LETTER = "e"


def _share_of_letter(response: str, example) -> Verdict:
    share = response.count(LETTER) / max(len(response), 1)
    return Verdict(min(1.0, 4 * share), f"{share:.0%} of the characters are {LETTER!r}")


def _brevity(response: str, example) -> Verdict:
    return Verdict(1.0 if len(response) <= 20 else 0.0, f"{len(response)} characters")


register(Verifier("test.letter_e", "custom", "Letter e", "Rewards responses made of the letter e.",
                  lambda ex: f"Use the letter {LETTER} as often as you can.", _share_of_letter), replace=True)
register(Verifier("test.brief", "custom", "Brief", "Rewards responses of at most 20 characters.",
                  lambda ex: "Answer in at most 20 characters.", _brevity), replace=True)


def _examples(verifiers=("test.letter_e",), n=4):
    return [Example("custom", f"Write something about the weather in city {i}.", id=f"ex{i}",
                    verifiers=tuple(verifiers)) for i in range(n)]


def _config(tmp_path=None, **kw):
    base = dict(task="custom", method="gdpo", group_size=4, prompts_per_step=2, steps=2, lr=1e-3,
                max_new_tokens=12, seed=0, threads=1)
    base.update(kw)
    if tmp_path is not None:
        base["out_dir"] = str(tmp_path)
    return TrainConfig(**base)


def _params(policy_run):
    return torch.cat([p.detach().flatten() for p in policy_run.policy.model.parameters()])


# --- learning ------------------------------------------------------------------------------------------------------

def test_seeded_steps_raise_the_mean_reward(tiny_policy):
    cfg = _config(method="grpo", steps=10, group_size=8, prompts_per_step=2, lr=1e-2, max_new_tokens=10)
    curve = [m.rewards["test.letter_e"] for m in train(cfg, examples=_examples(), policy=tiny_policy)]
    first, last = sum(curve[:3]) / 3, sum(curve[-3:]) / 3
    print("letter-e reward per step:", [round(r, 3) for r in curve])
    assert last > first + 0.15, curve


def test_a_step_yields_full_metrics(tiny_policy):
    cfg = _config(method="gdpo", steps=1)
    (m,) = list(train(cfg, examples=_examples(("test.letter_e", "test.brief")), policy=tiny_policy))
    assert isinstance(m, StepMetrics) and m.step == 0 and m.method == "gdpo"
    assert set(m.rewards) == {"test.letter_e", "test.brief"}
    assert all(0.0 <= r <= 1.0 for r in m.rewards.values())
    assert 0 < m.mean_length <= cfg.max_new_tokens + 1
    assert set(m.times) == {"sample", "score", "replay", "advantages", "update"}
    assert math.isnan(m.relevance_mean)  # GDPO does not replay
    assert m.clip_frac == 0.0  # one update per batch: ratio 1
    s = m.sample
    assert len(s["tokens"]) == len(s["adv"]) and s["text"] and set(s["rewards"]) <= set(m.rewards)


def test_the_shared_policy_is_not_trained(tiny_policy):
    before = torch.cat([p.detach().flatten().clone() for p in tiny_policy.model.parameters()])
    list(train(_config(steps=1, lr=1e-2), examples=_examples(), policy=tiny_policy))
    after = torch.cat([p.detach().flatten() for p in tiny_policy.model.parameters()])
    assert torch.equal(before, after)


# --- validation ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, words", [
    ({"method": "ppo"}, "unknown method"),
    ({"control": "nothing"}, "unknown control"),
    ({"group_size": 1}, "group_size"),
    ({"temperature": 0.0}, "temperature"),
    ({"alpha": 1.5}, "alpha"),
    ({"clip_eps": 0.0}, "clip_eps"),
    ({"lr": -1.0}, "lr"),
    ({"save_every": 2}, "out_dir"),
])
def test_config_rejects_bad_values(kw, words):
    with pytest.raises(ValueError, match=words):
        TrainConfig(**kw)


def test_unknown_task_and_weights_are_reported(tiny_policy):
    with pytest.raises(ValueError, match="unknown task"):
        next(train(TrainConfig(task="chess"), policy=tiny_policy))
    cfg = _config(reward_weights=(("test.nope", 2.0),))
    with pytest.raises(ValueError, match="test.nope"):
        next(train(cfg, examples=_examples(), policy=tiny_policy))
