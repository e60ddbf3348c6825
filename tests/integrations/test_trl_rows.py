"""MRTPOTrainer on what a real run brings (issue 41, item 0), on the bundled tiny policy, offline:

- a known real model's name resolves as ``load_policy`` resolves it (its downloaded folder; "not downloaded yet"
  names the command that fetches it, never a hub connection error);
- instruction following with per-prompt constraint sets: each prompt carries its own subset of the family's
  verifiers, TRL gets None for the others, and the trainer replays only the verifiers that apply (a verifier's
  information is undefined on a prompt that lacks its constraint) and gives those (row, reward) pairs no advantage.
"""

from __future__ import annotations

import json
import math
import shutil
import warnings

import pytest

pytest.importorskip("trl", reason="the TRL integration tests need trl (pip install mrtpo-viz[trl])")

import torch  # noqa: E402

from mrtpo_viz.integrations.trl import MRTPOConfig, MRTPOTrainer, trainer_model, trl_dataset  # noqa: E402
from mrtpo_viz.policy import PolicyLoadError, known  # noqa: E402
from mrtpo_viz.tasks import get_verifier, load_examples  # noqa: E402
from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR  # noqa: E402
from mrtpo_viz.training.rollouts import union_verifiers  # noqa: E402

KEY = "smollm2-135m-instruct"


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
        max_completion_length=12,
        log_tokens=False,
    )
    return MRTPOConfig(**{**base, **over})


def test_a_known_model_name_resolves_as_load_policy_does(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.chdir(tmp_path)  # no local folder of that name
    with pytest.raises(PolicyLoadError, match=f"not downloaded yet.*get-model {KEY}"):
        trainer_model(KEY)
    folder = known.model_dir(KEY)
    shutil.copytree(BUNDLED_POLICY_DIR, folder)  # the tiny policy stands in for the converted real model
    (folder / known.MARKER).write_text(json.dumps({"key": KEY, "gguf_sha256": known.known_model(KEY).sha256}))
    assert trainer_model(KEY) == str(folder.resolve())
    assert trainer_model("tiny-mrtpo") == str(BUNDLED_POLICY_DIR)
    assert trainer_model("owner/model") == "owner/model"  # a hub id goes on to TRL unchanged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = MRTPOTrainer(KEY, ["ifeval.no_comma"], args=_args(tmp_path), train_dataset=_data()[0])
    assert t.model.config._name_or_path == str(folder.resolve())


def _data():
    """Three prompts whose constraint sets differ (the second has forbidden words, the others do not)."""
    examples = load_examples("instruction_following", "train")
    picked = [examples[i] for i in (0, 3, 5)]
    names = union_verifiers(picked)
    assert len({tuple(e.verifiers) for e in picked}) == 3 and len(names) > max(len(e.verifiers) for e in picked)
    return trl_dataset(picked), picked, names


class Recording(MRTPOTrainer):
    def _log_batch(self, mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s):
        self.seen.append(
            dict(examples=examples, rewards=rewards.clone(), relevance=relevance.clone(), parts=parts.clone())
        )
        return super()._log_batch(
            mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s
        )


def test_per_prompt_constraint_sets_train_and_missing_rewards_get_nothing(tmp_path):
    data, picked, names = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Recording("tiny-mrtpo", names, args=_args(tmp_path), train_dataset=data)
        t.seen = []
        t.train()  # raised KwargsError (ifeval.forbidden_words needs input) before the fix
    (b,) = t.seen
    rewards, relevance, parts = b["rewards"], b["relevance"], b["parts"]  # (12, K), (12, K, T), (12, K, T)
    missing = rewards.isnan()  # (B, K)
    assert missing.any() and (~missing).any()
    # a row's None rewards are the verifiers whose constraint (with its kwargs) its prompt lacks; a constraint
    # without kwargs (ifeval.uppercase) applies to every prompt, as the IFEval verifiers define it
    by_id = {e.id: e for e in picked}
    lacks = torch.tensor([[math.isnan(get_verifier(n).score("x", by_id[e.id])) for n in names] for e in b["examples"]])
    assert torch.equal(missing, lacks)
    assert bool(missing[:, names.index("ifeval.forbidden_words")].any())  # the KwargsError of the issue
    assert float(relevance[missing].abs().max()) == 0.0 and float(parts[missing].abs().max()) == 0.0
    assert float(relevance[~missing].max()) > 0.01  # the applicable verifiers were replayed
    assert float(parts[~missing].abs().max()) > 0
