"""Per-token advantages per reward in the trackers a TRL run reports to: trackio (``report_to="trackio"``) and
Weights & Biases (``report_to="wandb"``), whichever of them the run reports to.

TRL's own ``log_completions`` table holds one scalar advantage per completion. :class:`TokenTables` adds, at each
log, one table per new token file that :class:`~mrtpo_viz.integrations.trl.MRTPOTrainer` wrote
(``output_dir/mrtpo/tokens_{step:05d}.parquet``, :mod:`.trl_log`): one row per token, long form, since both
trackers' table views show rows of scalar cells. Columns :data:`TABLE_COLUMNS`, then per reward ``r``:
``reward/r`` (the completion's reward), ``relevance/r`` and ``part/r`` (the token's relevance and its share of the
token advantage); the shares and the batch baseline sum to ``advantage``. At most ``max_completions`` completions
per step (the first ones: a table of every token of a large batch would be too long to read in a browser).

The same table goes under :data:`TABLE_KEY` to each tracker's current run, the one transformers' ``TrackioCallback``
or ``WandbCallback`` starts: trackio at the run's step; wandb with ``train/global_step`` set to the step (the x axis
``WandbCallback`` defines; wandb keeps its own step counter, which a logged ``step=`` must not go below). A tracker
with no current run (or not installed) gets nothing. Only the main process logs (the token files are written by it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from transformers import TrainerCallback

from . import trl_log

TABLE_KEY = "mrtpo/token_advantages"
"""The key of the table in each tracker's log."""
TABLE_COLUMNS = ("step", "row", "group", "position", "token", "advantage")
"""``row``/``group``: the completion and its prompt's group in the batch; ``position``: the token's index in the
completion; ``advantage``: the token advantage the loss used."""


def token_table(records, names, max_completions: int = 8):
    """The long-form pandas frame of the first ``max_completions`` completion records of a token file."""
    import pandas as pd

    rows = []
    for rec in list(records)[:max_completions]:
        for t, (token, adv) in enumerate(zip(rec["tokens"], rec["token_advantages"])):
            row = {"step": int(rec["step"]), "row": int(rec["row"]), "group": int(rec["group"])}
            row.update(position=t, token=str(token), advantage=float(adv))
            for n in names:
                row[trl_log.reward_column(n)] = float(rec[trl_log.reward_column(n)])
                row[trl_log.relevance_column(n)] = float(rec[trl_log.relevance_column(n)][t])
                row[trl_log.part_column(n)] = float(rec[trl_log.part_column(n)][t])
            rows.append(row)
    return pd.DataFrame(rows)


def reward_names(columns) -> list[str]:
    """The reward names of a token file, from its ``part/<name>`` columns, in file order."""
    prefix = trl_log.part_column("")
    return [c[len(prefix) :] for c in columns if c.startswith(prefix)]


TRACKERS = ("trackio", "wandb")
"""The ``report_to`` names whose runs get the tables."""


def _trackio():
    try:
        import trackio
    except ImportError:
        return None
    return trackio if trackio.context_vars.current_run.get() is not None else None


def _wandb():
    try:
        import wandb
    except ImportError:
        return None
    return wandb if wandb.run is not None else None


def _log_trackio(trackio, table, step: int) -> None:
    trackio.log({TABLE_KEY: trackio.Table(dataframe=table)}, step=step)


def _log_wandb(wandb, table, step: int) -> None:
    wandb.log({TABLE_KEY: wandb.Table(dataframe=table), "train/global_step": step})


_SINKS = {"trackio": (_trackio, _log_trackio), "wandb": (_wandb, _log_wandb)}


class TokenTables(TrainerCallback):
    """A TRL callback: log each new per-token file of an MRTPO run as a table to every tracker of ``trackers`` that
    has a current run (see the module)."""

    def __init__(self, max_completions: int = 8, trackers=TRACKERS):
        if max_completions < 1:
            raise ValueError(f"max_completions must be >= 1, got {max_completions}")
        unknown = [t for t in trackers if t not in _SINKS]
        if unknown:
            raise ValueError(f"unknown tracker {unknown[0]!r}; the tables go to {', '.join(TRACKERS)}")
        self.max_completions = max_completions
        self.trackers = tuple(trackers)
        self.logged: set[str] = set()

    def log_new_tables(self, output_dir: str | Path) -> list[int]:
        """Log the token files under ``output_dir/mrtpo`` not logged yet; the steps logged, in order."""
        import pandas as pd

        sinks = [(module, log) for find, log in (_SINKS[t] for t in self.trackers) if (module := find()) is not None]
        folder = Path(output_dir) / trl_log.LOG_DIR
        if not sinks or not folder.is_dir():
            return []
        done = []
        for path in sorted(folder.glob(trl_log.TOKEN_FILE.replace("{step:05d}", "[0-9]*"))):
            if path.name in self.logged:
                continue
            frame = pd.read_parquet(path)
            step = int(path.stem.rsplit("_", 1)[1])
            table = token_table(frame.to_dict("records"), reward_names(frame.columns), self.max_completions)
            for module, log in sinks:
                log(module, table, step)
            self.logged.add(path.name)
            done.append(step)
        return done

    def on_log(self, args, state, control, logs: Optional[dict] = None, **kwargs):
        if state.is_world_process_zero:
            self.log_new_tables(args.output_dir)


def attach(trainer) -> None:
    """Add :class:`TokenTables` to a TRL trainer that writes token files and reports to trackio or wandb."""
    trackers = [t for t in TRACKERS if t in (trainer.args.report_to or [])]
    if trackers and getattr(trainer.args, "log_tokens", False):
        trainer.add_callback(TokenTables(trackers=trackers))
