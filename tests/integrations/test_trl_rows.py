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
    # a row's None rewards are the verifiers its example does not list, also those whose check needs no kwargs and
    # could score any text (ifeval.uppercase): the dataset's ``verifiers`` column says what each prompt asks for
    by_id = {e.id: e for e in picked}
    lacks = torch.tensor([[n not in by_id[e.id].verifiers for n in names] for e in b["examples"]])
    assert torch.equal(missing, lacks)
    kwarg_free = [n for n in names if not math.isnan(get_verifier(n).score("x", picked[0]))]
    assert any(n not in picked[0].verifiers for n in kwarg_free)  # such a check is in the mix and left out
    assert bool(missing[:, names.index("ifeval.forbidden_words")].any())  # the KwargsError of the issue
    assert float(relevance[missing].abs().max()) == 0.0 and float(parts[missing].abs().max()) == 0.0
    assert float(relevance[~missing].max()) > 0.01  # the applicable verifiers were replayed
    assert float(parts[~missing].abs().max()) > 0


class Advantages(MRTPOTrainer):
    """Records what the loop needs to redo the step: the rows, their ids, rewards, relevance and token advantages."""

    def _log_batch(self, mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s):
        self.seen.append(
            dict(
                examples=examples,
                prompt_ids=[ids[m > 0].tolist() for ids, m in zip(output["prompt_ids"], output["prompt_mask"])],
                completion_ids=output["completion_ids"].cpu().clone(),
                lengths=list(lengths),
                rewards=rewards.clone(),
                relevance=relevance.clone(),
                token_adv=token_adv.detach().cpu().clone(),
            )
        )
        return super()._log_batch(
            mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s
        )


def test_the_projects_loop_gives_the_trainers_advantages_on_the_same_rollouts(tmp_path):
    """The real-model arm trains with the project's loop (``mrtpo_viz.training``), not ``MRTPOTrainer``: on the same
    completions (TRL's ids, replayed by a fresh copy of the start policy) the loop's relevance and MRTPO token
    advantages are the trainer's."""
    from mrtpo_viz.advantages import get_method
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.training.rollouts import Rollouts, rollout_relevance, rollout_rewards

    data, picked, names = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Advantages("tiny-mrtpo", names, args=_args(tmp_path), train_dataset=data)
        t.seen = []
        t.train()
    (b,) = t.seen
    G, K = 4, len(names)
    N = len(b["examples"]) // G
    ids = [row[:n].tolist() for row, n in zip(b["completion_ids"], b["lengths"])]
    policy = load_policy("tiny-mrtpo")  # the weights the trainer replayed with (its replay precedes its update)
    tok = policy.tokenizer
    by_id = {e.id: e for e in picked}  # TRL's rows carry the prompt and kwargs; the example lists its verifiers
    rollouts = Rollouts(
        examples=[by_id[b["examples"][i * G].id] for i in range(N)],
        texts=[[tok.decode(ids[i * G + g], skip_special_tokens=True) for g in range(G)] for i in range(N)],
        prompt_ids=[b["prompt_ids"][i * G] for i in range(N)],
        response_ids=[[ids[i * G + g] for g in range(G)] for i in range(N)],
    )
    assert all(b["prompt_ids"][i] == rollouts.prompt_ids[i // G] for i in range(N * G))  # G rows per prompt
    rewards = rollout_rewards(rollouts, names)  # (N, G, K), NaN where a verifier does not apply
    assert torch.equal(rewards.isnan(), b["rewards"].view(N, G, K).isnan())
    assert torch.equal(rewards.nan_to_num(-1), b["rewards"].view(N, G, K).float().nan_to_num(-1))
    relevance = rollout_relevance(
        policy, rollouts, names, metric="js", control="none", info_position="user_end"
    )  # (N, G, K, T)
    T = relevance.shape[-1]
    trainer_relevance = b["relevance"].view(N, G, K, -1)[..., :T]
    # float32 forwards of one model on the same ids, batched differently (TRL's rows vs the loop's groups): the
    # JS distances agree to float32 rounding, ~1e-6 here; 1e-4 leaves room for other CPUs' kernels
    assert float((relevance - trainer_relevance).abs().max()) < 1e-4
    assert float(relevance.max()) > 0.01
    adv = get_method("mrtpo")(rewards, rollouts.mask(), relevance, weights=torch.ones(K), alpha=1.0, gamma=1.0)
    trainer_adv = b["token_adv"].view(N, G, -1)[..., :T].double()
    mask = rollouts.mask() > 0
    # TRL's std and ours agree to ~1e-7 (test_advantages_trl); relevance rounding above moves weights by < 1e-4
    assert float((adv.double() - trainer_adv)[mask].abs().max()) < 1e-3
    assert float(adv.abs()[mask].max()) > 0.1  # not a batch where every advantage is zero
