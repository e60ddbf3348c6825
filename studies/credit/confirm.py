"""The credit study's confirmatory round on ``slots`` (plan: ``studies/credit/results/confirm_plan.json``).

Subcommands::

    python studies/credit/confirm.py plan                          # the plan: commit it before any run
    python studies/credit/confirm.py run --shard 0/2 &             # every scheduled run, resumable (one thread each)
    python studies/credit/confirm.py run --shard 1/2
    python studies/credit/confirm.py run --build b1 --method mrtpo --seed 200   # exactly one run (--lr: the rate)
    python studies/credit/confirm.py report                        # confirm.md / confirm.json, one look

The builds the runs train are shipped in ``studies/credit/policies/`` (``plan`` gives each build's command); a sitting
prints no reward, so nobody looks at a comparison before the plan's one look.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies" / "credit"))
for _k, _v in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(_k, _v)

import _confirm_plan as plans  # noqa: E402
import _credit_runs as runs  # noqa: E402

RESULTS = ROOT / "studies" / "credit" / "results"
PLAN = RESULTS / "confirm_plan.json"
RUNS = RESULTS / "confirm"


def arm_for(plan: dict, build: str) -> dict:
    """The plan's arm on one build: its key names the build, its checkpoint is the build's shipped folder."""
    if build not in plan["builds"]:
        raise ValueError(f"unknown build {build!r}; the plan's builds: {sorted(plan['builds'])}")
    return dict(plan["arm"], key=f"slots-{build}", checkpoint=plan["builds"][build]["checkpoint"])


def schedule(plan: dict) -> list:
    """Every run of the plan: the primary rate first, seed-major across builds (a sitting cut short keeps whole
    pairs in every build), then the secondary rate."""
    out = []
    for part in ("primary", "secondary"):
        lr, methods = plan[part]["lr"], plan[part]["methods"]
        for seed in plan["seeds"]["per_build"]:
            for build in plan["builds"]:
                out += [runs.RunSpec(arm_for(plan, build), m, float(lr), int(seed)) for m in methods]
    return out


def one_run(plan: dict, build: str, method: str, seed: int, lr: Optional[float] = None):
    """The plan's run for (build, method, seed) at ``lr`` (default: the primary rate)."""
    lr = float(plan["primary"]["lr"] if lr is None else lr)
    for spec in schedule(plan):
        if spec.arm["key"] == f"slots-{build}" and spec.method == method and spec.seed == seed:
            if math.isclose(spec.lr, lr):
                return spec
    raise ValueError(f"the plan has no run {build}/{method}/seed {seed} at lr {lr:g}")


def sitting(plan: dict, todo: list, out_dir: Path, threads: int = 1, log=print) -> list[Path]:
    """Train the runs of ``todo`` that have no result file yet, writing each at once (resumable). Prints no
    reward: the plan allows one look, at the report."""
    out_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for spec in todo:
        path = out_dir / f"{spec.name}.json"
        if path.is_file():
            continue
        rec = runs.train_one(spec, threads=threads)
        rec["build"] = spec.arm["key"].removeprefix("slots-")
        rec["command"] = (
            f"python studies/credit/confirm.py run --build {rec['build']} --method {spec.method} "
            f"--seed {spec.seed} --lr {spec.lr:g}"
        )
        path.write_text(json.dumps(rec, separators=(",", ":")) + "\n")
        done.append(path)
        log(f"{spec.name}: written, {rec['cpu_s']:.0f} CPU s, {rec['wall_s']:.0f} s wall")
    return done


def cmd_plan(args) -> int:
    path = Path(args.plan)
    if path.exists() and not args.force:
        raise SystemExit(f"{path} exists: a plan is not rewritten after it is committed (--force to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    print(plans.write_plan(path, plans.default_plan()))
    return 0


def cmd_run(args) -> int:
    plan = plans.load_plan(Path(args.plan))
    try:
        if args.method or args.build or args.seed is not None:
            if not (args.method and args.build and args.seed is not None):
                raise ValueError("one run needs --build, --method and --seed together")
            todo = [one_run(plan, args.build, args.method, args.seed, args.lr)]
        else:
            k, n = runs.parse_shard(args.shard)
            todo = schedule(plan)[k::n]
    except ValueError as e:
        raise SystemExit(str(e)) from None
    out = Path(args.out) if args.out else RUNS
    done = sitting(plan, todo, out, threads=args.threads)
    print(f"{len(done)} runs written to {out}")
    return 0


def cmd_report(args) -> int:
    from _confirm_report import markdown, summarize

    plan = plans.load_plan(Path(args.plan))
    src = Path(args.out) if args.out else RUNS
    records = list(runs.load_runs(src))
    summary = summarize(plan, records)
    dest = Path(args.dest) if args.dest else RESULTS
    (dest / "confirm.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    text = markdown(summary, plan, "python studies/credit/confirm.py report")
    (dest / "confirm.md").write_text(text + "\n")
    print(text)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", default=str(PLAN))
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--force", action="store_true")
    p.set_defaults(fn=cmd_plan)
    p = sub.add_parser("run")
    p.add_argument("--shard", default="0/1", help="K/N: this sitting's share of the schedule")
    p.add_argument("--build", help="one run: the build (b1, b2, b3)")
    p.add_argument("--method", help="one run: the method")
    p.add_argument("--seed", type=int, help="one run: the seed")
    p.add_argument("--lr", type=float, help="one run: the rate (default: the primary rate)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", help="folder of per-run files (default: studies/credit/results/confirm)")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("report")
    p.add_argument("--out", help="folder of per-run files")
    p.add_argument("--dest", help="where confirm.md / .json go (default: studies/credit/results)")
    p.set_defaults(fn=cmd_report)
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    raise SystemExit(main())
