"""The smallest wiring of MRTPO into a verl 0.9.1 run, without forking verl: a worker method, a trainer, a task runner.

verl's legacy trainer (``trainer.use_v1=False``; ``RayPPOTrainer.fit`` in ``verl/trainer/ppo/ray_trainer.py``) runs,
on its driver, ``compute_advantage`` over the whole batch with every reward function entry in ``non_tensor_batch``,
which is what verl's own GDPO needs and what MRTPO needs too. (The v1 trainer's ``_compute_advantage`` fetches
only ``uid``, ``response_mask``, ``rm_scores`` and the log-probs and values, so neither estimator gets its
per-reward scores there.) Three pieces, each a subclass or a function; what replaces a verl name is said plainly:

1. :func:`mrtpo_worker_class`: verl's ``ActorRolloutRefWorker`` with one more method, ``compute_mrtpo_relevance``,
   registered with verl's ``Dispatch.DP_COMPUTE_PROTO`` (each worker gets an equal slice of the rows). It replays
   its slice on its own actor module (``self.actor.engine.module``, under the engine's ``eval_mode``) through
   :func:`.verl_relevance.relevance_step`. Under FSDP2 every forward all-gathers layers, so the forwards run in
   lockstep across ranks (:func:`.trl_fsdp.lockstep`); FSDP1 with more than one rank is refused.
2. :func:`mrtpo_trainer_class`: ``RayPPOTrainer`` whose ``init_workers`` then applies
   :func:`.verl_mrtpo.patch_compute_advantage` with the worker group's ``compute_mrtpo_relevance`` as the
   relevance step (the one patch of verl's dispatch; it checks the source it wraps).
3. :func:`mrtpo_task_runner`: verl's ``TaskRunner`` (``verl/trainer/main_ppo_v0.py``) mapping the actor roles to
   the worker of 1 and, in its own Ray process, setting ``main_ppo_v0.RayPPOTrainer`` (the name its ``run`` builds
   the trainer with) to the trainer of 2. :func:`run` starts it as verl's ``main_ppo.main`` starts its runner.

None of this runs on this project's CPU test machine: verl's rollout needs vLLM or SGLang on GPUs. What the tests
check here is in docs/scale.md.
"""

from __future__ import annotations

from typing import Any

import torch

from .trl_fsdp import _world, is_fsdp2, lockstep
from .verl_mrtpo import RELEVANCE_KEY, patch_compute_advantage
from .verl_relevance import actor_policy, relevance_step

REQUEST_KEYS = ("prompts", "responses", "attention_mask", "response_mask")
"""The ``DataProto.batch`` keys the relevance step reads (with ``non_tensor_batch["extra_info"]``)."""


def relevance_request(data, algorithm: Any):
    """The slice of a verl batch that goes to the workers, with the settings in ``meta_info``."""
    keys = [k for k in REQUEST_KEYS if k in data.batch.keys()]
    request = data.select(batch_keys=keys, non_tensor_batch_keys=["extra_info"])
    request.meta_info = {
        "mrtpo_verifiers": list(algorithm.get("gdpo_reward_keys") or []),
        "mrtpo_metric": algorithm.get("mrtpo_metric", "js"),
        "mrtpo_control": algorithm.get("mrtpo_control", "none"),
        "mrtpo_info_position": algorithm.get("mrtpo_info_position", "user_end"),
    }
    return request


def worker_relevance(module, tokenizer, data, eval_mode=None):
    """What ``compute_mrtpo_relevance`` runs on one worker: ``DataProto`` with ``batch["mrtpo_relevance"]``.

    Args:
        module: the worker's actor module (FSDP2-sharded on several ranks); tokenizer: the actor's tokenizer.
        data: this worker's rows (:func:`relevance_request`'s keys and ``meta_info``).
        eval_mode: the engine's ``eval_mode()`` context (loads offloaded parameters); None: ``module.eval()`` only.
    """
    from contextlib import nullcontext

    from verl import DataProto

    if _world() > 1 and not is_fsdp2(module):
        raise ValueError(
            "the MRTPO relevance step runs under FSDP2 only (actor_rollout_ref.actor.strategy=fsdp2): FSDP1's "
            "forwards are collectives too, and only FSDP2's are kept in lockstep here"
        )
    info = data.meta_info
    device = next(module.parameters()).device
    with eval_mode or nullcontext(), torch.no_grad(), lockstep(module, device, tokenizer.pad_token_id or 0):
        module.eval()
        rel = relevance_step(
            actor_policy(module, tokenizer, device),
            data,
            info["mrtpo_verifiers"],
            metric=info["mrtpo_metric"],
            control=info["mrtpo_control"],
            info_position=info["mrtpo_info_position"],
        )
    return DataProto.from_dict(tensors={RELEVANCE_KEY: rel})


def mrtpo_worker_class(base=None) -> type:
    """verl's actor worker (default ``verl.workers.engine_workers.ActorRolloutRefWorker``) with
    ``compute_mrtpo_relevance``, dispatched by verl as ``Dispatch.DP_COMPUTE_PROTO``."""
    from verl.single_controller.base.decorator import Dispatch, register

    if base is None:
        from verl.workers.engine_workers import ActorRolloutRefWorker as base

    class MRTPOActorRolloutRefWorker(base):
        @register(dispatch_mode=Dispatch.DP_COMPUTE_PROTO)
        def compute_mrtpo_relevance(self, data):
            engine = self.actor.engine
            return worker_relevance(engine.module, self.actor.model_config.tokenizer, data, engine.eval_mode())

    return MRTPOActorRolloutRefWorker


def mrtpo_trainer_class() -> type:
    """verl's legacy ``RayPPOTrainer`` whose workers compute MRTPO's relevance for the ``mrtpo`` estimator."""
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    class MRTPORayPPOTrainer(RayPPOTrainer):
        def init_workers(self):
            super().init_workers()
            group, algorithm = self.actor_rollout_wg, self.config.algorithm
            patch_compute_advantage(lambda data: group.compute_mrtpo_relevance(relevance_request(data, algorithm)))

    return MRTPORayPPOTrainer


def mrtpo_task_runner():
    """verl's legacy ``TaskRunner`` with the MRTPO worker and trainer, as a Ray actor class."""
    import ray
    from verl.trainer import main_ppo_v0

    class MRTPOTaskRunner(main_ppo_v0.TaskRunner.__ray_actor_class__):
        def add_actor_rollout_worker(self, config):
            cls, group_cls = super().add_actor_rollout_worker(config)
            ours = mrtpo_worker_class(cls)
            for role, remote in list(self.role_worker_mapping.items()):
                if getattr(remote, "__ray_actor_class__", None) is cls:
                    self.role_worker_mapping[role] = ray.remote(ours)
            return ours, group_cls

        def run(self, config):
            main_ppo_v0.RayPPOTrainer = mrtpo_trainer_class()  # this Ray process only: the name run() builds with
            return super().run(config)

    return ray.remote(num_cpus=1)(MRTPOTaskRunner)


def run(config) -> None:
    """Train with MRTPO: verl's ``main_ppo.main`` with the MRTPO task runner (legacy trainer only)."""
    from verl.trainer.main_ppo import run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    if config.trainer.use_v1:
        raise ValueError("MRTPO runs in verl's legacy trainer: set trainer.use_v1=False (see docs/scale.md)")
    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    run_ppo(config, task_runner_class=mrtpo_task_runner())
