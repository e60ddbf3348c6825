"""MRTPOTrainer runs the registered credit methods (``MRTPOConfig(credit=...)``) on the bundled tiny policy, offline:
each trains a step with its own replay input and settings, alpha = 0 gives TRL's GDPO advantage bitwise, and the
methods whose input the trainer does not have are refused with what to use instead."""

from __future__ import annotations

import json
import warnings

import pytest

pytest.importorskip("trl", reason="the TRL integration tests need trl (pip install mrtpo-viz[trl])")

import torch  # noqa: E402

from mrtpo_viz.advantages import get_method  # noqa: E402
from mrtpo_viz.integrations.trl import MRTPOConfig, MRTPOTrainer, trl_dataset  # noqa: E402
from mrtpo_viz.tasks import load_examples  # noqa: E402
from mrtpo_viz.training.rollouts import union_verifiers  # noqa: E402


def _args(tmp_path, **over):
    base = dict(
        output_dir=str(tmp_path / "run"),
        seed=7,
        use_cpu=True,
        bf16=False,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        max_steps=1,
        learning_rate=1e-3,
        per_device_train_batch_size=12,
        num_generations=4,
        max_completion_length=16,
        log_tokens=False,
    )
    return MRTPOConfig(**{**base, **over})


class Recording(MRTPOTrainer):
    def _log_batch(self, mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s):
        mask = output["completion_mask"].cpu()
        self.seen = dict(trl=output["advantages"].cpu(), token=token_adv.cpu(), mask=mask, w=self._mrtpo_weights)
        self.seen["relevance"], self.seen["settings"] = relevance.clone(), self._replay_settings()
        return super()._log_batch(
            mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s
        )


def _run(tmp_path, credit, **over):
    examples = [load_examples("instruction_following", "train")[i] for i in (0, 3, 5)]  # rewards vary in groups
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Recording(
            "tiny-mrtpo",
            union_verifiers(examples),
            args=_args(tmp_path, credit=credit, **over),
            train_dataset=trl_dataset(examples),
        )
        t.train()
    return t.seen, json.loads((tmp_path / "run" / "mrtpo" / "run.json").read_text())


@pytest.mark.parametrize("credit", ["mrtpo-mask", "mrtpo@others", "one_context", "mrtpo:shuffle"])
def test_a_credit_method_trains_with_its_own_input(tmp_path, credit):
    b, info = _run(tmp_path, credit)
    method = get_method(credit)
    assert info["credit"] == credit and b["settings"]["control"] == dict(method.replay).get("control", "none")
    valid = b["mask"] > 0
    mean = (b["token"] * b["mask"]).sum(1) / b["mask"].sum(1)
    shift = (b["token"] - b["trl"][:, None])[valid]
    assert float(shift.abs().max()) > 1e-3  # the credit moves advantage between tokens
    if method.mean_preserving:
        assert float((mean - b["trl"]).abs().max()) < 1e-5  # token mean = TRL's GDPO advantage
    else:
        assert float(b["w"].max()) <= 1.0 + 1e-6  # mask normalization: weights in [0, 1], no T/|S| factor
    if credit == "one_context":
        assert torch.equal(b["w"], b["w"][:, :1].expand_as(b["w"]))  # one row shared by every reward
    if credit == "mrtpo:shuffle":  # the replay's own values, placed elsewhere
        assert not torch.allclose(
            b["w"],
            get_method("mrtpo").token_weights(b["w"].shape[1], b["mask"][None], relevance=b["relevance"][None])[0],
        )


def test_alpha_zero_is_trls_gdpo_bitwise_for_a_credit_method(tmp_path):
    b, _ = _run(tmp_path, "one_context", alpha=0.0)
    assert torch.equal(b["token"], b["trl"][:, None].expand_as(b["token"]))


@pytest.mark.parametrize(
    "credit, words",
    [
        ("entropy_top", "top_entropy_quantile=0.2 with credit='gdpo'"),
        ("entropy", "sampling entropy"),
        ("mrtpo:oracle", "labelled spans"),
        ("grpo", "not a credit method"),
        ("nope", "unknown advantage method 'nope'"),
    ],
)
def test_credits_the_trainer_cannot_provide_are_refused(tmp_path, credit, words):
    with pytest.raises(ValueError, match=words):
        _args(tmp_path, credit=credit)
