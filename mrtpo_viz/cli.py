"""Command line: ``python -m mrtpo_viz {serve, replay, score, train, bench, make-sample-policy}``.

Each subcommand's arguments are declared here; its work is done by one function of the library module that owns
it, imported only when that subcommand runs (so ``--help`` stays quick).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .contexts import INFO_POSITIONS

CONTROLS = ("none", "placebo", "corrupted", "others")
METRIC_CHOICES = ("js", "kl", "tvd")  # checked against divergence.METRICS in tests
DEFAULT_POLICY = "sample_data/policies/tiny-mrtpo"


def _replay_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", default=DEFAULT_POLICY, help="local folder or hub id (default: bundled policy)")
    p.add_argument("--metric", default="js", choices=METRIC_CHOICES)
    p.add_argument("--control", default="none", choices=CONTROLS)
    p.add_argument("--info-position", default="user_end", choices=INFO_POSITIONS)
    p.add_argument("--verifiers", default=None, help="comma-separated verifier names (default: the example's)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")


def _add_serve(sub):
    p = sub.add_parser("serve", help="launch the web app")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=7860)
    return "mrtpo_viz.ui:cli_serve"


def _add_replay(sub):
    p = sub.add_parser("replay", help="relevance of one example's response to its verifiers")
    _replay_args(p)
    p.add_argument("--task", required=True)
    p.add_argument("--example", type=int, default=0, help="index in the test split")
    p.add_argument("--response", default=None, help="response text (default: the example's reference)")
    p.add_argument("--out", default=None, help="write the Relevance as JSON here")
    return "mrtpo_viz.replay:cli_replay"


def _add_score(sub):
    p = sub.add_parser("score", help="relevance for a JSONL file of rollouts (resumable)")
    p.add_argument("rollouts", help="JSONL: one rollout per line (task, prompt, response, meta, ...)")
    _replay_args(p)
    p.add_argument("--out", required=True, help="output .csv, .parquet or .jsonl")
    return "mrtpo_viz.scoring:cli_score"


def _add_train(sub):
    p = sub.add_parser("train", help="compare GRPO, GDPO and MRTPO on the bundled policy")
    p.add_argument("--task", default="tool_calling")
    p.add_argument("--methods", default="grpo,gdpo,mrtpo")
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--checkpoint", default=DEFAULT_POLICY)
    p.add_argument("--out", required=True)
    p.add_argument("--group-size", type=int, default=4, help="G: completions per prompt")
    p.add_argument("--prompts-per-step", type=int, default=4, help="over all processes")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--alpha", type=float, default=1.0, help="MRTPO: 0 = GDPO, 1 = full relevance weighting")
    p.add_argument("--gamma", type=float, default=1.0, help="MRTPO: relevance sharpening")
    p.add_argument("--threads", type=int, default=None, help="torch threads per process")
    p.add_argument("--save-every", type=int, default=10, help="checkpoint every N steps (resumes from it)")
    p.add_argument("--threshold", type=float, default=None, help="reward level for 'steps to threshold'")
    p.add_argument("--window", type=int, default=5, help="smoothing window (steps) of the summary")
    return "mrtpo_viz.training:cli_train"


def _add_bench(sub):
    p = sub.add_parser("bench", help="quick versions of all benchmarks, one table")
    p.add_argument("--out", default=None)
    return "mrtpo_viz.bench:cli_bench"


def _add_make_sample_policy(sub):
    p = sub.add_parser("make-sample-policy", help="build and train the bundled tiny policy")
    p.add_argument("--out", default=DEFAULT_POLICY)
    p.add_argument("--steps", type=int, default=None,
                   help="one stage of this many steps (default: the whole build, see --stages)")
    p.add_argument("--stages", default=None, help="steps of each stage of the default build (default 2000,2500,1500)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--init-from", default=None, help="continue training a saved policy (a later stage)")
    return "mrtpo_viz.sample_policy:cli_main"


COMMANDS = [_add_serve, _add_replay, _add_score, _add_train, _add_bench, _add_make_sample_policy]


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, str]]:
    parser = argparse.ArgumentParser(prog="mrtpo_viz", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    targets = {}
    for add in COMMANDS:
        target = add(sub)
        targets[next(reversed(sub.choices))] = target
    return parser, targets


def main(argv: list[str] | None = None) -> int:
    parser, targets = build_parser()
    args = parser.parse_args(argv)
    module, func = targets[args.command].split(":")
    try:
        return int(getattr(importlib.import_module(module), func)(args) or 0)
    except (FileNotFoundError, ValueError, KeyError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
