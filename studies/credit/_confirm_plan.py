"""The credit study's confirmatory round on ``slots``: its plan, fixed before any of its runs (``confirm.py plan``).

It answers what the first round could not settle (``docs/study.md``): at the SAME learning rate, across independent
builds of the slots policy, does MRTPO's credit beat GDPO's uniform spread, and does it beat its own weights placed at
random? One look, fixed seeds, no extension; builds are a factor, each shipped under ``studies/credit/policies/``.
"""

from __future__ import annotations

import json
from pathlib import Path

BUILDS = {"b1": 1, "b2": 2, "b3": 3}
"""Build key -> the ``--seed`` of ``python -m mrtpo_viz.sample_policy.slots_policy`` (600 steps, lr 2e-3, the module's
defaults): three independent builds, none used before (the first round's builds used seed 0)."""
PRIMARY_LR = 5e-4
SECONDARY_LR = 2.5e-4
PRIMARY_METHODS = ["gdpo", "mrtpo", "mrtpo:shuffle", "mrtpo-mask", "mrtpo:oracle-mask"]
SECONDARY_METHODS = ["gdpo", "mrtpo"]
SEEDS = [200, 201, 202, 203]
"""Per build; fresh (the first round used 0-1 in its pilots and 100-113 in its main runs)."""

ARM = dict(
    task="slots",
    steps=40,
    prompts_per_step=4,
    group_size=4,
    max_new_tokens=160,
    stop_after_lines=4,
    max_grad_norm=1.0,
    heldout_prompts=100,
    window=5,
)
"""The first round's slots arm, but held out on the whole test split (100 prompts, 1 sample each at temperature 1,
the same sampling seeds for every method) at steps 20 and 40."""


def policy_dir(build: str) -> str:
    return f"studies/credit/policies/{build}"


def default_plan() -> dict:
    return {
        "study": "credit-confirm",
        "question": "on slots, at one shared learning rate and across independent builds of the slots policy: does "
        "MRTPO (raw JS, mean normalization) beat GDPO, and does it beat its own relevance shuffled within each "
        "response (mrtpo:shuffle, same values, same normalization, same rate)?",
        "builds": {
            k: {
                "command": f"python -m mrtpo_viz.sample_policy.slots_policy --out {policy_dir(k)} --seed {s}",
                "checkpoint": policy_dir(k),
            }
            for k, s in BUILDS.items()
        },
        "builds_rule": "every build is used whatever its pass rates (build-to-build variation is what the factor "
        "measures); each run records its build's weight fingerprint",
        "arm": ARM,
        "primary": {"lr": PRIMARY_LR, "methods": PRIMARY_METHODS},
        "secondary": {
            "lr": SECONDARY_LR,
            "methods": SECONDARY_METHODS,
            "why": "the same-rate pair at the first round's MRTPO rate; scheduled after every primary run",
        },
        "lr_why": "one rate for every method: AdamW's update is invariant to a constant scale of the gradient, so at "
        "one rate the methods differ in where their credit goes, not in their step size; 5e-4 is the rate the first "
        "round's pilot chose for GDPO and the mask oracle (pilot seeds 0-1, never used again)",
        "seeds": {"per_build": SEEDS, "rule": "fixed in advance: 3 builds x 4 seeds = 12 pairs; no extension"},
        "endpoints": {
            "co_primary": [
                "auc: the mean over the 40 training steps of the step's mean reward",
                "heldout_final: mean reward on the 100 held-out prompts after step 40",
            ],
            "secondary": [
                "heldout at step 20",
                "truncated share per method (the under-1% rule is reported, not enforced by reruns)",
                "wall and CPU seconds per run",
            ],
        },
        "comparisons": {
            "confirmatory": "mrtpo - gdpo at the primary rate",
            "secondary": [
                "mrtpo - mrtpo:shuffle (where the weight goes)",
                "mrtpo-mask - gdpo",
                "mrtpo:oracle-mask - gdpo (positive control)",
                "mrtpo - gdpo at the secondary rate",
            ],
        },
        "analysis": "differences paired by (build, seed). Combined: the mean of the per-build mean differences, with "
        "a t interval from the pooled within-build variance (df = 12 - 3 = 9: builds as fixed blocks). Beside it: "
        "builds as a random effect (t on the 3 build means, df 2) and each build's own paired mean and t interval "
        "(df 3). Intervals are two-sided 95%; tests one-sided at alpha 0.05.",
        "decision_rule": "MRTPO helps on slots iff the combined one-sided test of mrtpo - gdpo is significant on BOTH "
        "co-primary endpoints (an intersection-union test: level 0.05 with no correction); it hurts iff both are "
        "significant the other way; otherwise not established. The claim extends beyond these 3 builds only if the "
        "random-effect interval of the same endpoint also excludes 0.",
        "power": "the first round's paired sd of AUC differences on slots was 0.075 (14 seeds); at 12 pairs and df 9 "
        "the minimum detectable AUC difference (one-sided 0.05, power 0.8) is (1.833 + 0.883) x 0.075 / sqrt(12) "
        "= 0.059",
        "stopping_rule": "one look, when every primary run has its result file; sittings print no per-run reward; "
        "no run is excluded or repeated (a collapsed run counts)",
        "reproduce": "python studies/credit/confirm.py run --build B --method M --seed S [--lr LR]: exactly one run",
    }


def write_plan(path: Path, plan: dict) -> Path:
    Path(path).write_text(json.dumps(plan, indent=1) + "\n")
    return Path(path)


def load_plan(path: Path) -> dict:
    if not Path(path).is_file():
        raise SystemExit(f"no plan at {path}: write it with `python studies/credit/confirm.py plan` and commit it")
    return json.loads(Path(path).read_text())
