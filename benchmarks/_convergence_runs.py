"""The convergence study's runs: a plan of arms x variants x seeds, trained one run at a time, resumable.

Layout of a study folder (under the gitignored ``runs/``)::

    <study>/plan.json                      the plan the study started with, and each arm's policy digest
    <study>/ledger.json                    CPU seconds per run (summed over sittings) and one entry per sitting
                                           (read-modify-written under ledger.lock: shards share it)
    <study>/<arm>/<variant>-seed<s>/       the run's TrainConfig.out_dir: metrics.csv and checkpoints/

Order: seed-major (every run of seed 0, then of seed 1, ...), each run trained to its arm's step count before the
next starts. A study stopped at any point therefore holds complete seeds of every arm and variant plus at most one
run in progress, which resumes from its checkpoint; the report pairs only seeds complete for every variant. One
run at a time also keeps the real model's memory bounded (each run trains its own copy: weights, grads, AdamW).
Shards (``run_study(shard=(k, n))``, ``convergence.py run --shard k/n``) are n such sittings side by side, each
with every n-th run of the schedule: then up to n runs are in progress, and a lock on each run's folder keeps two
sittings from training one run.
A run stopped by the CPU budget or a signal saves a checkpoint at the step it stopped at; a killed run loses at
most ``save_every`` steps. A finished run's checkpoints are deleted (its metrics.csv is the result).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional
from collections.abc import Callable

from mrtpo_viz import names
from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR
from mrtpo_viz.atomic import write_text as atomic_write_text
from mrtpo_viz.training.checkpoints import save_checkpoint
from mrtpo_viz.training.config import TrainConfig
from mrtpo_viz.training.report import parse_variant

STUDY_KEYS = ("variants", "arms")
"""Plan fields a study keeps for life: a continued study must name the same, except that an arm may get more seeds
and new arms may follow the old ones (budget notes may change)."""


@dataclass(frozen=True)
class Arm:
    """One task setup of the study: a task family on one policy with its training settings."""

    key: str
    """Folder and table name, e.g. ``tool_calling`` or ``instruction_following@smollm2``."""
    task: str
    checkpoint: str
    """``tiny-mrtpo`` or a policy folder."""
    seeds: int
    steps: int
    prompts_per_step: int
    group_size: int
    max_new_tokens: int
    lr: float
    window: int
    """Trailing window (steps) of the final mean reward and of steps to threshold."""
    save_every: int

    def __post_init__(self):
        names.check_choice("task", self.task, names.TASKS)
        if self.window > self.steps or min(self.seeds, self.steps, self.window) < 1:
            raise ValueError(f"arm {self.key}: need seeds, steps, window >= 1 and window <= steps")


@dataclass(frozen=True)
class RunSpec:
    """One run: an arm, a variant (``gdpo``, ``mrtpo:others``, ``mrtpo:oracle``, ...) and a seed."""

    arm: Arm
    variant: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.arm.key}/{self.variant}/seed{self.seed}"

    def folder(self, study: Path) -> Path:
        return study / self.arm.key / f"{self.variant.replace(':', '+')}-seed{self.seed}"

    def config(self, study: Path) -> TrainConfig:
        method, control = parse_variant(self.variant)
        a = self.arm
        return TrainConfig(
            task=a.task,
            method=method,
            control=control,
            checkpoint=a.checkpoint,
            seed=self.seed,
            steps=a.steps,
            prompts_per_step=a.prompts_per_step,
            group_size=a.group_size,
            max_new_tokens=a.max_new_tokens,
            lr=a.lr,
            threads=1,
            out_dir=str(self.folder(study)),
            save_every=a.save_every,
        )


def arms_of(plan: dict) -> list[Arm]:
    return [Arm(**a) for a in plan["arms"]]


def schedule(plan: dict) -> list[RunSpec]:
    """Every run of the plan in training order: seed-major, then arm, then variant (see the module docstring)."""
    arms = arms_of(plan)
    for v in plan["variants"]:
        method, control = parse_variant(v)
        names.check_choice("method", method, names.METHODS)
        names.check_choice("control", control, names.CONTROLS)
    return [
        RunSpec(a, v, s)
        for s in range(max(a.seeds for a in arms))
        for a in arms
        if s < a.seeds
        for v in plan["variants"]
    ]


def parse_shard(text: str) -> tuple[int, int]:
    """``"0/2"`` -> (0, 2): this process trains every second run of the schedule, starting with the first."""
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit()) or not 0 <= int(k) < int(n):
        raise ValueError(f"a shard is K/N with 0 <= K < N, got {text!r}")
    return int(k), int(n)


def shard_of(specs: list[RunSpec], shard: tuple[int, int], skip: Callable[[RunSpec], bool]) -> list[RunSpec]:
    """Shard ``K/N``'s runs: every N-th run of the schedule from the K-th, less those ``skip`` drops (finished).

    The deal is over the whole schedule, so it does not change when a shard restarts after the others finished
    runs (no run is dealt to two shards); each arm's variants alternate between the shards, which keeps their work
    even, and each shard goes seed-major."""
    k, n = shard
    return [s for s in specs[k::n] if not skip(s)]


def policy_folder(checkpoint: str) -> Path:
    return BUNDLED_POLICY_DIR if checkpoint == names.BUNDLED_POLICY else Path(checkpoint).expanduser()


def policy_digest(checkpoint: str) -> str:
    """sha256 (first 16 hex digits) of the policy's weights: a study must not continue on a rebuilt policy."""
    h = hashlib.sha256()
    with open(policy_folder(checkpoint) / "model.safetensors", "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()[:16]


# --- the study folder ----------------------------------------------------------------------------------------------


def _without_seeds(value):
    """A plan field with the arms' seed counts left out: a study may be continued with more seeds per arm."""
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [{k: v for k, v in a.items() if k != "seeds"} for a in value]
    return value


def _plan_change(old: dict, plan: dict) -> list[str]:
    """What a continued study's plan changes that it may not: a study may only add seeds and append arms."""
    changed = [k for k in STUDY_KEYS if k != "arms" and old.get(k) != plan.get(k)]
    kept = plan["arms"][: len(old["arms"])]
    if len(kept) < len(old["arms"]) or _without_seeds(kept) != _without_seeds(old["arms"]):
        changed.append("arms")
    changed += [f"fewer seeds of {a['key']}" for a, b in zip(old["arms"], kept) if b["seeds"] < a["seeds"]]
    return changed


class Study:
    """A study folder: its plan (checked against the one given), the ledger, and which runs are finished."""

    def __init__(self, root: Path, plan: dict):
        plan = json.loads(json.dumps(plan))  # tuples -> lists, as the saved plan reads back
        self.root, self.plan = Path(root), plan
        self.root.mkdir(parents=True, exist_ok=True)
        digests = {c: policy_digest(c) for c in {a.checkpoint for a in arms_of(plan)}}
        saved = self.root / "plan.json"
        if saved.is_file():
            old = json.loads(saved.read_text(encoding="utf-8"))
            changed = _plan_change(old, plan)
            moved = {c: (old["digests"][c], d) for c, d in digests.items() if old["digests"].get(c, d) != d}
            if changed or moved:
                raise SystemExit(
                    f"{self.root} was started with another plan ({changed or ''}) or policy "
                    f"({moved or ''}); continue it with its own plan ({saved}) or start a new study "
                    "with --study NAME (a plan may only add seeds and append arms)"
                )
            if plan["arms"] != old["arms"]:  # more seeds or arms: every finished run stays valid
                atomic_write_text(
                    saved, json.dumps({**old, "arms": plan["arms"], "digests": {**old["digests"], **digests}}, indent=1)
                )
        else:
            atomic_write_text(saved, json.dumps({**plan, "digests": digests}, indent=1))
        self.digests = digests
        self.ledger = self._read_ledger()

    def _read_ledger(self) -> dict:
        path = self.root / "ledger.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"runs": {}, "sittings": []}

    @contextlib.contextmanager
    def ledger_update(self):
        """Read-modify-write of the ledger under a lock: shards of one study (``run --shard``) share it."""
        with open(self.root / "ledger.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self.ledger = self._read_ledger()
                yield self.ledger
                atomic_write_text(self.root / "ledger.json", json.dumps(self.ledger, indent=1))
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def steps_done(self, spec: RunSpec) -> int:
        """Finished steps in the run's metrics CSV (a run resumes past them from its checkpoint)."""
        path = spec.folder(self.root) / "metrics.csv"
        if not path.is_file():
            return 0
        with path.open(newline="", encoding="utf-8") as fh:
            return sum(1 for _ in csv.DictReader(fh))

    def charge(self, spec: RunSpec, cpu_s: float, *, steps: int = 0, setup: bool = False) -> None:
        """Add CPU seconds to the run's ledger entry (written at once: a kill loses at most one step's entry)."""
        with self.ledger_update() as ledger:
            e = ledger["runs"].setdefault(spec.key, {"cpu_s": 0.0, "setup_cpu_s": 0.0, "steps_computed": 0})
            e["cpu_s"] += cpu_s
            e["setup_cpu_s"] += cpu_s if setup else 0.0
            e["steps_computed"] += steps


# --- running -------------------------------------------------------------------------------------------------------


@dataclass
class Stop:
    """When a sitting stops: its CPU budget, a step cap (for checks and tests), or SIGINT/SIGTERM."""

    budget_s: float = float("inf")
    max_steps: Optional[int] = None
    started: float = dataclasses.field(default_factory=time.process_time)
    steps: int = 0
    signalled: bool = False

    def used(self) -> float:
        return time.process_time() - self.started

    def reason(self, next_step_s: float) -> Optional[str]:
        """Why not to start another step expected to cost ``next_step_s`` CPU seconds (None: go on)."""
        if self.signalled:
            return "signal"
        if self.max_steps is not None and self.steps >= self.max_steps:
            return "step cap"
        if self.used() + next_step_s > self.budget_s:
            return "cpu budget"
        return None


def run_study(study: Study, stop: Stop, log: Callable[[str], None] = print, shard: tuple[int, int] = (0, 1)) -> str:
    """Advance the study in :func:`schedule` order until it is finished or ``stop`` says so; returns the reason.

    ``shard=(k, n)``: this process takes the k-th of every n unfinished runs (:func:`shard_of`); n processes of one
    study run side by side on n cores and share the ledger."""
    entry = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "pid": os.getpid(),
        "shard": f"{shard[0]}/{shard[1]}",
        "cpu_s": 0.0,
        "steps": 0,
        "outcome": "running",
    }
    with study.ledger_update() as ledger:
        ledger["sittings"].append(entry)
    policies: dict = {}
    old = {s: signal.signal(s, lambda *_: setattr(stop, "signalled", True)) for s in (signal.SIGINT, signal.SIGTERM)}
    outcome = "error"
    try:
        outcome = _advance_all(study, stop, policies, log, shard)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        entry.update(cpu_s=round(stop.used(), 1), steps=stop.steps, outcome=outcome)
        with study.ledger_update() as ledger:  # this sitting's entry, found again in the ledger as read now
            mine = [e for e in ledger["sittings"] if e["started"] == entry["started"] and e.get("pid") == entry["pid"]]
            (mine[-1].update(entry) if mine else ledger["sittings"].append(entry))
    log(f"sitting ended ({entry['outcome']}): {entry['steps']} steps, {entry['cpu_s'] / 60:.1f} CPU min")
    return entry["outcome"]


def _advance_all(study: Study, stop: Stop, policies: dict, log, shard: tuple[int, int] = (0, 1)) -> str:
    def finished(spec: RunSpec) -> bool:
        if study.steps_done(spec) >= spec.arm.steps:
            _finish(study, spec)
            return True
        return False

    for spec in shard_of(schedule(study.plan), shard, skip=finished):
        with _run_lock(study, spec) as mine:
            if not mine:
                log(f"{spec.key}: another process is training it; skipped")
                continue
            outcome = _advance(study, spec, policies, stop, log)
        if outcome != "finished":
            return outcome
    return "finished"


@contextlib.contextmanager
def _run_lock(study: Study, spec: RunSpec):
    """An exclusive, non-blocking lock on the run's folder: two sittings never train one run (True if held)."""
    folder = spec.folder(study.root)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _policy(policies: dict, checkpoint: str):
    """Each checkpoint loaded once per sitting (the runs copy it; the loaded one is never trained)."""
    from mrtpo_viz.policy import load_policy

    if checkpoint not in policies:
        policies.clear()  # one loaded policy at a time: the real model is large
        policies[checkpoint] = load_policy(str(policy_folder(checkpoint)), device="cpu", dtype="float32")
    return policies[checkpoint]


def _advance(study: Study, spec: RunSpec, policies: dict, stop: Stop, log) -> str:
    """Train one run from its checkpoint until it is finished or the sitting stops."""
    from mrtpo_viz.training.loop import setup_run, train_step

    per_step = _cpu_per_step(study, spec)
    why = stop.reason(per_step)
    if why:
        return why
    t0 = time.process_time()
    cfg = spec.config(study.root)
    run = setup_run(cfg, policy=_policy(policies, spec.arm.checkpoint))
    study.charge(spec, time.process_time() - t0, setup=True)
    log(f"{spec.key}: from step {run.start_step} of {cfg.steps}")
    for step in range(run.start_step, cfg.steps):
        why = stop.reason(per_step)
        if why:
            if step > run.start_step:  # the steps of this sitting are kept
                save_checkpoint(Path(cfg.out_dir), run.accelerator.unwrap_model(run.model), run.optimizer, step, cfg)
            log(f"{spec.key}: stopped before step {step} ({why}); {stop.used() / 60:.1f} CPU min this sitting")
            return why
        t = time.process_time()
        metrics = train_step(run, step)
        _record(run, step, metrics)
        per_step = time.process_time() - t
        stop.steps += 1
        study.charge(spec, per_step, steps=1)
    _finish(study, spec)
    log(f"{spec.key}: finished ({study.ledger['runs'][spec.key]['cpu_s']:.0f} CPU s)")
    return "finished"


def _record(run, step: int, metrics) -> None:
    """The metrics row, and a checkpoint every ``save_every`` steps before the last (a finished run needs none)."""
    cfg = run.config
    run.log.append(metrics.to_row())
    run.log.flush()
    done = step + 1
    if cfg.save_every and done % cfg.save_every == 0 and done < cfg.steps:
        save_checkpoint(Path(cfg.out_dir), run.accelerator.unwrap_model(run.model), run.optimizer, done, cfg)


def _cpu_per_step(study: Study, spec: RunSpec) -> float:
    """This run's CPU seconds per step so far (0 before its first step): the budget's guess for the next one."""
    e = study.ledger["runs"].get(spec.key)
    return (e["cpu_s"] - e["setup_cpu_s"]) / e["steps_computed"] if e and e["steps_computed"] else 0.0


def _finish(study: Study, spec: RunSpec) -> None:
    """Delete a finished run's checkpoints (the real model's are 1.6 GB each) and mark it done in the ledger."""
    shutil.rmtree(spec.folder(study.root) / "checkpoints", ignore_errors=True)
    if not study.ledger["runs"].get(spec.key, {}).get("done"):
        with study.ledger_update() as ledger:
            ledger["runs"].setdefault(spec.key, {"cpu_s": 0.0, "setup_cpu_s": 0.0, "steps_computed": 0})["done"] = True


# --- reading a study back ------------------------------------------------------------------------------------------


def study_rows(study_root: Path, plan: dict):
    """Every finished step of every run as one frame: ``arm``, ``variant``, ``seed`` and the metrics columns."""
    import pandas as pd

    frames = []
    for spec in schedule(plan):
        path = spec.folder(Path(study_root)) / "metrics.csv"
        if path.is_file():
            df = pd.read_csv(path)
            if len(df):
                frames.append(df.assign(arm=spec.arm.key, variant=spec.variant, seed=spec.seed))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["arm", "variant", "seed", "step"])
