"""Operator settings for a shared deployment (a public Space), read from environment variables.

Every variable is a field of :class:`Settings` (``MRTPO_`` + the field's name in capitals), documented by the
docstring under the field; :func:`settings_table` renders them as the table of variables, defaults and meanings
(``docs/reference/settings.md`` is generated from it by ``scripts/gen_docs.py``).

The allow-list: an entry that is an existing folder admits that checkpoint folder and every folder (or ``.gguf``
file) below it (compared after resolving ``..`` and symbolic links, so a path cannot climb out); any other entry is
a hub id or a known real model's name (``smollm2-135m-instruct``), admitted only by exact name. The bundled tiny
policy (``sample_data/policies``) is always admitted: it ships with the app, is its default, and holds only
safetensors written by this package.

``get_settings()`` parses the environment on every call (cheap), so tests can change it; an invalid value raises a
:class:`SettingsError` that names the variable, which the app calls at start-up so it fails before serving.
"""

from __future__ import annotations

import os
import typing
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Optional
from collections.abc import Mapping

from .names import BUNDLED_POLICY
from .tasks.bundled_data import BUNDLED_POLICIES


class SettingsError(ValueError):
    """An environment variable with an invalid value; the message names it and says what is expected."""


@dataclass(frozen=True)
class Settings:
    """Limits and the checkpoint allow-list of one app process."""

    allowed_checkpoints: tuple[str, ...] = ()
    """``MRTPO_ALLOWED_CHECKPOINTS``: hub ids and folders that may load; empty admits any checkpoint."""
    max_tokens: int = 2048
    """``MRTPO_MAX_TOKENS``: tokens of one request (prompt + response + all verifier information)."""
    max_chars: int = 8000
    """``MRTPO_MAX_CHARS``: characters of one prompt or response typed in the app."""
    max_info_chars: int = 4000
    """``MRTPO_MAX_INFO_CHARS``: characters of one verifier-information text."""
    max_trainings: int = 1
    """``MRTPO_MAX_TRAININGS``: trainings running at once in one process."""
    max_upload_mb: float = 5.0
    """``MRTPO_MAX_UPLOAD_MB``: megabytes (MiB) of one upload: its files and form fields together, counted as they
    arrive (a client address stores at most 8 such uploads an hour; ``mrtpo_viz.serving.uploads``)."""
    max_rollouts: int = 200
    """``MRTPO_MAX_ROLLOUTS``: rollouts scored from one upload."""
    max_new_tokens: int = 256
    """``MRTPO_MAX_NEW_TOKENS``: longest generated response."""
    model_requests: int = 2
    """``MRTPO_MODEL_REQUESTS``: requests doing real work (replays, scoring, uploads, tables) at once. The next to
    start is the waiting request of the client address, then the session, that has used the server least lately,
    one request per client at a time (``mrtpo_viz.serving.fair_share``), and their forward passes take fair turns
    at the one model (``mrtpo_viz.serving.turns``). 1 serves one at a time; about the number of cores is best on
    a CPU machine."""
    checkpoint: str = ""
    """``MRTPO_CHECKPOINT``: the app's default checkpoint; empty means the bundled tiny policy."""
    threads: Optional[int] = None
    """``MRTPO_THREADS``: torch threads for the app's model calls; unset leaves torch's default."""
    runs_dir: str = ""
    """``MRTPO_RUNS_DIR``: the folder under which the Runs view opens a typed run folder; empty: none (uploads only)."""
    mcp: bool = False
    """``MRTPO_MCP``: also serve the relevance and scoring endpoints as MCP tools (Gradio's MCP server, which needs
    the ``mcp`` package: ``pip install mcp``)."""
    replay_cache_mb: float = 256.0
    """``MRTPO_REPLAY_CACHE_MB``: megabytes (MiB) of replayed branches the app keeps, so that a replay after an edit
    of one verifier's information reruns only that verifier's branch (``mrtpo_viz.relevance.branch_cache``; a
    SmolLM2-135M branch of 128 tokens is 25 MB); 0 keeps none."""
    bf16_replay: bool = False
    """``MRTPO_BF16_REPLAY``: load checkpoints in bfloat16 on a CPU that multiplies bfloat16 natively (AVX-512 BF16 or
    AMX; elsewhere float32 stays, emulated bfloat16 being slower). Its relevance differs from float32's: on
    SmolLM2-135M the 99th percentile of the difference is 0.046 and the 3 most relevant tokens are the same in 85% of
    cases (``benchmarks/results/reduced_precision.md``); the app's model line says when it is on."""

    def __post_init__(self):
        for name, highest in HIGHEST.items():
            value, var = getattr(self, name), ENV_VARS[name][0]
            if name == "threads" and value is None:
                continue
            if name == "replay_cache_mb" and value == 0:  # off
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float) if ENV_VARS[name][1] is float else int):
                raise SettingsError(f"{var} must be a {_KINDS[ENV_VARS[name][1]]}, got {value!r}")
            if not value > 0:  # written so that NaN fails too
                raise SettingsError(f"{var} must be a positive number, got {value!r}")
            if not value <= highest:  # 1e20 model requests, inf megabytes: a typo, not a setting
                raise SettingsError(f"{var} must be at most {_whole(highest)}, got {value!r}")
        if self.runs_dir and not _is_folder(self.runs_dir):
            raise SettingsError(
                f"MRTPO_RUNS_DIR must be an existing folder (the runs the app may open lie under it), got "
                f"{self.runs_dir[:200]!r}, which is not one"
            )

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 2**20)

    def row_limits(self, max_verifiers: Optional[int] = None):
        """The caps on an uploaded rollouts file and its rows (``MRTPO_MAX_UPLOAD_MB``, ``MRTPO_MAX_ROLLOUTS``,
        ``MRTPO_MAX_CHARS``, ``MRTPO_MAX_TOKENS``; ``max_verifiers`` the replay's verifiers per row)."""
        from .relevance.rows import RowLimits

        return RowLimits(
            max_bytes=self.max_upload_bytes,
            max_chars=self.max_chars,
            max_tokens=self.max_tokens,
            max_verifiers=max_verifiers,
            max_rows=self.max_rollouts,
        )

    def checkpoint_allowed(self, name_or_path: str | os.PathLike) -> bool:
        """Whether the allow-list admits this checkpoint (always, when no list is set)."""
        if not self.allowed_checkpoints:
            return True
        name = str(name_or_path).strip()
        if name == BUNDLED_POLICY:
            return True
        path = _resolved(name)
        roots = [BUNDLED_POLICIES.resolve()] + [r for r in map(_resolved, self.allowed_checkpoints) if r]
        if path is not None and any(path == r or r in path.parents for r in roots):
            return True
        return name in self.allowed_checkpoints  # a hub id, by exact name

    def check_checkpoint(self, name_or_path: str | os.PathLike) -> None:
        """Raise ValueError when the allow-list does not admit the checkpoint."""
        if not self.checkpoint_allowed(name_or_path):
            raise ValueError(
                f"checkpoint {str(name_or_path)!r} is not allowed here; this app loads only "
                f"{', '.join(self.allowed_checkpoints)} and the bundled policy "
                "(MRTPO_ALLOWED_CHECKPOINTS)"
            )

    def run_folder(self, typed: str | os.PathLike) -> Path:
        """The folder a typed run path names, if it lies under ``MRTPO_RUNS_DIR`` (a relative path is taken from
        there; compared after resolving ``..`` and links). A path outside is refused without saying whether it
        exists; one inside that does not exist is reported."""
        if not self.runs_dir:
            raise ValueError(
                "Typed run folders are off here (the operator has not set MRTPO_RUNS_DIR): upload a "
                "zip of the run's output_dir or one of its parquet files instead."
            )
        root = _resolved(self.runs_dir)
        try:
            path = Path(str(typed).strip()).expanduser()
            path = (path if path.is_absolute() else root / path).resolve()
        except (OSError, ValueError, RuntimeError):
            path = None
        shown = str(typed).strip()
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        if path is None or not (path == root or root in path.parents):
            raise ValueError(
                f"{shown!r} is not under the runs folder this app may read (MRTPO_RUNS_DIR); "
                "type a run folder relative to it"
            )
        try:
            found = path.is_dir()
        except OSError:  # a name too long for the file system, permission denied: the answer of a missing folder
            found = False
        if not found:
            inside = str(path.relative_to(root)) or "."
            raise FileNotFoundError(
                f"There is no run folder {inside if len(inside) <= 80 else inside[:77] + '...'!r} "
                "in the runs folder (MRTPO_RUNS_DIR)."
            )
        return path


_KINDS = {tuple: "comma list", str: "text", int: "whole number", float: "number", bool: "1 or 0"}

HIGHEST: dict[str, float] = {
    "max_tokens": 131_072,
    "max_chars": 1_000_000,
    "max_info_chars": 1_000_000,
    "max_trainings": 64,
    "max_upload_mb": 1024.0,
    "max_rollouts": 100_000,
    "max_new_tokens": 32_768,
    "model_requests": 256,
    "threads": 256,
    "replay_cache_mb": 65_536.0,
}
"""The highest value of each number setting (each must also be above 0): far above any deployment's need, so that
a typo (``MRTPO_MODEL_REQUESTS=100000000000000000000``) stops the app at start instead of lifting the limit."""


def _whole(number: float) -> str:
    return f"{int(number):,}" if number == int(number) else f"{number:,}"


def _is_folder(name: str) -> bool:
    try:
        return Path(name).expanduser().is_dir()
    except (OSError, ValueError, RuntimeError):  # NUL bytes, loops, over-long names
        return False


def _resolved(name: str) -> Optional[Path]:
    """The resolved folder (or ``.gguf`` file) ``name`` points to, or None when it is neither an existing folder nor
    an existing file."""
    try:
        path = Path(name).expanduser()
        return path.resolve() if path.is_dir() or path.is_file() else None
    except (OSError, ValueError, RuntimeError):  # NUL bytes, loops, over-long names
        return None


def _env_vars() -> dict[str, tuple[str, type]]:
    hints = typing.get_type_hints(Settings)
    out = {}
    for f in fields(Settings):
        kind = hints[f.name]
        if typing.get_origin(kind) is tuple:
            kind = tuple
        elif typing.get_origin(kind) is typing.Union:  # Optional[int]
            kind = next(a for a in typing.get_args(kind) if a is not type(None))
        out[f.name] = (f"MRTPO_{f.name.upper()}", kind)
    return out


ENV_VARS: dict[str, tuple[str, type]] = _env_vars()
"""Settings field -> (environment variable, type of its value)."""


_FLAGS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def _parse(field_name: str, text: str):
    var, kind = ENV_VARS[field_name]
    if kind is tuple:
        entries = tuple(e.strip() for e in text.split(",") if e.strip())
        if not entries:
            raise SettingsError(f"{var} is set but names no checkpoint; unset it to allow any, or list some")
        return entries
    if kind is str:
        return text.strip()
    if kind is bool:
        flag = text.strip().lower()
        if flag not in _FLAGS:
            raise SettingsError(f"{var} must be 1 or 0 (true / false, yes / no, on / off), got {text!r}")
        return _FLAGS[flag]
    try:
        return kind(text.strip())
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise SettingsError(f"{var} must be {what}, got {text!r}") from None


def get_settings(environ: Optional[Mapping[str, str]] = None) -> Settings:
    """The settings from ``environ`` (default ``os.environ``); unset or empty variables keep their defaults.

    Raises:
        SettingsError: a value that is not a number, not positive, or an allow-list with no entry.
    """
    env = os.environ if environ is None else environ
    given = {name: _parse(name, env[var]) for name, (var, _) in ENV_VARS.items() if env.get(var, "").strip()}
    return Settings(**given)


def default_checkpoint(settings: Optional[Settings] = None) -> str:
    """The app's and the CLI's default checkpoint: ``MRTPO_CHECKPOINT``, else the bundled policy's name."""
    return (settings or get_settings()).checkpoint or BUNDLED_POLICY


def looks_like_path(name: str) -> bool:
    """Whether a checkpoint name is a file-system path rather than a hub id or a bundled policy's name."""
    return name.startswith((".", "/", "~")) or "\\" in name or ".." in name or name.count("/") > 1


def load_allowed_policy(
    name_or_path: str | os.PathLike,
    *,
    device=None,
    dtype=None,
    settings: Optional[Settings] = None,
    public: bool = False,
):
    """``load_policy`` under the operator's rules, read now: the allow-list, the thread count, the memory bound.

    This is what the app and the CLI load through; the library's ``load_policy`` applies no deployment rule.
    ``public=True`` (the app) gives one message for every typed path that is not a usable model folder, so that
    the answer does not tell whether a folder such as ``/root/.ssh`` exists.

    Raises:
        PolicyLoadError: the checkpoint is not on the allow-list, or cannot be loaded.
    """
    from .policy import PolicyLoadError, bound_freed_memory, load_policy

    settings = settings or get_settings()
    try:
        settings.check_checkpoint(name_or_path)
    except ValueError as e:
        raise PolicyLoadError(str(e)) from None
    if settings.threads is not None:
        import torch

        torch.set_num_threads(settings.threads)
    bound_freed_memory()  # the replay's freed metric temporaries go back to the OS (mrtpo_viz/serving/memory.py)
    name = str(name_or_path).strip()
    if public and name != BUNDLED_POLICY and _names_a_path(name) and not _is_model_folder(name):
        raise PolicyLoadError(
            f"policy not found: {name[:200]!r} is not a model folder (one with config.json and "
            "*.safetensors weights) nor a hub id; give one, or pick the bundled policy"
        )
    return load_policy(name_or_path, device=device, dtype=dtype or replay_dtype(settings, device))


def replay_dtype(settings: Settings, device=None) -> Optional[str]:
    """``"bfloat16"`` where ``MRTPO_BF16_REPLAY`` is on, the device is the CPU and the CPU runs bfloat16 natively;
    otherwise None (the library's default: float32 on the CPU)."""
    from .policy.precision import native_bf16

    on_cpu = device is None or str(device).startswith("cpu")
    return "bfloat16" if settings.bf16_replay and on_cpu and native_bf16() else None


def _names_a_path(name: str) -> bool:
    """A path-like name, or any name that exists on this machine (a relative folder, a file)."""
    try:
        return looks_like_path(name) or Path(name).expanduser().exists()
    except (OSError, ValueError, RuntimeError):  # NUL bytes, over-long names, permission denied
        return True


def _is_model_folder(name: str) -> bool:
    folder = _resolved(name)
    try:
        return folder is not None and (folder / "config.json").is_file()
    except OSError:  # permission denied: the same answer as "absent"
        return False


def check_serving(settings: Optional[Settings] = None) -> Settings:
    """The checks the app makes before it serves: the variables parse, and ``MRTPO_CHECKPOINT`` names a model
    folder, a hub id or a bundled policy that the allow-list admits (``/etc/passwd`` used to serve an app whose
    every request then failed).

    Raises:
        SettingsError: naming the variable and what to set instead.
    """
    from .policy.loading import _HUB_ID

    settings = settings or get_settings()
    name = settings.checkpoint
    if not name or name == BUNDLED_POLICY:
        return settings
    if not (_is_model_folder(name) or (not looks_like_path(name) and not Path(name).exists() and _HUB_ID.match(name))):
        raise SettingsError(
            f"MRTPO_CHECKPOINT={name!r} is neither a model folder (with config.json) nor a hub id: "
            "set it to a checkpoint folder or hub id, or unset it for the bundled policy"
        )
    if not settings.checkpoint_allowed(name):
        raise SettingsError(
            f"MRTPO_CHECKPOINT={name!r} is not admitted by MRTPO_ALLOWED_CHECKPOINTS: add it there "
            "or choose an allowed checkpoint"
        )
    return settings


def _shown_default(value) -> str:
    if value in ((), "", None):
        return "(unset)"
    if isinstance(value, bool):
        return "`1`" if value else "`0`"
    return f"`{value}`"


def settings_table() -> str:
    """The environment variables as a markdown table (variable, value, default, meaning), generated from the fields
    of :class:`Settings` and the docstrings under them (the docs' settings page is this table)."""
    from .docstrings import field_docs

    docs = field_docs(Settings)
    rows = ["| variable | value | default | meaning |", "|---|---|---|---|"]
    for f in fields(Settings):
        var, kind = ENV_VARS[f.name]
        meaning = docs[f.name].removeprefix(f"``{var}``:").strip().replace("``", "`").replace("|", "\\|")
        value = f"{_KINDS[kind]}, at most {_whole(HIGHEST[f.name])}" if f.name in HIGHEST else _KINDS[kind]
        rows.append(f"| `{var}` | {value} | {_shown_default(f.default)} | {meaning} |")
    return "\n".join(rows) + "\n"
