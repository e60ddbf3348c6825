"""Poisoned training: training refuses non-finite settings, never saves non-finite weights, and refuses to resume
from a checkpoint that holds them.

Accepted, ``lr=inf`` or ``lr=1e308`` (and ``gamma=inf``) make every parameter NaN after one step; a checkpoint
would save them, and every resume of the run would be poisoned too.
"""

from pathlib import Path

import pytest
import torch

from mrtpo_viz.tasks import Verdict, Verifier, register
from mrtpo_viz.tasks.base import Example
from mrtpo_viz.training.checkpoints import CheckpointError
from mrtpo_viz.training.config import TrainConfig
from mrtpo_viz.training.loop import train

register(
    Verifier(
        "test.poison",
        "custom",
        "Short",
        "1 if short.",
        lambda ex: "Be short.",
        lambda r, ex: Verdict(float(len(r) < 8), "short"),
    ),
    replace=True,
)
EXAMPLES = [Example("custom", f"Say something about {i}.", id=f"p{i}", verifiers=("test.poison",)) for i in range(4)]


def _config(out=None, **kw) -> TrainConfig:
    base = dict(
        task="custom",
        method="gdpo",
        group_size=4,
        prompts_per_step=2,
        steps=2,
        lr=1e-3,
        max_new_tokens=6,
        seed=0,
        threads=1,
        out_dir=None if out is None else str(out),
        save_every=1 if out is not None else 0,
    )
    return TrainConfig(**{**base, **kw})


@pytest.mark.parametrize(
    "change, says",
    [
        (dict(lr=float("inf")), "settings must be finite numbers: lr=inf"),
        (dict(lr=1e308), "lr must lie in (0, 1]"),
        (dict(gamma=float("inf")), "gamma=inf"),
        (dict(gamma=1e300), "gamma must lie in [0, 100]"),
        (dict(temperature=1e-300), "temperature must lie in [0.01, 100]"),
        (dict(max_grad_norm=float("nan")), "max_grad_norm=nan"),
        (dict(kl_coef=float("inf")), "kl_coef=inf"),
        (dict(reward_weights=(("test.poison", float("inf")),)), "reward_weights[test.poison]=inf"),
    ],
)
def test_non_finite_or_absurd_settings_are_refused(change, says):
    with pytest.raises(ValueError) as err:
        _config(**change)
    assert says in str(err.value)


def test_a_step_that_poisons_the_weights_stops_the_run_before_anything_is_saved(tiny_policy, tmp_path, monkeypatch):
    """An update that makes a weight NaN (forced here, as an overflow would) stops the run with a readable error;
    the checkpoint of the step before stays the newest (saved, the NaN weights would be resumed from)."""
    real_step = torch.optim.AdamW.step
    calls = []

    def poisoning_step(self, *a, **k):
        out = real_step(self, *a, **k)
        calls.append(1)
        if len(calls) == 2:
            with torch.no_grad():
                self.param_groups[0]["params"][0].view(-1)[0] = float("nan")
        return out

    monkeypatch.setattr(torch.optim.AdamW, "step", poisoning_step)
    with pytest.raises(ValueError, match="this step made the weights NaN or infinite .*lower the learning rate"):
        list(train(_config(tmp_path, steps=3), examples=EXAMPLES, policy=tiny_policy))
    assert (tmp_path / "checkpoints" / "LATEST").read_text() == "step-000001"


def test_a_checkpoint_with_nan_weights_is_refused_on_resume(tiny_policy, tmp_path):
    """A checkpoint whose weights hold NaN (damaged, or saved by an older version) is refused with the way out;
    resumed, every later step would sample from NaN probabilities."""
    from safetensors.torch import load_file, save_file

    list(train(_config(tmp_path, steps=2), examples=EXAMPLES, policy=tiny_policy))
    newest = Path(tmp_path) / "checkpoints" / "step-000002" / "model.safetensors"
    weights = load_file(newest)
    first = sorted(weights)[0]
    weights[first].view(-1)[0] = float("nan")
    save_file(weights, newest)
    with pytest.raises(CheckpointError, match="holds NaN or infinite values .*write step-000001 into"):
        list(train(_config(tmp_path, steps=3), examples=EXAMPLES, policy=tiny_policy))
