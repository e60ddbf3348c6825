"""MRTPO inside TRL: ``MRTPOConfig(GRPOConfig)`` and ``MRTPOTrainer(GRPOTrainer)`` (TRL 1.16).

TRL samples and scores as usual. Once per generation batch (TRL's ``_generate_and_score_completions``, before it
shuffles the batch and splits it into ``steps_per_generation`` micro-batches, which then serve ``num_iterations``
updates), the trainer replays each completion with and without each reward's verifier information, with the model
that sampled it (no grad, eval mode, our shared-prefix group replay), and gives TRL ``(B, T)`` token advantages,
which TRL's loss takes as they are (it unsqueezes only ``(B,)`` ones):

    ``A[t] = A_GDPO + sum_k lambda_k (w[k, t] - 1) Ahat_k / (std_batch S + eps)``

``A_GDPO`` is TRL's own ``normalize_then_sum`` advantage of the row; ``Ahat_k``, the batch statistics of
``S = sum_k lambda_k Ahat_k`` and the token weights ``w`` come from :func:`mrtpo_viz.advantages.mrtpo_token_shift`
on TRL's gathered ``(B_global, K)`` rewards (every process computes the same statistics and takes TRL's own slice of
rows). This is :func:`mrtpo_viz.advantages.mrtpo_token_advantages` rewritten around TRL's advantage, so that:

- ``alpha = 0`` gives TRL's GDPO bitwise (``w = 1`` exactly: the shift is exactly 0), whatever the rewards;
- a completion's token mean is TRL's sequence advantage, up to float rounding of a zero-mean shift;
- a reward that is None for a row (the verifier does not apply to it, e.g. an IFEval constraint the prompt lacks)
  is left out as TRL leaves it out: ``Ahat_k = 0`` there, and its verifier gets no replay branch for that row (its
  information may not exist for that prompt) and relevance 0;
- where TRL's GDPO and ours differ on purpose (a reward constant across its group: TRL keeps float32 rounding
  noise divided by 1e-4, we give exactly 0; docs/method.md, "Agreement with TRL"), the token mean follows TRL and the
  shift uses our exact zero.

Refused, with the reason (``ValueError`` at construction): another ``multi_objective_aggregation`` (MRTPO splits
GDPO's per-reward advantages, which ``sum_then_normalize`` never forms); ``loss_type="vespo"`` and
``off_policy_mask_threshold`` (both read the sign of the *sequence* advantage; with ``(B, T)`` advantages they would
silently act per token); ``tools``, ``environment_factory``, ``rollout_func`` (completions would hold tokens the
policy did not write, and the replay with information is undefined for them); vision-language models (the replay
has no image path); FSDP1 and DeepSpeed ZeRO-3 (not tested here: docs/scale.md); reward models and plain reward
functions (a reward needs its information: ``Verifier.from_trl``); plain-text prompts (the information goes into a
chat message; :func:`trl_dataset`). Warned: ``use_vllm`` (the replay runs the training copy of the weights; untested
here, no GPU), ``top_entropy_quantile < 1`` (the entropy mask drops tokens, so the applied advantages no longer
average to GDPO's), ``temperature != 1`` (the replay compares untempered distributions).

Under FSDP2 (accelerate's FSDP plugin with ``fsdp_version: 2``) the replay runs through the sharded model itself:
no-grad forwards of the K + 1 branches, each gathering its layers' parameters as FSDP2 does for any forward, never a
full unsharded copy; :func:`.trl_fsdp.lockstep` keeps the ranks' forward counts equal (their rows differ).
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from accelerate.utils import gather_object
from trl import GRPOConfig, GRPOTrainer

from ..advantages import get_method, mrtpo_token_shift, shuffle_relevance
from ..docstrings import help_from_docstrings
from ..names import CONTROLS, INFO_POSITIONS, METRICS, check_choice
from ..relevance.tokens import display_tokens
from . import trl_log, trl_tracking
from .trl_batch import (
    batch_relevance,
    replay_policy,
    resolve_rewards,
    response_lengths,
    reward_function,
    row_examples,
    trl_dataset,
)
from .trl_checks import ZERO3_REFUSAL, check_aggregation, check_credit, check_fields, trainer_model
from .trl_fsdp import lockstep

__all__ = ["MRTPOConfig", "MRTPOTrainer", "trainer_model", "trl_dataset"]


@help_from_docstrings
@dataclass
class MRTPOConfig(GRPOConfig):
    """``GRPOConfig`` plus MRTPO's settings; reward weights ``lambda_k`` are GRPOConfig's ``reward_weights``."""

    alpha: float = 1.0
    """MRTPO mixing in [0, 1]: 0 = GDPO (uniform), 1 = relevance only."""
    gamma: float = 1.0
    """Sharpening of the relevance, in [0, 100]: w ~ d**gamma."""
    credit: str = "mrtpo"
    """Credit method (``names.METHODS`` but grpo, or one added by ``advantages.register_credit``): where each
    reward's advantage goes; it may fix its own control or metric (``mrtpo@others``, ``mrtpo@kl``, ``wrong_hint``)."""
    control: str = "none"
    """Relevance control (``names.CONTROLS``), unless the credit method fixes one."""
    metric: str = "js"
    """Relevance metric: js, kl or tvd (``names.METRICS``)."""
    info_position: str = "user_end"
    """Where the information goes (``names.INFO_POSITIONS``)."""
    log_tokens: bool = True
    """Write output_dir/mrtpo/tokens_{step:05d}.parquet."""
    multi_objective_aggregation: str = "normalize_then_sum"
    """Must be 'normalize_then_sum' (GDPO): MRTPO splits it."""

    def __post_init__(self):
        check_fields(self)  # before GRPOConfig's own checks: num_generations=0 divides by zero there
        super().__post_init__()
        check_credit(self.credit)
        check_choice("control", self.control, CONTROLS)
        check_choice("metric", self.metric, METRICS)
        check_choice("info_position", self.info_position, INFO_POSITIONS)
        check_aggregation(self)


def _refuse(config, kwargs: dict) -> None:
    """What MRTPOTrainer cannot do, refused before anything loads (see the module docstring for why)."""
    if not isinstance(config, MRTPOConfig):
        raise ValueError(f"MRTPOTrainer needs args=MRTPOConfig(...), got {type(config).__name__}")
    if config.top_entropy_quantile < 1.0:
        warnings.warn(
            "top_entropy_quantile < 1 drops low-entropy tokens from the loss: the applied MRTPO "
            "advantages then no longer average to GDPO's per response",
            stacklevel=3,
        )
    if config.use_vllm:
        warnings.warn(
            "MRTPOTrainer with vLLM is untested: the replay runs the training copy of the weights "
            "(self.model), not vLLM's",
            stacklevel=3,
        )
    if config.temperature != 1.0:
        warnings.warn(
            f"temperature={config.temperature}: the relevance replay compares the model's untempered "
            "next-token distributions",
            stacklevel=3,
        )
    check_aggregation(config)
    if config.loss_type == "vespo":
        raise ValueError(
            "loss_type='vespo' is not supported by MRTPOTrainer: VESPO picks its per-sequence weight "
            "from the sign of the advantage, which is per token under MRTPO"
        )
    if config.off_policy_mask_threshold is not None:
        raise ValueError(
            "off_policy_mask_threshold is not supported by MRTPOTrainer: the off-policy mask keeps a "
            "sequence by the sign of its advantage, which is per token under MRTPO"
        )
    for name in ("tools", "rollout_func", "environment_factory"):
        if kwargs.get(name):
            raise ValueError(
                f"MRTPOTrainer does not support {name}: completions would hold tokens the policy did "
                "not write (tool results, environment turns), for which the replay with verifier "
                "information is undefined"
            )


class MRTPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose advantages are MRTPO's per-token ones (TRL's GDPO when ``alpha == 0``).

    Args:
        model: as GRPOTrainer (a hub id, a folder, or a model), ``"tiny-mrtpo"`` (the bundled policy) or a known
            real model's name (``"smollm2-135m-instruct"``, once ``python -m mrtpo_viz get-model`` fetched it).
        reward_funcs: verifiers (``mrtpo_viz.tasks``, or ``Verifier.from_trl(fn, name=..., info=...)``) or
            registered verifier names.
        args: an :class:`MRTPOConfig`.
        **kwargs: everything else goes to ``GRPOTrainer``.
    """

    def __init__(self, model, reward_funcs, args: MRTPOConfig | None = None, **kwargs):
        model = trainer_model(model)
        if args is None:
            name = (model if isinstance(model, str) else type(model).__name__).rstrip("/").split("/")[-1]
            args = MRTPOConfig(output_dir=f"{name}-MRTPO")
        _refuse(args, kwargs)
        self.verifiers = resolve_rewards(reward_funcs)
        self._mrtpo_rewards = None  # (B_global, K) TRL's gathered rewards of the current batch, NaN = None
        self._mrtpo_eval_rows: list[dict] = []
        self._mrtpo_pool = None
        self._mrtpo_one = None  # (B, T) the one-context branch's metric of the current batch (credit one_context)
        self._mrtpo_weights = None  # (B, K, T) the credit method's weights of the current batch
        super().__init__(model, reward_funcs=[reward_function(v) for v in self.verifiers], args=args, **kwargs)
        self._refuse_after_init()
        trl_tracking.attach(self)  # report_to trackio or wandb: the per-token advantages per reward, a table a step
        if self.accelerator.is_main_process:
            trl_log.write_json(self._run_info(), self._log_dir() / trl_log.RUN_FILE)

    def _refuse_after_init(self) -> None:
        if self._is_vlm:
            raise ValueError(
                "MRTPOTrainer does not support vision-language models: the relevance replay has no image path"
            )
        ds = getattr(self.accelerator.state, "deepspeed_plugin", None)
        if self.is_fsdp_enabled and getattr(self.accelerator.state.fsdp_plugin, "fsdp_version", 1) != 2:
            raise ValueError(
                "MRTPOTrainer supports FSDP2 only (fsdp_version: 2): the replay's forwards run through "
                "the sharded model, and FSDP1's flat parameters are untested with its cached prefix "
                "forwards; set fsdp_config={'fsdp_version': 2} (or fsdp_version: 2 in the accelerate "
                "config)"
            )
        if ds is not None and getattr(ds, "zero_stage", 0) == 3:
            raise ValueError(ZERO3_REFUSAL)

    # -------------------------------------------------------------------------------------------- TRL hooks
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._mrtpo_rewards = rewards  # (B_global, K), gathered across processes; returned unchanged
        return rewards

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        G = self.num_generations if mode == "train" else self.num_generations_eval
        B, K = len(inputs), len(self.verifiers)
        rows = slice(self.accelerator.process_index * B, (self.accelerator.process_index + 1) * B)  # TRL's slice
        mask = output["completion_mask"].cpu()  # (B, T)
        seq_adv = output["advantages"]  # (B,) TRL's GDPO advantage of the local rows
        examples = row_examples(inputs)
        rewards = self._mrtpo_rewards.detach().cpu().double()  # (B_global, K), NaN where TRL got None
        method = get_method(self.args.credit)
        self._mrtpo_one = None
        clock = time.perf_counter()
        lengths = response_lengths(output["completion_ids"], mask)
        replayed = (method.needs and self.args.alpha > 0) or self.args.log_tokens
        relevance = (
            self._relevance(examples, output, lengths, ~rewards[rows].isnan())
            if replayed
            else torch.zeros(B, K, mask.shape[1])
        )  # (B, K, T); unused at alpha = 0
        replay_s = time.perf_counter() - clock
        w = self._token_weights(method, relevance, mask)  # (B, K, T)
        shifted = mrtpo_token_shift(
            rewards.view(-1, G, K), relevance.double(), mask, rows, self.reward_weights.double(), token_weights=w
        )
        if method.combine == "sequence":  # GDPO's advantage times one shared row: A (w - 1) on valid tokens
            shift = torch.where(mask > 0, seq_adv.cpu().double()[:, None] * (w[:, 0] - 1.0), 0.0)
        else:
            shift = shifted.shift
        token_adv = seq_adv[:, None] + shift.to(seq_adv.device, seq_adv.dtype)  # (B, T)
        self._log_batch(
            mode, G, rows, examples, output, lengths, rewards[rows], relevance, shifted.parts, token_adv, replay_s
        )
        output["advantages"] = token_adv  # TRL's _compute_loss takes (B, T) as is
        return output

    def _token_weights(self, method, relevance, mask) -> torch.Tensor:
        """The credit method's ``(B, K, T)`` weights from this batch's replay (its input as the registry declares
        it: the relevance, that relevance shuffled per response on a seeded generator, or the one-context row)."""
        B, K, T = relevance.shape
        x = relevance.double()
        if method.needs == "shuffled":
            draw = torch.Generator().manual_seed(self.args.seed * 1_000_003 + self.state.global_step)
            x = shuffle_relevance(x[None], mask[None], draw)[0].double()
        elif method.needs == "one_context":
            one = self._mrtpo_one if self._mrtpo_one is not None else torch.zeros(B, T)  # not replayed at alpha 0
            x = one.double()[:, None, :].expand(B, K, T)  # (B, K, T): one row for every reward
        w = method.token_weights(K, mask[None], relevance=x[None], alpha=self.args.alpha, gamma=self.args.gamma)
        self._mrtpo_weights = w[0].float()
        return w[0]  # (B, K, T)

    def log(self, logs, start_time=None):
        if not self.model.training and self._mrtpo_eval_rows:  # an evaluation ends: its batches in one file
            if self.accelerator.is_main_process:
                trl_log.write_table(
                    self._mrtpo_eval_rows, self._log_dir() / trl_log.token_file(self.state.global_step, "eval")
                )
            self._mrtpo_eval_rows = []
        super().log(logs, start_time)

    # -------------------------------------------------------------------------------------------- the replay
    def _relevance(self, examples, output, lengths, applies) -> torch.Tensor:
        """``(B, K, T)`` relevance of the local rows, replayed without grad, in eval mode (no dropout), on a forked
        RNG: TRL's shuffle of the generation batch and its next sampling draw from the global RNG, so a replay that
        drew from it would change the run. ``applies`` ``(B, K)``: False where the row's reward is None (that
        verifier gets no branch there, and its information is never asked for)."""
        model = self.accelerator.unwrap_model(self.model)  # under FSDP2 the sharded module itself
        policy = replay_policy(model, self.processing_class, self.accelerator.device)
        prompt_ids = [ids[m > 0].tolist() for ids, m in zip(output["prompt_ids"], output["prompt_mask"])]
        device = self.accelerator.device
        devices = [device] if device.type == "cuda" else []
        was_training = model.training
        pad = self.processing_class.pad_token_id or 0
        with torch.no_grad(), torch.random.fork_rng(devices=devices), lockstep(model, device, pad):
            model.eval()
            try:
                settings = self._replay_settings()
                out = batch_relevance(
                    policy,
                    examples,
                    output["completion_ids"].cpu(),
                    lengths,
                    self.verifiers,
                    prompt_ids,
                    metric=settings["metric"],
                    control=settings["control"],
                    info_position=self.args.info_position,
                    pool=self._pool(examples),
                    applies=applies,
                    one_context=get_method(self.args.credit).needs == "one_context",
                )
                if isinstance(out, tuple):  # the one-context branch's (B, T) metric, for _token_weights
                    out, self._mrtpo_one = out
                return out
            finally:
                model.train(was_training)

    def _replay_settings(self) -> dict:
        """The run's control and metric, unless the credit method fixes them."""
        a = self.args
        return {"control": a.control, "metric": a.metric, **dict(get_method(a.credit).replay)}

    def _pool(self, examples):
        """Examples whose information ``corrupted`` and ``wrong_hint`` borrow: this batch's and the first 64
        training rows."""
        if self._replay_settings()["control"] not in ("corrupted", "wrong_hint"):
            return None
        if self._mrtpo_pool is None:
            data = self.train_dataset
            sized = data is not None and hasattr(data, "__len__")  # an IterableDataset has no rows to index
            self._mrtpo_pool = row_examples([data[i] for i in range(min(64, len(data)))]) if sized else []
        seen = list(examples)
        return seen + [e for e in self._mrtpo_pool if e not in seen]

    # -------------------------------------------------------------------------------------------- logs
    def _log_batch(self, mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s):
        """TRL metrics (summed across processes), TRL's completions column, and the per-token parquet."""
        mask = output["completion_mask"].cpu()
        names = [v.name for v in self.verifiers]
        weights = self._mrtpo_weights  # (B, K, T) the credit method's, from _token_weights
        sums = trl_log.batch_sums(names, relevance, weights, mask, token_adv.cpu(), output["advantages"].cpu())
        sums["mrtpo/replay_seconds"] = (replay_s, 1.0)
        local = torch.tensor(list(sums.values()), dtype=torch.float64, device=self.accelerator.device)
        total = self.accelerator.gather(local[None]).view(-1, len(sums), 2).sum(0).tolist()
        for name, (s, n) in zip(sums, total):
            self._metrics[mode][name].append(s / n if n > 0 else float("nan"))
        adv_rows = [row[:L].tolist() for row, L in zip(token_adv.cpu(), lengths)]
        self._logs["extra"]["mrtpo_token_advantages"].extend(gather_object(adv_rows))
        if not self.args.log_tokens:
            return
        ids = [row[:L].tolist() for row, L in zip(output["completion_ids"].cpu(), lengths)]
        tok = self.processing_class
        step = self.state.global_step + (1 if mode == "train" else 0)
        records = trl_log.completion_rows(
            step=step,
            mode=mode,
            first_row=rows.start,
            num_generations=G,
            names=names,
            ids=ids,
            tokens=[display_tokens(tok, r)[0] for r in ids],
            texts=tok.batch_decode(ids, skip_special_tokens=True),
            example_ids=[e.id for e in examples],
            prompts=[_last_user(e) for e in examples],
            messages=[json.dumps(e.messages()) for e in examples],
            trained=(mask.sum(1) > 0).tolist(),
            rewards=rewards,
            relevance=relevance,
            parts=parts,
            advantage=output["advantages"].cpu(),
            token_advantages=token_adv.cpu(),
        )
        records = gather_object(records)
        if mode == "eval":
            self._mrtpo_eval_rows.extend(records)
        elif self.accelerator.is_main_process:
            trl_log.write_table(records, self._log_dir() / trl_log.token_file(step))

    def _log_dir(self) -> Path:
        return Path(self.args.output_dir) / trl_log.LOG_DIR

    def _run_info(self) -> dict:
        import trl

        from ..version import __version__

        a = self.args
        return {
            "kind": "mrtpo",
            "credit": a.credit,
            "alpha": a.alpha,
            "gamma": a.gamma,
            "control": a.control,
            "metric": a.metric,
            "info_position": a.info_position,
            "rewards": [v.name for v in self.verifiers],
            "titles": [v.title for v in self.verifiers],
            "reward_weights": self.reward_weights.tolist(),
            "num_generations": self.num_generations,
            "num_generations_eval": self.num_generations_eval,
            "model": str(getattr(self.model.config, "_name_or_path", "")),
            "trl": trl.__version__,
            "mrtpo_viz": __version__,
        }


def _last_user(example) -> str:
    users = [m.get("content", "") for m in example.messages() if m.get("role") == "user"]
    return str(users[-1]) if users else ""
