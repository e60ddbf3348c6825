"""Checkpoints and the metrics CSV of one training run, written so that a kill never leaves a half-written file.

Layout of a run's ``out_dir``::

    metrics.csv              one row per finished step (``StepMetrics.to_row``), rewritten whole each time
    checkpoints/LATEST       name of the newest complete checkpoint folder
    checkpoints/step-000012/ model.safetensors + state.pt (optimizer, torch RNG, steps done, config)

Every file goes to a temporary name first and is moved into place in one step (:mod:`mrtpo_viz.atomic`; atomic on
POSIX); a checkpoint folder is complete before ``LATEST`` names it, and older folders are removed only after that. A run
killed at any moment therefore resumes from the last complete checkpoint; temporary leftovers are ignored.
"""

from __future__ import annotations

import csv
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from ..atomic import atomic_path, write_text

CHECKPOINTS = "checkpoints"
LATEST = "LATEST"
METRICS_FILE = "metrics.csv"
"""The run folder's per-step metrics file (``MetricsLog``)."""
RESUME_KEYS = ("task", "method", "checkpoint", "group_size", "prompts_per_step", "seed")
"""Config fields that must match for a run to resume another run's checkpoint (``steps`` may grow)."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed; the message says which folder and what to do."""


@dataclass
class Resumed:
    """What a checkpoint restores."""

    steps_done: int
    """Steps finished before the checkpoint; training continues at this step index."""
    folder: Path


# --- checkpoints ---------------------------------------------------------------------------------------------------


def save_checkpoint(out_dir: Path, model, optimizer, steps_done: int, config: Any, keep: int = 2) -> Path:
    """Save model, optimizer, torch RNG and step count as ``checkpoints/step-{steps_done:06d}`` and point LATEST at it.

    Call on the main process only (the model unwrapped from DDP). ``keep`` newest folders stay (two by default, so
    that a newest checkpoint damaged later, e.g. on disk, still leaves the previous one to resume from).
    """
    from safetensors.torch import save_model

    bad = _non_finite(model)
    if bad:
        raise CheckpointError(
            f"not saving step {steps_done}: the weight {bad} holds NaN or infinite values "
            f"(the previous checkpoint in {Path(out_dir) / CHECKPOINTS} is kept)"
        )
    root = Path(out_dir) / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    name = f"step-{steps_done:06d}"
    final = root / name
    with atomic_path(final) as tmp:  # the folder is written whole, then moved into place
        tmp.mkdir()
        save_model(model, str(tmp / "model.safetensors"))  # handles tied weights
        torch.save(
            {
                "optimizer": optimizer.state_dict(),
                "rng": torch.get_rng_state(),
                "steps_done": steps_done,
                "config": asdict(config),
            },
            tmp / "state.pt",
        )
        shutil.rmtree(final, ignore_errors=True)
    write_text(root / LATEST, name)
    for old in sorted(p for p in root.glob("step-*") if p.is_dir())[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(out_dir: Optional[Path]) -> Optional[Path]:
    """The folder LATEST names, or None when ``out_dir`` holds no checkpoint."""
    if out_dir is None:
        return None
    pointer = Path(out_dir) / CHECKPOINTS / LATEST
    if not pointer.is_file():
        return None
    folder = pointer.parent / pointer.read_text(encoding="utf-8").strip()
    if not folder.is_dir():
        raise CheckpointError(
            f"{pointer} names {folder.name!r}, which does not exist; delete {pointer.parent} to start the run afresh"
        )
    return folder


def load_checkpoint(folder: Path, model, optimizer, config: Any) -> Resumed:
    """Restore model weights, optimizer state and torch RNG from ``folder`` (before ``accelerator.prepare``).

    Raises:
        CheckpointError: a missing or unreadable file (e.g. truncated), or a checkpoint of a different run.
    """
    from safetensors.torch import load_model

    try:
        state = torch.load(folder / "state.pt", map_location="cpu", weights_only=True)
        _check_same_run(state.get("config", {}), asdict(config), folder)
        missing, unexpected = load_model(model, str(folder / "model.safetensors"), strict=False)
        if unexpected or [m for m in missing if not _is_tied(model, m)]:
            raise CheckpointError(
                f"{folder}: the weights do not fit the model (missing {missing[:3]}, unexpected {unexpected[:3]})"
            )
        bad = _non_finite(model)
        if bad:
            raise CheckpointError(
                f"checkpoint {folder} holds NaN or infinite values in the weight {bad}; it cannot "
                f"be resumed: {_way_out(folder)}"
            )
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
        return Resumed(steps_done=int(state["steps_done"]), folder=folder)
    except CheckpointError:
        raise
    except Exception as e:  # truncated or garbled files raise many kinds of errors; all mean "corrupted"
        raise CheckpointError(
            f"checkpoint {folder} is corrupted or incomplete ({type(e).__name__}: {e}); {_way_out(folder)}"
        ) from None


def _non_finite(model) -> Optional[str]:
    """The name of the first weight holding NaN or inf, or None."""
    for name, p in model.named_parameters():
        if p.is_floating_point() and not bool(torch.isfinite(p).all()):
            return name
    return None


def _way_out(folder: Path) -> str:
    """What to do about a corrupted checkpoint: resume from the previous one if there is one, else start afresh."""
    older = sorted(p.name for p in folder.parent.glob("step-*") if p.is_dir() and p.name < folder.name)
    if older:
        return f"to resume from the previous checkpoint, write {older[-1]} into {folder.parent / LATEST}"
    return f"delete {folder.parent} to start the run afresh"


def _is_tied(model, name: str) -> bool:
    """A parameter left out by ``save_model`` because it shares storage with another (tied embeddings)."""
    params = dict(model.named_parameters(remove_duplicate=False))
    p = params.get(name)
    return p is not None and any(q is p for n, q in params.items() if n != name)


def _check_same_run(saved: dict, current: dict, folder: Path) -> None:
    diff = {k: (saved.get(k), current.get(k)) for k in RESUME_KEYS if saved.get(k) != current.get(k)}
    if diff:
        what = ", ".join(f"{k}: saved {a!r}, now {b!r}" for k, (a, b) in diff.items())
        raise CheckpointError(f"{folder} belongs to another run ({what}); use another output folder")


# --- metrics CSV ---------------------------------------------------------------------------------------------------


class MetricsLog:
    """The run's metrics CSV: rows kept in memory, the whole file rewritten atomically on each ``flush``."""

    def __init__(self, path: Optional[Path]):
        self.path = None if path is None else Path(path)
        self.rows: list[dict[str, Any]] = []
        if self.path is not None and self.path.is_file():
            with self.path.open(newline="", encoding="utf-8") as fh:
                self.rows = list(csv.DictReader(fh))

    def keep_before(self, step: int) -> None:
        """Drop rows of steps ``>= step`` (they ran after the checkpoint that a resume starts from)."""
        self.rows = [r for r in self.rows if int(r["step"]) < step]

    def append(self, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def flush(self) -> None:
        if self.path is None:
            return
        fields = list(dict.fromkeys(k for r in self.rows for k in r))
        with atomic_path(self.path) as tmp, tmp.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=fields)
            writer.writeheader()
            writer.writerows(self.rows)
