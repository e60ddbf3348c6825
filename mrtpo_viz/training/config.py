"""One training run's settings: :class:`TrainConfig`. Names (methods, controls, metrics, info positions, tasks) come
from :mod:`mrtpo_viz.names`; the CLI's ``train`` options are generated from this dataclass's fields and docstrings."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from .. import names


@dataclass(frozen=True)
class TrainConfig:
    """One training run: a task family, an advantage method, a policy and the optimization settings."""

    task: str = "tool_calling"
    """Task family (``tasks.example_sources.available_tasks()``: the bundled ones, and bfcl with bfcl-eval installed);
    its train split gives the prompts (or pass ``examples`` to ``train``)."""
    method: str = "mrtpo"
    """Advantage (credit) method, a key of ``ADVANTAGE_METHODS`` (``names.METHODS`` or one added by
    ``advantages.register_credit``)."""
    checkpoint: str = names.BUNDLED_POLICY
    """Starting policy: a local folder, the bundled ``tiny-mrtpo`` or a hub id (or pass ``policy`` to ``train``)."""
    group_size: int = 4
    """G: completions sampled per prompt."""
    prompts_per_step: int = 4
    """Prompts per step over all processes (each process takes an equal share)."""
    steps: int = 20
    """Total steps; a resumed run continues up to this count."""
    lr: float = 1e-4
    """AdamW learning rate."""
    clip_eps: float = 0.2
    """Clip range of the probability ratio."""
    max_new_tokens: int = 64
    """Longest sampled response."""
    stop_after_lines: int = 0
    """End a sampled response with the token that completes this many lines (the slots task's four parts), as a
    stop string would; 0 ends responses at end-of-sequence only."""
    temperature: float = 1.0
    """Sampling temperature (> 0; the loss divides the logits by it, as TRL does)."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
    alpha: float = 1.0
    """MRTPO: 0 gives GDPO, 1 gives fully relevance-weighted token credit."""
    gamma: float = 1.0
    """MRTPO: sharpening exponent of the relevance."""
    reward_weights: tuple[tuple[str, float], ...] = ()
    """``(verifier, lambda_k)`` pairs; verifiers not listed weigh 1."""
    control: str = "none"
    """Relevance control of the replay (``none`` = the paper's raw JS)."""
    metric: str = "js"
    """Relevance metric of the replay (one of ``names.METRICS``)."""
    info_position: str = "user_end"
    """Where the replay puts verifier information."""
    seed: int = 0
    """Seeds the prompt order and the sampling."""
    kl_coef: float = 0.0
    """Weight of the KL penalty to the starting policy; 0 loads no reference model."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm (0 disables)."""
    threads: Optional[int] = None
    """torch CPU threads (None leaves torch's setting; one per concurrent worker is best on a small machine)."""
    dtype: Optional[str] = None
    """Model dtype (default float32 on CPU, bfloat16 on GPU)."""
    out_dir: Optional[str] = None
    """Folder for the metrics CSV and checkpoints; a run resumes from a checkpoint found there."""
    save_every: int = 0
    """Checkpoint every this many steps (and at the end); 0 saves no checkpoints."""

    def __post_init__(self):
        if self.method not in names.METHODS:  # a method added by advantages.register_credit (torch only then)
            from ..advantages.registry import method_names

            names.check_choice("method", self.method, method_names())
        names.check_choice("control", self.control, names.CONTROLS)
        names.check_choice("metric", self.metric, names.METRICS)
        names.check_choice("info_position", self.info_position, names.INFO_POSITIONS)
        object.__setattr__(
            self, "reward_weights", tuple((str(k), float(w)) for k, w in dict(self.reward_weights).items())
        )
        _check_ranges(self)


MAX_LR = 1.0
"""Largest learning rate: AdamW moves each weight by about ``lr`` per step, so beyond 1 (1e308 was accepted) the
first step already makes the weights useless or infinite."""
MAX_GAMMA = 100.0
"""Largest sharpening exponent: relevance lies in [0, 1], and ``d ** gamma`` underflows to 0 long before this."""
MIN_TEMPERATURE, MAX_TEMPERATURE = 1e-2, 100.0
"""Sampling temperatures training accepts: the loss divides the logits by it (1e-300 made them infinite)."""


def _finite(*values: float) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def _check_ranges(c: TrainConfig) -> None:
    floats = {
        "lr": c.lr,
        "clip_eps": c.clip_eps,
        "temperature": c.temperature,
        "top_p": c.top_p,
        "alpha": c.alpha,
        "gamma": c.gamma,
        "kl_coef": c.kl_coef,
        "max_grad_norm": c.max_grad_norm,
    }
    floats.update({f"reward_weights[{k}]": w for k, w in dict(c.reward_weights).items()})
    bad = [f"{name}={value!r}" for name, value in floats.items() if not _finite(value)]
    if bad:
        raise ValueError(
            f"settings must be finite numbers: {', '.join(bad)} (a NaN or infinite setting makes every "
            "weight NaN after one step)"
        )
    rules = [
        (c.group_size >= 2, f"group_size must be at least 2 (group advantages need 2 samples), got {c.group_size}"),
        (c.prompts_per_step >= 1, f"prompts_per_step must be at least 1, got {c.prompts_per_step}"),
        (c.steps >= 0, f"steps must be >= 0, got {c.steps}"),
        (0 < c.lr <= MAX_LR, f"lr must lie in (0, {MAX_LR:g}], got {c.lr}"),
        (0 < c.clip_eps < 1, f"clip_eps must lie in (0, 1), got {c.clip_eps}"),
        (c.max_new_tokens >= 1, f"max_new_tokens must be at least 1, got {c.max_new_tokens}"),
        (c.stop_after_lines >= 0, f"stop_after_lines must be >= 0 (0: end-of-sequence only), got {c.stop_after_lines}"),
        (
            MIN_TEMPERATURE <= c.temperature <= MAX_TEMPERATURE,
            f"temperature must lie in [{MIN_TEMPERATURE:g}, "
            f"{MAX_TEMPERATURE:g}] for policy-gradient training "
            f"(the loss divides the logits by it), got "
            f"{c.temperature}",
        ),
        (0 < c.top_p <= 1, f"top_p must lie in (0, 1], got {c.top_p}"),
        (0 <= c.alpha <= 1, f"alpha must lie in [0, 1], got {c.alpha}"),
        (0 <= c.gamma <= MAX_GAMMA, f"gamma must lie in [0, {MAX_GAMMA:g}], got {c.gamma}"),
        (c.kl_coef >= 0, f"kl_coef must be >= 0, got {c.kl_coef}"),
        (c.max_grad_norm >= 0, f"max_grad_norm must be >= 0 (0 disables clipping), got {c.max_grad_norm}"),
        (c.save_every >= 0, f"save_every must be >= 0, got {c.save_every}"),
        (c.threads is None or c.threads >= 1, f"threads must be at least 1, got {c.threads}"),
        (c.save_every == 0 or c.out_dir, "save_every needs an out_dir to save checkpoints in"),
    ]
    for ok, message in rules:
        if not ok:
            raise ValueError(message)
