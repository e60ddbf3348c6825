"""Does token credit help? GRPO, GDPO, MRTPO (raw and best control), the span oracle and an entropy baseline.

One command per phase (each resumes where the last sitting stopped; CPU time is what the budgets mean)::

    python benchmarks/convergence.py pilot  [--cpu-budget-min M]   # short runs -> results/convergence_pilot.*
    python benchmarks/convergence.py power  [--budget-cpu-h 8]      # pilot -> convergence_power.md + the plan
    python benchmarks/convergence.py run    [--cpu-budget-min M]   # the plan (results/convergence_plan.json)
    python benchmarks/convergence.py report                          # the study -> results/convergence.{md,csv,...}
    python benchmarks/convergence.py words                           # rewrite the reports' words from their numbers

On N cores, start N sittings of one study side by side, ``run --shard 0/N`` ... ``run --shard N-1/N``: each trains
every N-th run of the schedule (one torch thread each) and they share the study's ledger. ``power --keep-seeds``
plans a study under way (the current plan's seeds stay; a plan may add seeds and append arms, nothing else).

Runs (arm, variant, seed) live under ``runs/convergence/<study>/`` (gitignored; ``--runs-dir``); see
``_convergence_runs.py`` for the order (seed-major, one run at a time), the checkpoints and the CPU ledger. Every
variant of a seed sees the same prompts and sampling seeds (``Run.prompts_for`` depends on the seed and the step
only), so differences are paired by seed. ``run`` stops cleanly at ``--cpu-budget-min`` (this sitting's process
CPU time, one torch thread), at ``--max-steps`` steps, or on SIGINT/SIGTERM, and the same command continues.

Variants: ``grpo``, ``gdpo``, ``mrtpo`` (raw JS), ``mrtpo:others`` (the best control: the only one whose span AUROC
beats raw JS in benchmarks/results/localization.md, 0.70 vs 0.62 over all span tokens and 0.77 vs 0.71 on first
tokens, with the same reward specificity 0.75; placebo and corrupted are below raw JS), ``mrtpo:oracle`` (weights
from the verifiers' relevant spans: the headroom) and ``entropy`` (uncertainty only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
for _k, _v in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(_k, _v)

import _convergence_runs as runs  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
RUNS = ROOT / "runs" / "convergence"
PLAN_FILE = RESULTS / "convergence_plan.json"
REAL_MODEL = "~/.cache/mrtpo-viz/models/smollm2-135m-instruct"
"""SmolLM2-135M-Instruct as converted by ``mrtpo-viz get-model`` (the path is kept literally in the plans)."""
VARIANTS = ["grpo", "gdpo", "mrtpo", "mrtpo:others", "mrtpo:oracle", "entropy"]
TINY = dict(checkpoint="tiny-mrtpo", prompts_per_step=2, group_size=4, max_new_tokens=40, lr=5e-4)
"""The bundled policy's settings (those of the earlier 57-step convergence runs)."""
REAL = dict(checkpoint=REAL_MODEL, prompts_per_step=1, group_size=4, max_new_tokens=64, lr=1e-5)
"""The real model's: one prompt per step (a 96-token step of 2 x 4 completions cost 56-75 CPU s here)."""


def pilot_plan() -> dict:
    """3 seeds x 40 steps on the tiny policy, 2 seeds x 6 steps on the real model: ~1 CPU hour."""
    tiny = [
        dict(key=t, task=t, seeds=3, steps=40, window=10, save_every=20, **TINY)
        for t in ("tool_calling", "text_to_sql", "instruction_following")
    ]
    real = dict(
        key="instruction_following@smollm2",
        task="instruction_following",
        seeds=2,
        steps=6,
        window=3,
        save_every=3,
        **REAL,
    )
    return {"study": "pilot", "variants": VARIANTS, "arms": tiny + [real]}


def check_policies(plan: dict) -> None:
    for arm in runs.arms_of(plan):
        if not (runs.policy_folder(arm.checkpoint).expanduser() / "model.safetensors").is_file():
            raise SystemExit(
                f"arm {arm.key}: no policy at {arm.checkpoint}; convert the real model with "
                "`python -m mrtpo_viz get-model smollm2-135m-instruct`, or edit the plan"
            )


def sitting(plan: dict, study_root: Path, args) -> str:
    """One sitting of a study: train until it is finished or the budget, step cap or a signal stops it."""
    import torch

    torch.set_num_threads(1)
    check_policies(plan)
    try:
        shard = runs.parse_shard(args.shard)
    except ValueError as err:
        raise SystemExit(f"--shard: {err}") from None
    study = runs.Study(study_root, plan)
    stop = runs.Stop(budget_s=args.cpu_budget_min * 60, max_steps=args.max_steps)
    outcome = runs.run_study(study, stop, log=lambda m: print(m, file=sys.stderr, flush=True), shard=shard)
    print(progress(study))
    return outcome


def progress(study) -> str:
    """How far the study is: runs finished per arm, CPU hours so far."""
    lines = [f"study {study.root}:"]
    for arm in runs.arms_of(study.plan):
        specs = [s for s in runs.schedule(study.plan) if s.arm.key == arm.key]
        done = sum(study.steps_done(s) >= arm.steps for s in specs)
        lines.append(f"  {arm.key}: {done} of {len(specs)} runs finished")
    cpu = sum(e["cpu_s"] for e in study.ledger["runs"].values())
    return "\n".join(lines + [f"  CPU so far: {cpu / 3600:.2f} h over {len(study.ledger['sittings'])} sitting(s)"])


def load_study(study_root: Path, plan: dict):
    """The study's rows and ledger, for the report."""
    ledger_path = study_root / "ledger.json"
    ledger = json.loads(ledger_path.read_text(encoding="utf-8")) if ledger_path.is_file() else {"runs": {}}
    return runs.study_rows(study_root, plan), ledger


def phase_pilot(args) -> int:
    import _convergence_report as report

    plan = pilot_plan()
    root = Path(args.runs_dir) / plan["study"]
    outcome = sitting(plan, root, args)
    rows, ledger = load_study(root, plan)
    report.write_report(
        rows,
        ledger,
        plan,
        RESULTS / "convergence_pilot",
        title="Convergence pilot",
        digests=json.loads((root / "plan.json").read_text())["digests"],
    )
    print(f"pilot {outcome}; wrote {RESULTS / 'convergence_pilot'}.{{md,csv,json}}")
    return 0


def phase_power(args) -> int:
    import _convergence_power as power

    pilot = json.loads((RESULTS / "convergence_pilot.json").read_text(encoding="utf-8"))
    import pandas as pd

    rows = pd.read_csv(RESULTS / "convergence_pilot.csv")
    horizons = dict(_key_value(h) for h in args.horizon)
    if args.arms:  # a study of some arms only (the others' pilot rows stay in the power text)
        keep = [a.strip() for a in args.arms.split(",") if a.strip()]
        pilot = {**pilot, "arms": {k: v for k, v in pilot["arms"].items() if k in keep}}
    floor = {}
    if args.keep_seeds and PLAN_FILE.is_file():
        floor = {a["key"]: a["seeds"] for a in json.loads(PLAN_FILE.read_text(encoding="utf-8"))["arms"]}
    command = " ".join(
        ["power", f"--budget-cpu-h {args.budget_cpu_h:g}"]
        + ["--keep-seeds"] * args.keep_seeds
        + [f"--horizon {h}" for h in args.horizon]
        + ([f"--arms {args.arms}"] if args.arms else [])
    )
    plan, text = power.propose(
        rows, pilot, budget_cpu_h=args.budget_cpu_h, variants=VARIANTS, horizons=horizons, floor=floor, command=command
    )
    (RESULTS / "convergence_power.md").write_text(text, encoding="utf-8")
    PLAN_FILE.write_text(json.dumps(plan, indent=1) + "\n", encoding="utf-8")
    print(text)
    return 0


def _key_value(text: str) -> tuple[str, int]:
    """``tool_calling=60`` -> ("tool_calling", 60)."""
    key, _, value = text.partition("=")
    if not key or not value.isdigit():
        raise SystemExit(f"--horizon takes ARM=STEPS, got {text!r}")
    return key, int(value)


def phase_run(args) -> int:
    plan = json.loads(Path(args.plan).read_text(encoding="utf-8"))
    outcome = sitting(plan, Path(args.runs_dir) / args.study, args)
    print(f"run {outcome}; continue with the same command, report with `python benchmarks/convergence.py report`")
    return 0


def phase_words(args) -> int:
    """Rewrite the reports' verdicts and conclusions from their stored numbers (after a change of wording)."""
    import _convergence_report as report

    report.refresh_words(
        RESULTS / "convergence", "Does token credit help? Convergence study", RESULTS / "convergence_power.md"
    )
    report.refresh_words(RESULTS / "convergence_pilot", "Convergence pilot")
    print("rewrote the words of results/convergence.{json,md} and convergence_pilot.{json,md}")
    return 0


def phase_report(args) -> int:
    import _convergence_report as report

    plan = json.loads(Path(args.plan).read_text(encoding="utf-8"))
    root = Path(args.runs_dir) / args.study
    if not (root / "plan.json").is_file():
        raise SystemExit(f"no study at {root}; run `python benchmarks/convergence.py run` first")
    rows, ledger = load_study(root, plan)
    out = Path(args.out) if args.out else RESULTS / "convergence"
    report.write_report(
        rows,
        ledger,
        plan,
        out,
        title="Does token credit help? Convergence study",
        digests=json.loads((root / "plan.json").read_text())["digests"],
        power_md=RESULTS / "convergence_power.md",
    )
    print(f"wrote {out}.{{md,csv,json,html}}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("phase", choices=["pilot", "power", "run", "report", "words"])
    ap.add_argument(
        "--cpu-budget-min",
        type=float,
        default=float("inf"),
        help="stop this sitting cleanly once it has used this much CPU time (pilot, run)",
    )
    ap.add_argument("--max-steps", type=int, default=None, help="stop this sitting after this many steps")
    ap.add_argument("--runs-dir", default=str(RUNS), help="where the studies' runs live (gitignored)")
    ap.add_argument("--study", default="main", help="study name (run, report)")
    ap.add_argument("--plan", default=str(PLAN_FILE), help="the study's plan (run, report)")
    ap.add_argument(
        "--shard",
        default="0/1",
        metavar="K/N",
        help="run: train the K-th of every N runs (N processes of one study on N cores, K = 0..N-1)",
    )
    ap.add_argument(
        "--keep-seeds",
        action="store_true",
        help="power: a study under way: keep the seeds of the current plan's arms (their CPU is spent)",
    )
    ap.add_argument("--budget-cpu-h", type=float, default=8.0, help="CPU hours the study may use (power)")
    ap.add_argument(
        "--horizon",
        action="append",
        default=[],
        metavar="ARM=STEPS",
        help="power: steps of an arm instead of the default horizon (repeatable)",
    )
    ap.add_argument("--arms", default="", help="power: comma-separated arms the study runs (default: all)")
    ap.add_argument("--out", default=None, help="report: output stem (default benchmarks/results/convergence)")
    args = ap.parse_args(argv)
    return {"pilot": phase_pilot, "power": phase_power, "run": phase_run, "report": phase_report, "words": phase_words}[
        args.phase
    ](args)


if __name__ == "__main__":
    raise SystemExit(main())
