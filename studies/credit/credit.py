"""Does token credit help? A study with headroom by construction (the ``slots`` task), credit separated from scale.

Subcommands (each writes under ``benchmarks/results/``)::

    python studies/credit/credit.py plan                     # credit_plan.json: commit it before any result
    python studies/credit/credit.py policy                   # credit_policy.json: pass rates with / without information
    python studies/credit/credit.py policy --arm slots-conflict   # credit_policy_slots-conflict.json (a slots arm)
    python studies/credit/credit.py lengths --arms text_to_sql   # credit_lengths.json: the start policy's truncation
    python studies/credit/credit.py gates                    # credit_gate_a.json: gradient agreement per method
    python studies/credit/credit.py relevance                # credit_relevance.json: relevance on the decision tokens
    python studies/credit/credit.py run --phase pilot --shard 0/1   # per-run JSON in results/credit_<phase>/
    python studies/credit/credit.py report --phase pilot     # credit_<phase>.md / .json: intervals, oracle share
    python studies/credit/credit.py audit                    # credit_audit.md / .json: slots with two-look corrections

The slots policy is rebuilt by ``python -m mrtpo_viz.sample_policy.slots_policy --out runs/policies/tiny-mrtpo-slots``.
On N cores, start ``run --shard K/N`` for K = 0..N-1 side by side (one torch thread each); a finished run's file is
never redone, so an interrupted sitting continues with the same command.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies" / "credit"))
for _k, _v in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(_k, _v)

import _credit_plan as plans  # noqa: E402
import _credit_runs as runs  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def _plan(args) -> dict:
    return plans.load_plan(Path(args.plan))


def cmd_plan(args) -> int:
    path = Path(args.plan)
    if path.exists() and not args.force:
        raise SystemExit(f"{path} exists: a plan is not rewritten after it is committed (--force to replace it)")
    print(plans.write_plan(path, plans.default_plan()))
    return 0


def cmd_policy(args) -> int:
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.sample_policy.slots_eval import pass_rates
    from mrtpo_viz.tasks import load_examples

    import torch

    torch.set_num_threads(args.threads)
    arm = _arm(_plan(args), args.arm)
    if arm["task"] != "slots":
        raise SystemExit(f"arm {arm['key']!r} is not a slots arm: `credit.py lengths --arms {arm['key']}` measures it")
    policy = load_policy(runs.policy_path(arm["checkpoint"]))
    test = load_examples(arm["task"], "test")[: args.prompts]
    kw = dict(samples=args.samples, max_new_tokens=arm["max_new_tokens"], stop_after_lines=arm.get("stop_after_lines"))
    out = {
        "arm": arm["key"],
        "checkpoint": arm["checkpoint"],
        "policy": runs.policy_fingerprint(arm["checkpoint"]),
        "prompts": len(test),
        "samples_per_prompt": args.samples,
        "max_new_tokens": arm["max_new_tokens"],
        "without_info": pass_rates(policy, test, info=False, **kw),
        "with_info": pass_rates(policy, test, info=True, **kw),
        "command": "python studies/credit/credit.py policy" + (f" --arm {args.arm}" if args.arm else ""),
    }
    name = "credit_policy.json" if not args.arm else f"credit_policy_{arm['key']}.json"
    (RESULTS / name).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


def _arm(plan: dict, key) -> dict:
    """The plan's arm named ``key`` (its first arm for None)."""
    if key is None:
        return plan["arms"][0]
    for arm in plan["arms"]:
        if arm["key"] == key:
            return arm
    raise SystemExit(f"no arm {key!r} in the plan; its arms: {[a['key'] for a in plan['arms']]}")


def cmd_lengths(args) -> int:
    """The start policy's response lengths on each arm's training prompts at temperature 1, against the arm's
    ``max_new_tokens``: the plan asks that under 1% of samples be cut (checked again per run)."""
    import torch

    from _credit_runs import arm_examples, start_lengths
    from mrtpo_viz.policy import load_policy

    torch.set_num_threads(args.threads)
    plan, out = _plan(args), {}
    path = RESULTS / "credit_lengths.json"
    if path.is_file():
        out = json.loads(path.read_text())
    for key in [a for a in args.arms.split(",") if a]:
        arm = _arm(plan, key)
        policy = load_policy(runs.policy_path(arm["checkpoint"]))
        out[key] = start_lengths(policy, arm, arm_examples(arm, "train")[: args.prompts], samples=args.samples)
        out[key]["command"] = f"python studies/credit/credit.py lengths --arms {key} --prompts {args.prompts}"
        print(key, json.dumps({k: v for k, v in out[key].items() if k != "command"}))
    path.write_text(json.dumps(out, indent=1) + "\n")
    return 0


def cmd_gates(args) -> int:
    import torch

    from _credit_gates import gate_a
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks import load_examples

    torch.set_num_threads(args.threads)
    plan = _plan(args)
    arm = plan["arms"][0]
    policy = load_policy(runs.policy_path(arm["checkpoint"]))
    res = gate_a(
        policy,
        load_examples(arm["task"], "train"),
        plan["methods"],
        batches=args.batches,
        prompts=arm["prompts_per_step"],
        group_size=arm["group_size"],
        max_new_tokens=arm["max_new_tokens"],
    )
    res["command"] = f"python studies/credit/credit.py gates --batches {args.batches}"
    (RESULTS / "credit_gate_a.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({m: (v["cos_mean"], v["grad_norm_median"]) for m, v in res["methods"].items()}, indent=1))
    print("gate (a) passed:", res["passed"])
    return 0


def cmd_relevance(args) -> int:
    import torch

    from _credit_gates import relevance_quality
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks import load_examples

    torch.set_num_threads(args.threads)
    arm = _arm(_plan(args), args.arm)
    policy = load_policy(runs.policy_path(arm["checkpoint"]))
    res = relevance_quality(
        policy,
        load_examples(arm["task"], "test"),
        prompts=args.prompts,
        group_size=arm["group_size"],
        max_new_tokens=arm["max_new_tokens"],
    )
    res["command"] = f"python studies/credit/credit.py relevance --prompts {args.prompts}" + (
        f" --arm {args.arm}" if args.arm else ""
    )
    res["arm"], res["policy"] = arm["key"], runs.policy_fingerprint(arm["checkpoint"])
    name = "credit_relevance.json" if not args.arm else f"credit_relevance_{arm['key']}.json"
    (RESULTS / name).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))
    return 0


def cmd_run(args) -> int:
    plan = _plan(args)
    try:
        shard = runs.parse_shard(args.shard)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    out = Path(args.out) if args.out else RESULTS / f"credit_{args.phase}"
    methods = [m for m in (args.methods or "").split(",") if m]
    try:
        lrs = [float(x) for x in (args.lrs or "").split(",") if x]
        arms = [a for a in (args.arms or "").split(",") if a]
        done = runs.sitting(
            plan, args.phase, out, shard, threads=args.threads, limit=args.limit, methods=methods, lrs=lrs, arms=arms
        )
    except ValueError as e:
        raise SystemExit(str(e)) from None
    print(f"{len(done)} runs written to {out}")
    return 0


def cmd_report(args) -> int:
    from _credit_report import gates_markdown, looks, looks_markdown, markdown, relevance_by_arm_markdown, summarize

    plan = _plan(args)
    src = Path(args.out) if args.out else RESULTS / f"credit_{args.phase}"
    records = list(runs.load_runs(src))
    if not records:
        raise SystemExit(f"no runs in {src}: run `python studies/credit/credit.py run --phase {args.phase}` first")
    summary = summarize(plan, records)
    lk = looks(plan, records) if args.phase == "main" else {}
    if lk:
        summary = {arm: dict(s, looks=lk.get(arm)) for arm, s in summary.items()}
    command = f"python studies/credit/credit.py report --phase {args.phase}"
    dest = Path(args.dest) if args.dest else RESULTS
    (dest / f"credit_{args.phase}.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    extra = {
        n: json.loads((RESULTS / f"credit_{n}.json").read_text()) if (RESULTS / f"credit_{n}.json").is_file() else None
        for n in ("gate_a", "relevance")
    }
    text = (
        markdown(summary, plan, args.phase, command)
        + "\n"
        + looks_markdown(lk)
        + "\n"
        + gates_markdown(extra["gate_a"], extra["relevance"])
        + "\n"
        + relevance_by_arm_markdown(
            {
                a["key"]: json.loads(f.read_text())
                for a in plan["arms"]
                for f in [RESULTS / f"credit_relevance_{a['key']}.json"]
                if f.is_file()
            }
        )
    )
    (dest / f"credit_{args.phase}.md").write_text(text + "\n")
    if args.phase == "main":
        from _credit_figure import write_png

        if write_png(summary, records, dest / "credit_main.png"):
            print(f"figure: {dest / 'credit_main.png'}")
    print(text)
    return 0


def cmd_audit(args) -> int:
    """The slots arm of the main runs with the corrections for the data-dependent extension (``_credit_audit``)."""
    from _credit_audit import audit, markdown

    plan = _plan(args)
    records = list(runs.load_runs(RESULTS / "credit_main"))
    pilot = list(runs.load_runs(RESULTS / "credit_pilot"))
    chosen = plan["chosen"]
    first = list(range(chosen["seed_offset"], chosen["seed_offset"] + chosen["first_seeds"]))
    a = audit(records, pilot, first)
    dest = Path(args.dest) if args.dest else RESULTS
    (dest / "credit_audit.json").write_text(json.dumps(a, indent=1, default=float) + "\n")
    text = markdown(a, "python studies/credit/credit.py audit")
    (dest / "credit_audit.md").write_text(text)
    print(text)
    return 0


def cmd_choose(args) -> int:
    """After the pilot: each method's learning rate (the grid value with the highest mean AUC) and the main runs'
    seeds (the plan's power rule on the best oracle's paired sd, at least the plan's minimum), written into the plan
    as ``chosen`` (the only change a plan takes after its pilot), with fresh seeds from ``--seed-offset``."""
    from _credit_report import summarize

    plan = _plan(args)
    records = list(runs.load_runs(RESULTS / "credit_pilot"))
    if not records:
        raise SystemExit("no pilot runs: run `python studies/credit/credit.py run --phase pilot` first")
    arm = summarize(plan, records)[plan["arms"][0]["key"]]
    need = arm["gate_b"].get("seeds_for_80pct_power") or plan["seeds"]["min"]
    plan["chosen"] = {
        "lr": arm["chosen_lr"],
        "seeds": max(plan["seeds"]["min"], int(need)),
        "seed_offset": args.seed_offset,
        "from": "credit_pilot.md: " + ", ".join(f"{m} {lr:g}" for m, lr in arm["chosen_lr"].items()),
    }
    plans.write_plan(Path(args.plan), plan)
    print(json.dumps(plan["chosen"], indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", default=str(RESULTS / "credit_plan.json"))
    ap.add_argument("--threads", type=int, default=1)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--force", action="store_true")
    p = sub.add_parser("policy")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--arm", default=None, help="a slots arm of the plan (default: its first)")
    p = sub.add_parser("lengths", help="the start policy's truncation at each arm's max_new_tokens")
    p.add_argument("--arms", required=True, help="comma-separated arm keys")
    p.add_argument("--prompts", type=int, default=150)
    p.add_argument("--samples", type=int, default=4)
    p = sub.add_parser("audit", help="the slots arm recomputed with the two-look corrections")
    p.add_argument("--dest", default=None, help="folder for credit_audit.md / .json (default results/)")
    p = sub.add_parser("choose", help="after the pilot: each method's rate and the main runs' seeds, into the plan")
    p.add_argument("--seed-offset", type=int, default=100)
    p = sub.add_parser("gates")
    p.add_argument("--batches", type=int, default=8)
    p = sub.add_parser("relevance", help="how well the replay's relevance finds the decision tokens")
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--arm", default=None, help="an arm of the plan (default: its first)")
    for name in ("run", "report"):
        p = sub.add_parser(name)
        p.add_argument("--phase", default="pilot", choices=["pilot", "main"])
        p.add_argument("--out", default=None, help="folder of the per-run JSON files")
        if name == "run":
            p.add_argument("--shard", default="0/1")
            p.add_argument("--limit", type=int, default=None, help="at most this many runs in this sitting")
            p.add_argument(
                "--methods",
                default=None,
                help="comma-separated: only these of the plan's methods, in this order (seed-major)",
            )
            p.add_argument("--lrs", default=None, help="comma-separated: only these of the phase's learning rates")
            p.add_argument("--arms", default=None, help="comma-separated: only these of the plan's arms")
        else:
            p.add_argument("--dest", default=None, help="folder for the report files (default results/)")
    args = ap.parse_args(argv)
    return {
        "plan": cmd_plan,
        "policy": cmd_policy,
        "lengths": cmd_lengths,
        "gates": cmd_gates,
        "relevance": cmd_relevance,
        "choose": cmd_choose,
        "run": cmd_run,
        "report": cmd_report,
        "audit": cmd_audit,
    }[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
