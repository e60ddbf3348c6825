"""The run formats the Runs view and ``python -m mrtpo_viz score`` read: one registry, one module per format.

Each :class:`RunFormat` says how to find its files in a run folder, recognise one file of it, place a zip member
of it, name the run's rewards, read one step's rows in the view's columns (:data:`VIEW_COLUMNS`) and where the
rows' advantages come from. Everything else (the Runs tab, the upload unpacker, the CLI, through :mod:`.run_view`)
asks this registry and never guesses a format from a file name or a column:

- ``"mrtpo"``: :class:`~.trl.MRTPOTrainer`'s per-token log (``mrtpo/tokens_*.parquet``), :mod:`.trl_runs`;
- ``"trl"``: TRL's ``completions/completions_*.parquet`` (GRPO, GDPO), :mod:`.trl_runs`;
- ``"verl"``: verl's rollout dumps (``{step}.jsonl``), :mod:`.verl_runs`;
- ``"prime-rl"``: prime-rl's per-token exports (``token_exports/step_*/rank_*.jsonl``), :mod:`.prime_rl_runs`.

A folder is of the first format, in that order, that finds files in it (an MRTPO run holds TRL's files too);
:mod:`.run_view` imports the format modules (each registers itself on import: this module imports none of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from collections.abc import Callable

from . import run_files

VIEW_COLUMNS = ("step", "mode", "row", "group", "prompt", "messages", "completion", "advantage")
"""Columns every format's step rows have, besides ``reward/<name>`` per reward (:func:`reward_column`)."""


def reward_column(name: str) -> str:
    """A reward's column in a step's rows."""
    return f"reward/{name}"


@dataclass(frozen=True)
class RunFiles:
    """The files of one run, by (mode, step)."""

    root: Path
    kind: str
    """Its format's name in :data:`RUN_FORMATS`."""
    files: dict[tuple[str, int], Path] = field(default_factory=dict)
    """The file (or, for prime-rl, the folder of rank files) of each (mode, step); mode ``"train"`` or ``"eval"``."""
    info: dict = field(default_factory=dict)
    """``mrtpo/run.json`` (empty for other runs)."""
    base: Optional[Path] = None
    """The folder every file must lie under (after resolving links): the runs folder or the upload's folder;
    None: ``root`` itself."""
    max_bytes: int = run_files.MAX_FILE_BYTES
    """Decompressed bytes one of its parquet files may hold."""

    @property
    def allowed(self) -> Path:
        return self.base or self.root

    @property
    def format(self) -> RunFormat:
        return RUN_FORMATS[self.kind]

    def steps(self) -> list[tuple[str, int]]:
        """Every (mode, step) with a file, by step (training before evaluation)."""
        return sorted(self.files, key=lambda k: (k[1], k[0] == "eval"))


@dataclass(frozen=True)
class RunFormat:
    """One run format: how it is found, opened and read."""

    name: str
    title: str
    """How the status line names an opened run of it (what it holds and what a user does next)."""
    find: Callable[[Path, Path], dict[tuple[str, int], Path]]
    """(run folder, base) -> its step files under ``base`` (empty: not a run of this format)."""
    single: Callable[[Path, Path], Optional[dict[tuple[str, int], Path]]]
    """(one file, base) -> its steps, or None when the file is not of this format (a file that claims to be, and
    is broken, raises a :class:`~.run_files.RunFileError`)."""
    member: Callable[[str], Optional[str]]
    """A zip member's path -> where it goes in the unpacked folder (relative), or None (not a file of the format;
    the result never holds ``..`` or an absolute path)."""
    reward_names: Callable[[RunFiles], list[str]]
    rows: Callable[[RunFiles, Path, int, str], object]
    """(run, step file, step, mode) -> the step's rows (a pandas frame with :data:`VIEW_COLUMNS`)."""
    advantage: str
    """What a row's ``advantage`` is (said beside it in the app)."""
    what: str
    """A short name for messages ("a verl dump")."""
    looks: str
    """What the files look like (the message for a folder that holds none of any format)."""
    means: Optional[Callable[[RunFiles, Path], tuple[int, dict[str, float]]]] = None
    """(run, step file) -> (rows, each reward's mean) without building the rows (the reward curves); None: from
    :attr:`rows`."""
    infos: Optional[Callable[[dict, list[str]], dict[str, str]]] = None
    """(a row, reward names) -> each reward's information for a replay, from what the row holds (a ValueError
    says why there is none); None: the run holds none (it is typed)."""
    infos_found: str = "found for this bundled prompt"
    """Where :attr:`infos` found a row's information (said beside the prefilled lines)."""
    rollout: Optional[Callable[[dict, object], tuple[list[dict], object]]] = None
    """(a row, the policy) -> (chat messages, response text or token ids) to replay; None: the row's ``messages``
    (JSON) and ``completion``."""
    curve_names: tuple[str, ...] = ()
    """What its curves show per step when it logs no rewards (column ``reward/<name>`` of the curves, from
    :attr:`means`); empty: its rewards."""
    curves_title: str = "Mean reward per step"
    file_name: Callable[[str], bool] = lambda name: False
    """Whether a file of this name, uploaded alone, is one of its step files (parquet files always are tried)."""


RUN_FORMATS: dict[str, RunFormat] = {}
"""Name -> format, in the order a folder is tried."""


def register_format(fmt: RunFormat) -> RunFormat:
    """Add a run format (a module of its own calls this on import)."""
    RUN_FORMATS[fmt.name] = fmt
    return fmt


def shown(path: Path) -> str:
    """A file's name as a message shows it: never its folder, at most 80 characters."""
    name = Path(path).name
    return name if len(name) <= 80 else name[:77] + "..."
