"""The training loop: GRPO, GDPO and MRTPO on the same policy, one ``StepMetrics`` per step.

One step reads top to bottom (cleanrl's ``ppo.py`` order): sample G completions per prompt -> score every
verifier -> replay for MRTPO (the policy before the update, no grad) -> advantages -> token-level clipped
surrogate -> AdamW update. Only the advantage method differs between GRPO, GDPO and MRTPO.

Departures from TRL's ``GRPOTrainer``, where the paper is silent or for a small live demo:

- No KL term by default (``kl_coef = 0`` loads no reference model); with ``kl_coef > 0`` the k3 estimator
  ``exp(ref - logp) - (ref - logp) - 1`` against the starting policy.
- One update per batch: the old log-probs are those of the sampling policy, which is the current one, so the
  ratio is 1 at the update; the clipped form (``pg_loss1``, ``pg_loss2``) is kept so that several updates per
  batch would be clipped correctly.
- Token-mean over the whole batch (DAPO), not per-sequence means.
- Data parallel through ``accelerate``: each process samples its own share of the step's prompts, computes
  advantages on its share (batch statistics per process; TRL gathers them), and DDP averages the gradients.
  Rewards in the metrics are gathered from all processes.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional
from collections.abc import Iterator, Sequence

import torch

from ..advantages import NEEDS, get_method
from ..tasks import Example
from .config import TrainConfig
from .metrics import StepMetrics


# --- the run's state -----------------------------------------------------------------------------------------------


@dataclass
class Run:
    """Everything a step needs: the policy copy being trained, its optimizer, the prompts and the verifiers."""

    config: TrainConfig
    accelerator: object
    policy: object
    """This run's own Policy (a copy); ``policy.model`` is the unwrapped model that samples and replays."""
    model: torch.nn.Module
    """The same model as prepared by accelerate (DDP-wrapped with several processes): the training forward."""
    optimizer: torch.optim.Optimizer
    examples: list[Example]
    verifiers: list[str]
    weights: torch.Tensor
    """(K,) reward weights."""
    ref_model: Optional[torch.nn.Module] = None
    start_step: int = 0
    log: object = None

    @property
    def out_dir(self) -> Optional[Path]:
        return None if self.config.out_dir is None else Path(self.config.out_dir)

    def prompts_for(self, step: int) -> tuple[list[Example], list[int]]:
        """This process's share of the step's prompts and one sampling seed per prompt.

        The order is a fresh seeded permutation of the examples per epoch, so a resumed run sees the same prompts.
        """
        P, n = self.config.prompts_per_step, len(self.examples)
        world, rank = self.accelerator.num_processes, self.accelerator.process_index
        picked = []
        for j in range(step * P, (step + 1) * P):
            epoch, pos = divmod(j, n)
            order = torch.randperm(n, generator=torch.Generator().manual_seed(self.config.seed * 7919 + epoch))
            picked.append((int(order[pos]), j))
        mine = picked[rank::world]
        seeds = [(self.config.seed * 1_000_003 + j) % 2**62 for _, j in mine]
        return [self.examples[i] for i, _ in mine], seeds


def _own_policy(config: TrainConfig, policy, device):
    """A private copy of the policy: the shared (cached) one is never trained."""
    from ..policy import load_policy

    base = policy if policy is not None else load_policy(config.checkpoint, device=device, dtype=config.dtype)
    model = copy.deepcopy(base.model).to(device)
    model.eval()  # no dropout: the sampling and the training forward see the same function
    model.requires_grad_(True)
    return dataclasses.replace(base, model=model, device=torch.device(device))


def _prompts_and_rewards(config: TrainConfig, examples) -> tuple[list[Example], list[str], torch.Tensor]:
    """The training examples, the verifier names (K columns of the reward matrix) and the (K,) reward weights."""
    from ..tasks.example_sources import available_tasks, load_examples
    from .rollouts import union_verifiers

    if examples is None and config.task not in available_tasks():
        raise ValueError(f"unknown task {config.task!r}; choose one of {available_tasks()} or pass examples")
    examples = list(examples) if examples is not None else load_examples(config.task, "train")
    if not examples:
        raise ValueError("no training examples")
    verifiers = union_verifiers(examples)
    weights = dict(config.reward_weights)
    unknown = set(weights) - set(verifiers)
    if unknown:
        raise ValueError(f"reward_weights name verifiers the task does not use: {sorted(unknown)}")
    return examples, verifiers, torch.tensor([weights.get(n, 1.0) for n in verifiers])


def setup_run(config: TrainConfig, examples: Optional[Sequence[Example]] = None, policy=None) -> Run:
    """Build (or resume) a run: accelerator, own policy copy, optimizer, prompts, verifiers, metrics log."""
    from accelerate import Accelerator

    from .checkpoints import METRICS_FILE, MetricsLog, latest_checkpoint, load_checkpoint

    if config.threads is not None:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    accelerator = Accelerator()
    if config.prompts_per_step % accelerator.num_processes:
        raise ValueError(
            f"prompts_per_step={config.prompts_per_step} must be a multiple of the "
            f"{accelerator.num_processes} processes"
        )
    examples, verifiers, weights = _prompts_and_rewards(config, examples)
    own = _own_policy(config, policy, accelerator.device)
    optimizer = torch.optim.AdamW(own.model.parameters(), lr=config.lr, weight_decay=0.0)
    ref_model = copy.deepcopy(own.model).requires_grad_(False) if config.kl_coef > 0 else None
    out_dir = Path(config.out_dir) if config.out_dir else None
    folder = latest_checkpoint(out_dir)
    start = load_checkpoint(folder, own.model, optimizer, config).steps_done if folder else 0
    model, optimizer = accelerator.prepare(own.model, optimizer)
    log = MetricsLog(out_dir / METRICS_FILE if out_dir and accelerator.is_main_process else None)
    log.keep_before(start)
    return Run(config, accelerator, own, model, optimizer, examples, verifiers, weights, ref_model, start, log)


# --- one step ------------------------------------------------------------------------------------------------------


@contextmanager
def _timed(times: dict[str, float], phase: str):
    start = time.perf_counter()
    yield
    times[phase] = time.perf_counter() - start


def train_step(run: Run, step: int) -> StepMetrics:
    """Sample -> score -> relevance -> advantages -> clipped surrogate -> update; metrics of the step."""
    from .rollouts import rollout_rewards, sample_rollouts, token_logprobs
    from .metrics import step_metrics

    cfg, method, times = run.config, get_method(run.config.method), {}
    examples, seeds = run.prompts_for(step)
    with _timed(times, "sample"):
        rollouts = sample_rollouts(
            run.policy,
            examples,
            cfg.group_size,
            seeds=seeds,
            max_new_tokens=cfg.max_new_tokens,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            stop_after_lines=cfg.stop_after_lines,
        )
    with _timed(times, "score"):
        rewards = rollout_rewards(rollouts, run.verifiers)  # (N, G, K)
    with _timed(times, "forward"):  # the training forward comes first: its logits are the replay's no-info branch
        logp, logits = token_logprobs(
            run.model, rollouts, run.policy.pad_id, run.accelerator.device, cfg.temperature, return_logits=True
        )  # (N * G, T), (N * G, T, V)
    with _timed(times, "replay"):  # the policy before the update, no grad
        relevance, entropy = token_inputs(run, method, rollouts, logits, step)
    del logits
    mask = rollouts.mask()  # (N, G, T)
    with _timed(times, "advantages"):
        adv = method(
            rewards, mask, relevance, weights=run.weights, alpha=cfg.alpha, gamma=cfg.gamma, entropy=entropy
        )  # (N, G, T)
    with _timed(times, "update"):
        losses = update_policy(run, rollouts, adv, mask, logp)
    times["update"] += times.pop("forward")  # the forward is part of the update's cost (PHASES)
    return step_metrics(run, step, rollouts, rewards, mask, adv, relevance, losses, times)


def token_inputs(run: Run, method, rollouts, logits: torch.Tensor, step: int = 0):
    """What ``method`` reads per token, as its registry entry declares it (``method.needs``, one of
    ``advantages.NEEDS``): ``(relevance (N, G, K, T) or None, entropy (N, G, T) or None)`` from the provider in
    :data:`TOKEN_INPUTS`. Random draws (the placebo's spans, the shuffle) are seeded by the run's seed and ``step``."""
    return TOKEN_INPUTS[method.needs](run, method, rollouts, logits, step)


def _draw(run: Run, step: int) -> torch.Generator:
    return torch.Generator().manual_seed(run.config.seed * 1_000_003 + step)


def _replayed(run: Run, method, rollouts, logits, one_context: bool = False):
    """The replay's relevance on the training ids, with the run's control and metric unless the method fixes them."""
    from .rollouts import rollout_relevance

    cfg = run.config
    settings = {"control": cfg.control, "metric": cfg.metric, **dict(method.replay)}
    return rollout_relevance(
        run.policy,
        rollouts,
        run.verifiers,
        metric=settings["metric"],
        control=settings["control"],
        info_position=cfg.info_position,
        pool=run.examples,
        without_logits=logits,
        one_context=one_context,
    )


def _spans(run: Run, rollouts):
    from .rollouts import span_masks

    return span_masks(rollouts, run.verifiers, run.policy.tokenizer)


def _shuffled(run, method, rollouts, logits, step):
    """MRTPO's matched placebo: its own relevance, placed at random within each response."""
    from ..advantages import shuffle_relevance

    return shuffle_relevance(_replayed(run, method, rollouts, logits), rollouts.mask(), _draw(run, step)), None


def _placebo(run, method, rollouts, logits, step):
    from ..advantages import placebo_spans

    return placebo_spans(_spans(run, rollouts), rollouts.mask(), _draw(run, step)), None


def _one_context(run, method, rollouts, logits, step):
    """The one all-information branch's metric ``(N, G, T)``, as the same row for each of the K rewards."""
    _, one = _replayed(run, method, rollouts, logits, one_context=True)
    return one[:, :, None, :].expand(-1, -1, len(run.verifiers), -1).contiguous(), None  # (N, G, K, T)


def _entropy(run, method, rollouts, logits, step):
    from ..divergence import entropy as token_entropy

    with torch.no_grad():
        H = token_entropy(logits.float() / run.config.temperature)  # (N * G, T): the sampling distribution
    return None, H.reshape(rollouts.N, rollouts.G, -1).cpu()  # (N, G, T)


TOKEN_INPUTS = {
    "": lambda run, method, rollouts, logits, step: (None, None),
    "relevance": lambda run, method, rollouts, logits, step: (_replayed(run, method, rollouts, logits), None),
    "shuffled": _shuffled,
    "spans": lambda run, method, rollouts, logits, step: (_spans(run, rollouts), None),
    "placebo": _placebo,
    "one_context": _one_context,
    "entropy": _entropy,
}
"""``advantages.NEEDS`` -> the provider of that per-token input (one per input kind, not per method)."""
assert set(TOKEN_INPUTS) == set(NEEDS), "the loop provides every input a method may declare"


def update_policy(
    run: Run, rollouts, adv: torch.Tensor, mask: torch.Tensor, logp: Optional[torch.Tensor] = None
) -> dict[str, float]:
    """One AdamW step on the token-level clipped surrogate, token-mean over the batch.

    Args:
        adv: (N, G, T) token advantages; mask: (N, G, T).
        logp: (N * G, T) the training forward's log-probs (with grad), if already computed.
    Returns:
        ``{"loss", "kl", "clip_frac", "grad_norm"}`` of this process (``grad_norm``: before clipping).
    """
    from .rollouts import token_logprobs

    cfg, dev = run.config, run.accelerator.device
    pad = run.policy.pad_id
    B, T = rollouts.N * rollouts.G, mask.shape[-1]
    adv, mask = adv.reshape(B, T).to(dev), mask.reshape(B, T).to(dev)  # (B, T)
    if logp is None:
        logp = token_logprobs(run.model, rollouts, pad, dev, cfg.temperature)  # (B, T)
    old_logp = logp.detach()  # one update per batch: the sampling policy's log-probs
    ratio = (logp - old_logp).exp()
    pg_loss1 = -adv * ratio
    pg_loss2 = -adv * ratio.clamp(1 - cfg.clip_eps, 1 + cfg.clip_eps)
    pg_loss = _masked_mean(torch.maximum(pg_loss1, pg_loss2), mask)
    kl = _masked_mean(_k3_kl(run, rollouts, logp, pad), mask) if run.ref_model is not None else logp.new_zeros(())
    loss = pg_loss + cfg.kl_coef * kl
    _refuse_non_finite(torch.isfinite(loss.detach()), "the loss", cfg)
    run.optimizer.zero_grad(set_to_none=True)
    run.accelerator.backward(loss)
    # the norm before clipping is logged for every method (an infinite max_norm measures without clipping)
    norm = run.accelerator.clip_grad_norm_(run.model.parameters(), cfg.max_grad_norm or float("inf"))
    _refuse_non_finite(torch.isfinite(torch.as_tensor(norm)), "the gradient", cfg)
    run.optimizer.step()
    _refuse_non_finite(all(bool(torch.isfinite(p).all()) for p in run.model.parameters()), "the weights", cfg)
    clipped = ((ratio - 1).abs() > cfg.clip_eps).float()
    return {
        "loss": float(loss.detach()),
        "kl": float(kl.detach()),
        "clip_frac": float(_masked_mean(clipped, mask)),
        "grad_norm": float(norm),
    }


class TrainingDiverged(ValueError):
    """A step produced NaN or infinite numbers; the run stops before anything of that step is saved."""


def _refuse_non_finite(ok, what: str, cfg: TrainConfig) -> None:
    """Stop the run when ``what`` is not finite: nothing of this step reaches a checkpoint or the metrics."""
    if not bool(ok):
        where = f"; the last checkpoint in {cfg.out_dir} is intact" if cfg.out_dir else ""
        raise TrainingDiverged(
            f"this step made {what} NaN or infinite (lr={cfg.lr:g}, max_grad_norm="
            f"{cfg.max_grad_norm:g}): lower the learning rate or clip the gradients{where}"
        )


def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-mean over all valid tokens of the batch (DAPO)."""
    return (x * mask).sum() / mask.sum().clamp_min(1)


def _k3_kl(run: Run, rollouts, logp: torch.Tensor, pad: int) -> torch.Tensor:
    """Per-token k3 estimate of KL(policy || reference): ``exp(ref - logp) - (ref - logp) - 1``.  -> (B, T)"""
    from .rollouts import token_logprobs

    with torch.no_grad():
        ref = token_logprobs(run.ref_model, rollouts, pad, run.accelerator.device, run.config.temperature)
    delta = ref - logp
    return delta.exp() - delta - 1


# --- the loop ------------------------------------------------------------------------------------------------------


def train(config: TrainConfig, *, examples: Optional[Sequence[Example]] = None, policy=None) -> Iterator[StepMetrics]:
    """Train a private copy of the policy; yields one ``StepMetrics`` per finished step.

    Args:
        config: the run.
        examples: prompts to train on (default: the train split of ``config.task``).
        policy: a loaded ``Policy`` to start from (default: ``load_policy(config.checkpoint)``); it is copied,
            never changed.
    Resumes from the last checkpoint in ``config.out_dir`` when there is one; the metrics CSV there keeps
    exactly one row per finished step. Stopping the generator early (``close()``) leaves the files as they were.
    """
    run = setup_run(config, examples, policy)
    for step in range(run.start_step, config.steps):
        metrics = train_step(run, step)
        _record(run, step, metrics)
        yield metrics


def _record(run: Run, step: int, metrics: StepMetrics) -> None:
    """Metrics row every step; a checkpoint every ``save_every`` steps and at the last step."""
    from .checkpoints import save_checkpoint

    cfg, acc = run.config, run.accelerator
    run.log.append(metrics.to_row())
    run.log.flush()
    done = step + 1
    if cfg.save_every and (done % cfg.save_every == 0 or done == cfg.steps):
        if acc.is_main_process:
            save_checkpoint(Path(cfg.out_dir), acc.unwrap_model(run.model), run.optimizer, done, cfg)
        acc.wait_for_everyone()
