"""Scoring across processes: ``accelerate launch --multi_gpu --num_processes N -m mrtpo_viz score ...``.

With one process :func:`score_rollouts` runs as before. With N (``WORLD_SIZE`` set by the launcher), every process
reads the rollouts and what earlier runs left, takes every N-th row still to score (rank r: rows r, r + N, ... of
that list, in file order), replays them on its own device and writes them to its own part file next to the output,
``<out>.part-<r>-of-<N>.jsonl``, atomically every batch (so a kill loses at most a batch and a rerun resumes from the
parts as from the output). After a barrier, rank 0 merges: the output's records, then every scored row's records in
the input's row order, exactly what one process writes, through the same atomic write; then it deletes the parts.

Parts are JSONL whatever the output's format: a JSON float reads back bit for bit, a CSV float through pandas need
not, and the merged file must equal a one-process run's. A part left by a run with another N is read like any other.

Why ``--multi_gpu`` on CPU too: ``accelerate launch --cpu --num_processes 2`` starts a single process (accelerate's
multi-CPU mode goes through ``mpirun``); ``--multi_gpu`` starts N through ``torch.distributed.run``, and with no
GPU :func:`process_state` makes them a gloo group on CPU (``torchrun --nproc_per_node N -m mrtpo_viz score`` does
the same).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional
from collections.abc import Iterator, Sequence

from .rows import RowLimits, read_rows
from .scoring import ScoreProgress, read_existing, check_out, score_rows, write_atomic

PART_SUFFIX = ".jsonl"
"""The format of the part files (exact float round trip, see the module's docstring)."""


@dataclass(frozen=True)
class Shard:
    """This process's place in the launch: rank ``rank`` of ``world`` processes."""

    rank: int = 0
    world: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def process_state():
    """accelerate's ``PartialState`` for this process, initialized for scoring (call before loading the policy).

    Under a launcher (``WORLD_SIZE`` > 1) with no GPU, or with ``ACCELERATE_USE_CPU`` set, it is a CPU (gloo) group:
    ``PartialState()`` alone would see no GPU, fall back to "not distributed" and let every process score every row.
    With one process it is the plain ``PartialState()`` (the policy loader's default device: nothing changes).
    """
    import torch
    from accelerate import PartialState

    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    accel = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    # accelerate's multi-process modes know CUDA and the other data-centre chips, not Apple's MPS
    cpu = _flag("ACCELERATE_USE_CPU") or (world > 1 and (accel is None or accel.type == "mps"))
    return PartialState(cpu=cpu) if cpu else PartialState()


def shard_of(state) -> Shard:
    return Shard(rank=state.process_index, world=state.num_processes)


# --- parts ---------------------------------------------------------------------------------------------------------


def part_path(out: Path, shard: Shard) -> Path:
    """``scores.csv`` -> ``scores.csv.part-0-of-2.jsonl``: next to the output, so the rename stays on one disk."""
    return out.with_name(f"{out.name}.part-{shard.rank}-of-{shard.world}{PART_SUFFIX}")


def part_paths(out: Path) -> list[Path]:
    """The part files of ``out`` on disk, any number of processes, ordered by (processes, rank)."""
    pattern = re.compile(re.escape(out.name) + r"\.part-(\d+)-of-(\d+)" + re.escape(PART_SUFFIX) + "$")
    found = [(m, p) for p in out.parent.glob(f"{out.name}.part-*") if (m := pattern.match(p.name))]
    return [p for m, p in sorted(found, key=lambda mp: (int(mp[0][2]), int(mp[0][1])))]


def read_parts(out: Path) -> dict[Path, list[dict]]:
    """Every part file's records (a damaged part raises the same ValueError as a damaged output)."""
    return {p: read_existing(p, PART_SUFFIX) for p in part_paths(out)}


def split_rows(todo: list, shard: Shard) -> list:
    """Rank r's share of the rows to score: ``todo[r], todo[r + N], ...`` (file order; shares differ by <= 1 row)."""
    return todo[shard.rank :: shard.world]


def merge_records(rows: list[dict], existing: list[dict], parts: Sequence[list[dict]]) -> list[dict]:
    """The output one process would write: ``existing`` as it is, then the parts' records of each row of ``rows``
    (the input, file order) not already in it, then any part records of ids no longer in the input (kept, not lost).

    A table output has several records per id (one per token and verifier): they stay together, in their order.
    """
    have = {str(r["id"]) for r in existing}
    by_id: dict[str, list[dict]] = {}
    for records in parts:
        for r in records:
            key = str(r["id"])
            if key not in have:
                by_id.setdefault(key, []).append(r)
    merged = list(existing)
    for row in rows:
        merged += by_id.pop(str(row["id"]), [])
    for records in by_id.values():
        merged += records
    return merged


# --- the run -------------------------------------------------------------------------------------------------------


def score_sharded(
    policy,
    path: str | os.PathLike,
    verifiers: Optional[Sequence[str]] = None,
    *,
    out: str | os.PathLike,
    state,
    metric: str = "js",
    control: str = "none",
    info_position: str = "user_end",
    batch_size: int = 16,
    limits: RowLimits = RowLimits(),
) -> Iterator[ScoreProgress]:
    """:func:`score_rollouts` for one process of ``state`` (a ``PartialState``): score this rank's share into its
    part, then (rank 0) merge everything into ``out``. Yields this rank's progress after each row; the last one,
    after the merge, holds every rank's counts and problems on rank 0 (each bad line once, by line number).
    """
    from accelerate.utils import gather_object

    out, shard = Path(out), shard_of(state)
    suffix = check_out(out)
    rows, problems = read_rows(path, limits)
    have = {str(r["id"]) for r in read_existing(out, suffix)}
    parts = read_parts(out)
    have |= {str(r["id"]) for records in parts.values() for r in records}
    todo = [r for r in rows if r["id"] not in have]
    mine = split_rows(todo, shard)
    state.wait_for_everyone()  # every rank has read the parts before any rank adds to its own
    own = part_path(out, shard)
    progress = ScoreProgress(
        total=len(mine), resumed=len(rows) - len(todo), problems=list(problems) if shard.is_main else []
    )
    yield progress
    yield from score_rows(
        policy,
        mine,
        list(parts.get(own, [])),
        progress,
        verifiers,
        out=own,
        suffix=suffix,
        file_suffix=PART_SUFFIX,
        metric=metric,
        control=control,
        info_position=info_position,
        batch_size=batch_size,
        limits=limits,
    )
    state.wait_for_everyone()  # every part is complete
    counts = gather_object([(progress.scored, progress.problems)])
    try:
        if shard.is_main:
            merge_into(out, suffix, rows)
            progress.scored = sum(n for n, _ in counts)
            progress.total = len(todo)
            progress.problems = sorted((p for _, ps in counts for p in ps), key=lambda p: p[0])
    finally:
        state.wait_for_everyone()  # the others return only once the output is whole (or rank 0 has failed)
    yield progress


def merge_into(out: Path, suffix: str, rows: list[dict]) -> None:
    """Merge ``out``'s records and all its parts into ``out`` (atomically), then delete the parts."""
    parts = read_parts(out)
    write_atomic(out, merge_records(rows, read_existing(out, suffix), list(parts.values())), suffix)
    for p in parts:
        p.unlink()
