"""MRTPO inside verl, against verl 0.9.1's own code (installed with ``pip install --no-deps -r requirements-ref.txt``):
the estimator through verl's ``compute_advantage`` on a ``DataProto``, verl's GDPO and GRPO estimators, the dispatch
patch, and the relevance step on the tiny policy against the project's ``replay``. Skipped without verl, except
under ``MRTPO_REQUIRE_REFERENCES=1`` (CI), where that is a failure."""

import os
import warnings

import numpy as np
import pytest
import torch

from mrtpo_viz.advantages import mrtpo_token_advantages
from mrtpo_viz.integrations import verl_mrtpo

KEYS = ["fmt", "acc"]


@pytest.fixture(scope="module")
def verl():
    """verl's modules the tests call: ``(core_algos, ray_trainer, DataProto)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from verl import DataProto
            from verl.trainer.ppo import core_algos, ray_trainer
    except ImportError as e:
        if os.environ.get("MRTPO_REQUIRE_REFERENCES") == "1":
            pytest.fail(f"verl must be installed here (pip install --no-deps -r requirements-ref.txt): {e}")
        pytest.skip(f"verl is not installed: {e}")
    return core_algos, ray_trainer, DataProto


@pytest.fixture
def patched(verl):
    """verl's compute_advantage with the mrtpo dispatch for one test, verl's own again after it."""
    verl_mrtpo.patch_compute_advantage()
    yield verl[1]
    verl_mrtpo.unpatch_compute_advantage()


def make_batch(DataProto, uids, lengths, scores, T=6, P=3, seed=0):
    """A DataProto as verl's trainer holds it before the advantage: left-padded prompts, right-padded responses,
    the summed score on each response's last token, per-reward scores in ``non_tensor_batch`` (as a reward
    function's extra entries arrive) and a relevance ``(B, K, T)``."""
    gen = torch.Generator().manual_seed(seed)
    B = len(uids)
    mask = (torch.arange(T)[None] < torch.tensor(lengths)[:, None]).long()  # (B, T)
    scores = np.asarray(scores, dtype=np.float32)  # (B, K)
    rewards = torch.zeros(B, T)
    rewards[torch.arange(B), torch.tensor(lengths) - 1] = torch.tensor(scores.sum(1))
    relevance = torch.rand(B, len(KEYS), T, generator=gen) ** 3 * mask[:, None]  # peaked, as JS distances are
    tensors = {
        "prompts": torch.randint(5, 50, (B, P), generator=gen),
        "responses": torch.randint(5, 50, (B, T), generator=gen),
        "attention_mask": torch.cat([torch.ones(B, P, dtype=torch.long), mask], 1),
        "response_mask": mask,
        "token_level_rewards": rewards,
        verl_mrtpo.RELEVANCE_KEY: relevance,
    }
    non_tensors = {"uid": np.array(uids, dtype=object), **{k: scores[:, i] for i, k in enumerate(KEYS)}}
    return DataProto.from_dict(tensors=tensors, non_tensors=non_tensors)


def algo(**settings):
    from omegaconf import OmegaConf

    return OmegaConf.create({"gdpo_reward_keys": KEYS, **settings})


def run(ray_trainer, data, estimator, config, norm=True):
    out = ray_trainer.compute_advantage(
        data, adv_estimator=estimator, norm_adv_by_std_in_grpo=norm, config=config, num_repeat=1
    )
    return out.batch["advantages"].clone()


# groups interleaved in the batch (verl's balance_batch reorders rows), equal sizes for the project's (N, G) tensors
UIDS = ["a", "b", "a", "c", "b", "c", "a", "b", "c"]
LENGTHS = [6, 4, 5, 2, 6, 3, 1, 5, 6]
SCORES = [[1, 0], [0, 1], [0, 1], [1, 1], [1, 0], [0, 0], [1, 1], [1, 1], [1, 0]]


def test_estimator_through_verls_compute_advantage_matches_mrtpo_token_advantages(verl, patched):
    _, ray_trainer, DataProto = verl
    data = make_batch(DataProto, UIDS, LENGTHS, SCORES)
    order = [[i for i, u in enumerate(UIDS) if u == g] for g in "abc"]  # (N, G) row indices
    idx = torch.tensor(order)
    rewards = torch.tensor(SCORES, dtype=torch.float32)[idx]  # (N, G, K)
    rel = data.batch[verl_mrtpo.RELEVANCE_KEY][idx]  # (N, G, K, T)
    mask = data.batch["response_mask"][idx]  # (N, G, T)
    for alpha, gamma, weights in [(1.0, 1.0, None), (0.5, 2.0, [2.0, 0.5])]:
        settings = dict(mrtpo_statistics="project", mrtpo_alpha=alpha, mrtpo_gamma=gamma, gdpo_reward_weights=weights)
        adv = run(ray_trainer, make_batch(DataProto, UIDS, LENGTHS, SCORES), "mrtpo", algo(**settings))
        expected = mrtpo_token_advantages(rewards, rel, mask, weights, alpha, gamma)  # (N, G, T)
        assert adv[idx].shape == expected.shape == (3, 3, 6)
        torch.testing.assert_close(adv[idx], expected, rtol=0, atol=1e-6)
        assert float(expected.abs().max()) > 1.0  # a real signal, not zeros on both sides
    # the relevance moves advantage between tokens: alpha = 1 is not the flat GDPO row
    flat = mrtpo_token_advantages(rewards, rel, mask, alpha=0.0)
    assert float((run(ray_trainer, data, "mrtpo", algo(mrtpo_statistics="project"))[idx] - flat).abs().max()) > 0.5


def test_alpha_zero_is_verls_own_gdpo_with_a_group_of_one(verl, patched):
    """verl statistics: a group of one (uid "d": mean 0, std 1 in core_algos), ragged groups. verl's dispatch passes
    ``norm_adv_by_std_in_grpo`` to its GRPO branch only, so GDPO divides by the std either way, and so does mrtpo."""
    _, ray_trainer, DataProto = verl
    uids, lengths, scores = UIDS + ["d"], LENGTHS + [4], SCORES + [[1, 0]]
    for norm in (True, False):
        gdpo = run(ray_trainer, make_batch(DataProto, uids, lengths, scores), "gdpo", algo(), norm)
        ours = run(ray_trainer, make_batch(DataProto, uids, lengths, scores), "mrtpo", algo(mrtpo_alpha=0.0), norm)
        torch.testing.assert_close(ours, gdpo, rtol=0, atol=2e-6)
        assert float(gdpo[-1, :4].abs().min()) > 0.3  # the single row is not 0 (the project's own GDPO gives 0)


def test_alpha_one_keeps_each_responses_token_mean_at_verls_gdpo(verl, patched):
    _, ray_trainer, DataProto = verl
    gdpo = run(ray_trainer, make_batch(DataProto, UIDS, LENGTHS, SCORES), "gdpo", algo())
    ours = run(ray_trainer, make_batch(DataProto, UIDS, LENGTHS, SCORES), "mrtpo", algo())
    mask = make_batch(DataProto, UIDS, LENGTHS, SCORES).batch["response_mask"].float()
    mean = (ours * mask).sum(1) / mask.sum(1)
    torch.testing.assert_close(mean, gdpo[:, 0], rtol=0, atol=2e-5)
    assert float(((ours - gdpo) * mask).abs().max()) > 0.5  # but the tokens differ
    assert float((ours * (1 - mask)).abs().max()) == 0.0  # nothing on padding


def test_group_advantages_match_verls_grpo_including_a_group_of_one(verl):
    core_algos = verl[0]
    uids = np.array(["x", "y", "y", "z", "z", "z", "z"], dtype=object)
    scores = torch.tensor([0.7, 1.0, 0.0, 0.2, 0.9, 0.9, 0.4])
    rewards = torch.zeros(7, 3)
    rewards[:, -1] = scores
    for norm in (True, False):
        theirs, _ = core_algos.compute_grpo_outcome_advantage(
            rewards, torch.ones(7, 3), uids, norm_adv_by_std_in_grpo=norm
        )
        ours = verl_mrtpo.verl_group_advantages(scores[:, None], uids, norm_by_std=norm)[:, 0]
        torch.testing.assert_close(ours, theirs[:, 0], rtol=0, atol=1e-6)
    assert abs(float(ours[0]) - 0.7) < 1e-6  # group of one without std division: r - 0


def test_an_unregistered_estimator_fails_in_verls_registry(verl, patched):
    core_algos, ray_trainer, DataProto = verl
    registered = core_algos.ADV_ESTIMATOR_REGISTRY.pop(verl_mrtpo.ESTIMATOR)
    try:
        with pytest.raises(ValueError, match="Unknown advantage estimator"):
            run(ray_trainer, make_batch(DataProto, UIDS, LENGTHS, SCORES), "mrtpo", algo())
    finally:
        core_algos.ADV_ESTIMATOR_REGISTRY[verl_mrtpo.ESTIMATOR] = registered
    assert core_algos.get_adv_estimator_fn("mrtpo") is verl_mrtpo.compute_mrtpo_advantage


def test_the_patch_is_needed_and_refuses_a_changed_dispatch(verl, monkeypatch):
    core_algos, ray_trainer, DataProto = verl
    verl_mrtpo.register()
    # verl's own dispatch passes the batch only to gdpo: the estimator says what to apply
    with pytest.raises(RuntimeError, match="patch_compute_advantage"):
        run(ray_trainer, make_batch(DataProto, UIDS, LENGTHS, SCORES), "mrtpo", algo())
    # the wrapped code is verl 0.9.1's, byte for byte (this fails when verl changes compute_advantage)
    assert verl_mrtpo.source_sha256(ray_trainer.compute_advantage) == verl_mrtpo.PATCHED_SOURCE_SHA256

    def compute_advantage(
        data, adv_estimator, gamma=1.0, lam=1.0, num_repeat=1, norm_adv_by_std_in_grpo=True, config=None
    ):
        return data  # a changed verl

    monkeypatch.setattr(ray_trainer, "compute_advantage", compute_advantage)
    with pytest.raises(RuntimeError, match="compute_advantage changed"):
        verl_mrtpo.patch_compute_advantage()
    assert ray_trainer.compute_advantage is compute_advantage  # nothing was replaced


def test_other_estimators_run_verls_own_code_and_unpatch_restores_it(verl):
    _, ray_trainer, DataProto = verl
    original = ray_trainer.compute_advantage
    verl_mrtpo.patch_compute_advantage()
    try:
        assert ray_trainer.compute_advantage is not original
        for name in ("grpo", "gdpo", "rloo"):
            ours = run(ray_trainer, make_batch(DataProto, UIDS, LENGTHS, SCORES), name, algo())
            theirs = run_original = original(
                make_batch(DataProto, UIDS, LENGTHS, SCORES), adv_estimator=name, config=algo(), num_repeat=1
            )
            torch.testing.assert_close(ours, run_original.batch["advantages"], rtol=0, atol=0)
            assert float(theirs.batch["advantages"].abs().max()) > 0.1
    finally:
        verl_mrtpo.unpatch_compute_advantage()
    assert ray_trainer.compute_advantage is original


def test_missing_relevance_or_reward_key_is_a_clear_error(verl, patched):
    _, ray_trainer, DataProto = verl
    data = make_batch(DataProto, UIDS, LENGTHS, SCORES)
    data.batch.pop(verl_mrtpo.RELEVANCE_KEY)
    with pytest.raises(KeyError, match="relevance step"):
        run(ray_trainer, data, "mrtpo", algo())
    data = make_batch(DataProto, UIDS, LENGTHS, SCORES)
    with pytest.raises(KeyError, match=r"\['fmt2'\].*use_v1"):
        run(ray_trainer, data, "mrtpo", algo(gdpo_reward_keys=["fmt2"]))


# --- the relevance step on the bundled policy, against the project's replay -------------------------------------


@pytest.fixture(scope="module")
def rollouts(verl):
    """A verl batch of 2 tool-calling prompts x 2 responses the bundled policy sampled: left-padded prompts,
    right-padded responses, ``extra_info`` as :func:`verl_row` writes it, rows of a group interleaved."""
    from mrtpo_viz.integrations.verl_relevance import verl_row
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks import load_examples
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    DataProto = verl[2]
    policy = load_policy(str(BUNDLED_POLICY_DIR), device="cpu", dtype="float32")
    examples = load_examples("tool_calling")[:2]
    names = ["tool_call.format", "tool_call.correctness"]
    rows = []
    for i, ex in enumerate(examples):
        for c in policy.generate_group(ex, 2, max_new_tokens=12, seed=i):
            rows.append((ex, policy.chat_ids(ex.messages()), list(c.token_ids)))
    rows = [rows[0], rows[2], rows[1], rows[3]]  # groups interleaved, as after verl's balance_batch
    P, T, pad = max(len(r[1]) for r in rows), max(len(r[2]) for r in rows) + 2, policy.pad_id
    prompts = torch.tensor([[pad] * (P - len(p)) + p for _, p, _ in rows])
    responses = torch.tensor([r + [pad] * (T - len(r)) for _, _, r in rows])
    pmask = torch.tensor([[0] * (P - len(p)) + [1] * len(p) for _, p, _ in rows])
    rmask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for _, _, r in rows])
    data = DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": responses,
            "attention_mask": torch.cat([pmask, rmask], 1),
            "response_mask": rmask,
        },
        non_tensors={
            "uid": np.array([ex.id for ex, _, _ in rows], dtype=object),
            "extra_info": np.array([verl_row(ex, names)["extra_info"] for ex, _, _ in rows], dtype=object),
        },
    )
    return policy, data, rows, names


def test_the_relevance_step_matches_the_projects_replay(rollouts):
    from mrtpo_viz import replay
    from mrtpo_viz.integrations.verl_relevance import relevance_step

    policy, data, rows, names = rollouts
    rel = relevance_step(policy, data, names)
    B, K, T = rel.shape
    assert (B, K, T) == (4, 2, data.batch["responses"].shape[1])
    for b, (ex, _, response) in enumerate(rows):
        expected = replay(policy, ex, response, names).scores  # (K, T_b)
        n = len(response)
        torch.testing.assert_close(rel[b, :, :n], expected, rtol=0, atol=2e-5)
        assert float(rel[b, :, n:].abs().max()) == 0.0  # padding
        assert float(expected.max()) > 0.01  # the information moves the tiny policy's predictions


def test_the_relevance_step_refuses_a_prompt_verl_did_not_sample_from(rollouts):
    from mrtpo_viz.integrations.verl_relevance import relevance_step

    policy, data, _, names = rollouts
    changed = data.select_idxs([0, 1, 2, 3])
    changed.batch["prompts"] = changed.batch["prompts"].clone()
    changed.batch["prompts"][0, -1] = (changed.batch["prompts"][0, -1] + 1) % len(policy.tokenizer)
    with pytest.raises(ValueError, match="differs from the one"):
        relevance_step(policy, changed, names)


def test_compute_score_returns_each_verifiers_reward_and_their_sum(rollouts):
    from mrtpo_viz.integrations.verl_relevance import compute_score, row_example
    from mrtpo_viz.tasks import get_verifier

    _, data, rows, names = rollouts
    ex, got = row_example(data.non_tensor_batch["extra_info"][0])
    assert got == names
    assert (ex.task, ex.id, ex.messages(), ex.meta) == (
        rows[0][0].task,
        rows[0][0].id,
        rows[0][0].messages(),
        rows[0][0].meta,
    )
    gold = rows[0][0].reference
    assert gold
    out = compute_score("mrtpo_viz/tool_calling", gold, "", data.non_tensor_batch["extra_info"][0])
    assert out == {"score": 2.0, "tool_call.format": 1.0, "tool_call.correctness": 1.0}
    bad = compute_score("mrtpo_viz/tool_calling", "no call", "", data.non_tensor_batch["extra_info"][0])
    assert (
        bad["score"] == sum(bad[n] for n in names)
        and bad["tool_call.format"] == get_verifier(names[0]).check("no call", ex).score
    )


# --- the recipe's pieces, without Ray: the worker method, the trainer's hook, the task runner's mapping ---------


def test_the_worker_method_is_registered_with_verls_dispatch_and_replays_on_the_actor_module(verl, rollouts):
    from verl.single_controller.base.decorator import MAGIC_ATTR, Dispatch

    from mrtpo_viz.integrations.verl_recipe import mrtpo_worker_class, relevance_request
    from mrtpo_viz.integrations.verl_relevance import relevance_step

    policy, data, _, names = rollouts
    cls = mrtpo_worker_class()
    assert getattr(cls.compute_mrtpo_relevance, MAGIC_ATTR)["dispatch_mode"] == Dispatch.DP_COMPUTE_PROTO
    entered = []

    class EvalMode:  # what verl's engine.eval_mode() does for the step: load parameters, eval()
        def __enter__(self):
            entered.append(True)

        def __exit__(self, *exc):
            return False

    class Actor:  # verl's TrainingWorker: .engine.module, .engine.eval_mode(), .model_config.tokenizer
        engine = type("Engine", (), {"module": policy.model, "eval_mode": staticmethod(EvalMode)})()
        model_config = type("ModelConfig", (), {"tokenizer": policy.tokenizer})()

    worker = type("Worker", (), {"actor": Actor()})()
    out = cls.compute_mrtpo_relevance(worker, relevance_request(data, algo(gdpo_reward_keys=names)))
    assert entered == [True]
    torch.testing.assert_close(out.batch[verl_mrtpo.RELEVANCE_KEY], relevance_step(policy, data, names), rtol=0, atol=0)


def test_the_trainer_hook_computes_relevance_inside_verls_compute_advantage(verl, rollouts, monkeypatch):
    """MRTPORayPPOTrainer.init_workers (verl's own skipped: it needs a Ray cluster) patches verl's dispatch with
    the worker group's relevance step; verl's compute_advantage on a batch without relevance then equals the
    estimator on the relevance computed directly."""
    from mrtpo_viz.integrations.verl_recipe import mrtpo_trainer_class, worker_relevance
    from mrtpo_viz.integrations.verl_relevance import relevance_step

    _, ray_trainer, _ = verl
    policy, data, _, names = rollouts
    monkeypatch.setattr(ray_trainer.RayPPOTrainer, "init_workers", lambda self: None)

    class Group:  # the actor worker group, one local worker
        def compute_mrtpo_relevance(self, request):
            return worker_relevance(policy.model, policy.tokenizer, request)

    config = algo(gdpo_reward_keys=names)
    trainer = object.__new__(mrtpo_trainer_class())
    trainer.config, trainer.actor_rollout_wg = type("Config", (), {"algorithm": config})(), Group()
    batch = data.select_idxs([0, 1, 2, 3])
    # the tiny policy's samples score 0 on both verifiers: set rewards by hand (compute_score is tested above)
    scores = [dict(zip(names, r)) for r in [(1.0, 0.0), (0.0, 1.0), (0.0, 0.0), (1.0, 1.0)]]
    for n in names:
        batch.non_tensor_batch[n] = np.array([s[n] for s in scores], dtype=np.float32)
    batch.batch["token_level_rewards"] = torch.zeros(batch.batch["responses"].shape)
    trainer.init_workers()
    try:
        got = run(ray_trainer, batch, "mrtpo", config)
    finally:
        verl_mrtpo.unpatch_compute_advantage()
    mask = batch.batch["response_mask"]
    rel = relevance_step(policy, data, names)
    flat = torch.tensor([[s[n] for n in names] for s in scores])
    expected = verl_mrtpo.verl_mrtpo_advantages(flat, rel, mask, batch.non_tensor_batch["uid"])
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
    assert float(flat.std()) > 0 and float(expected.abs().max()) > 0.1  # the rewards differ: a real advantage


def test_the_task_runner_maps_the_actor_roles_to_the_mrtpo_worker(verl):
    from omegaconf import OmegaConf

    from mrtpo_viz.integrations.verl_recipe import mrtpo_task_runner

    runner_cls = mrtpo_task_runner().__ray_actor_class__
    runner = runner_cls()
    config = OmegaConf.create(
        {"actor_rollout_ref": {"model": {}, "actor": {"use_kl_loss": False}}, "algorithm": {"use_kl_in_reward": False}}
    )
    cls, _ = runner.add_actor_rollout_worker(config)
    assert hasattr(cls, "compute_mrtpo_relevance")
    (remote,) = runner.role_worker_mapping.values()
    assert remote.__ray_actor_class__ is cls
