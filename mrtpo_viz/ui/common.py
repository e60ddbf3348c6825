"""What every tab shares: input limits, readable errors, the checkpoint, example pickers.

Nothing here loads a model at import time; ``get_policy`` loads on first use (``load_policy`` caches per process).
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

import gradio as gr

from ..settings import Settings, default_checkpoint, get_settings, load_allowed_policy
from ..tasks import Example, load_examples
from ..tasks.bundled_data import BUNDLED_POLICIES

log = logging.getLogger(__name__)

MODEL = "model"
"""The one concurrency group of every event that runs the model: one model, one queue."""
MAX_VERIFIERS = 6
"""Information boxes in the relevance tab (verifiers replayed at once)."""
FREE_PROMPT = -1
"""The example index of a free prompt: no example, the verifiers' arguments typed into their fields."""
FREE_LABEL = "free prompt: type a prompt, fill each verifier's fields"
MAX_EXAMPLES = 40
"""Examples listed per task family in the pickers."""
DOWNLOAD_TTL_S = 3600
"""Download files older than this are deleted (here, and in Gradio's cache through ``gr.Blocks(delete_cache)``)."""


def download_folder(prefix: str, root: Path | None = None, ttl_s: float = DOWNLOAD_TTL_S) -> Path:
    """A new folder for one download, under one root per app process; folders older than ``ttl_s`` go first.

    Gradio copies each returned file into its own cache (cleaned by ``delete_cache``), so the originals here are
    only needed until the response is sent: without this they would pile up in the temporary folder.
    """
    import shutil
    import tempfile
    import time

    if root is None:
        remove_stale_download_roots(Path(tempfile.gettempdir()))
    root = Path(root or Path(tempfile.gettempdir()) / f"{DOWNLOAD_ROOT_PREFIX}{os.getpid()}")
    root.mkdir(parents=True, exist_ok=True)
    cutoff = time.time() - ttl_s
    for old in root.iterdir():
        try:
            if old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
        except FileNotFoundError:  # another request removed it first
            pass
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))


DOWNLOAD_ROOT_PREFIX = "mrtpo-viz-downloads-"
_swept: list[int] = []


def remove_stale_download_roots(tmp: Path) -> list[Path]:
    """Remove the download roots of app processes that no longer run (once per process); returns them.

    Each process writes under ``mrtpo-viz-downloads-<pid>`` and cleans only its own, so the roots of earlier
    (stopped, killed) processes stayed in the temporary folder for ever."""
    import shutil

    import psutil

    if os.getpid() in _swept:
        return []
    _swept.append(os.getpid())
    gone = []
    for old in tmp.glob(f"{DOWNLOAD_ROOT_PREFIX}*"):
        pid = old.name[len(DOWNLOAD_ROOT_PREFIX):]
        if old.is_dir() and pid.isdigit() and int(pid) != os.getpid() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
            gone.append(old)
    return gone


MAX_GROUP_ROWS = 64
"""Most rows of the advantages table (a group of responses) a request may send."""


def check_rewards_table(frame) -> None:
    """Refuse an advantages table of more than ``MAX_GROUP_ROWS`` rows before anything parses its cells (a table
    of 1,000,000 rows took 27 s and 950 MB)."""
    n = len(frame) if frame is not None else 0
    if n > MAX_GROUP_ROWS:
        raise ValueError(f"The rewards table has {n:,} rows; a group here has at most {MAX_GROUP_ROWS} responses.")


def rollout_limits():
    """The caps on an uploaded rollouts file and its rows, read from the operator settings now (MRTPO_MAX_UPLOAD_MB,
    MRTPO_MAX_ROLLOUTS, MRTPO_MAX_CHARS, MRTPO_MAX_TOKENS; at most ``MAX_VERIFIERS`` verifiers per row)."""
    from ..settings import rollout_limits as from_settings

    return from_settings(get_settings(), max_verifiers=MAX_VERIFIERS)


@dataclass(frozen=True)
class Limits:
    """Caps on user input, so one request cannot hold the shared model for minutes.

    The shared ones come from the operator settings (:mod:`mrtpo_viz.settings`, ``MRTPO_*`` variables).
    """

    max_tokens: int
    """Most tokens of one request: prompt + response + verifier information (``MRTPO_MAX_TOKENS``)."""
    max_info_chars: int
    """Most characters of one verifier-information text (``MRTPO_MAX_INFO_CHARS``)."""
    max_new_tokens: int
    """Largest generation length (``MRTPO_MAX_NEW_TOKENS``)."""
    max_upload_bytes: int
    """Largest rollouts file accepted (``MRTPO_MAX_UPLOAD_MB``)."""
    max_chars: int
    """Most characters of a prompt or a response (``MRTPO_MAX_CHARS``)."""
    max_rollouts: int
    """Most rollouts scored from one upload (``MRTPO_MAX_ROLLOUTS``)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> "Limits":
        return cls(max_tokens=settings.max_tokens, max_info_chars=settings.max_info_chars,
                   max_new_tokens=settings.max_new_tokens, max_upload_bytes=settings.max_upload_bytes,
                   max_chars=settings.max_chars, max_rollouts=settings.max_rollouts)


def limits() -> Limits:
    """The caps of this request, read from the operator settings now (not frozen at import)."""
    return Limits.from_settings(get_settings())


def check_text(label: str, text: str | None, max_chars: int, required: bool = True) -> str:
    """``text`` if it is within ``max_chars``; a ValueError that names the field otherwise."""
    text = text or ""
    if required and not text.strip():
        raise ValueError(f"The {label} is empty: type or generate one first.")
    if len(text) > max_chars:
        raise ValueError(f"The {label} is too long: {len(text):,} characters, at most {max_chars:,} here.")
    return text


def check_token_count(policy, *texts: str) -> None:
    """Refuse a request whose texts (prompt, response, verifier information) exceed ``limits().max_tokens``."""
    n = sum(len(policy.tokenizer(t, add_special_tokens=False, split_special_tokens=True)["input_ids"])
            for t in texts if t)  # typed specials count as the text they are replayed as
    cap = limits().max_tokens
    if n > cap:
        raise ValueError(f"The request has {n:,} tokens (prompt, response and verifier information); at most "
                         f"{cap:,} are replayed here (MRTPO_MAX_TOKENS).")


# ----------------------------------------------------------------------------------------------- stop

@dataclass
class StopFlag:
    """One session's request to stop a long run (a ``gr.State``, the same object for the run's generator and the
    Stop button's handler). Gradio's ``cancels=`` is not used: a cancelled event leaves its error state ("Error"
    badges, blanked plots) on every output; the generator checks ``stopped`` between steps and ends itself."""

    running: bool = False
    stopped: bool = False

    def start(self) -> None:
        self.running, self.stopped = True, False


# ----------------------------------------------------------------------------------------------- stale results

STALE = "inputs changed since this replay"
"""What a result's status line says once an input that would change the result has changed."""


def stale_status(status: Optional[str], again: str = "Replay") -> Any:
    """The status line marked stale: ``**⚠ inputs changed since this replay: Replay again.**`` before what it said
    (which names the checkpoint, verifiers, metric and control of the results below); no change when it already
    is."""
    text = status or ""
    if STALE in text:
        return gr.update()
    return f"**⚠ {STALE}: {again} again.** {text}".rstrip()


def mark_stale(result, status: Optional[str], again: str = "Replay") -> Any:
    """Every input that changes a result calls this (``.change``): with a result shown (``result`` not None) its
    status line is marked stale; without one nothing changes."""
    if result is None:
        return gr.update()
    return stale_status(status, again)


def picked_status(checkpoint: Optional[str]) -> str:
    """The model line after the checkpoint picker changed: nothing is loaded until Load or the next model call."""
    return f"Picked `{(checkpoint or '').strip()}`: not loaded yet (**Load**, or the next replay loads it)."


# ----------------------------------------------------------------------------------------------- errors

MAX_MESSAGE_CHARS = 500
"""Characters of an error message shown on the page."""


def _message(err: BaseException) -> str:
    """The message a user sees: the error's own text, cut to ``MAX_MESSAGE_CHARS``; an operating-system error
    names its file, never the folder (a server path says nothing a user can act on and tells an attacker much);
    a recursion error says what it means."""
    if isinstance(err, OSError) and (err.filename or err.filename2):
        text = f"{err.strerror or type(err).__name__} ({Path(str(err.filename or err.filename2)).name[:80]!r})"
    elif isinstance(err, RecursionError):
        text = "the input is nested too deeply to read"
    else:
        text = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
    text = str(text) or type(err).__name__
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS - 3] + "..."


def readable(fn):
    """Turn any exception of a handler into a ``gr.Error`` with a readable message (no traceback reaches users).

    Works for plain functions and generators; expected errors (bad input, missing files) keep their message,
    anything else is logged and reported by type and message.
    """
    def convert(err: Exception) -> gr.Error:
        if isinstance(err, gr.Error):
            return err
        if not isinstance(err, (ValueError, KeyError, FileNotFoundError, OSError, ImportError)):
            log.exception("handler %s failed", fn.__name__)
        return gr.Error(_message(err), print_exception=False)

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except Exception as err:
                raise convert(err) from None
        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as err:
            raise convert(err) from None
    return wrapper


# ----------------------------------------------------------------------------------------------- checkpoint

def checkpoint_choices() -> list[str]:
    """The default checkpoint, the bundled policies (by name), the downloaded real models (by name, those the
    allow-list admits; ``python -m mrtpo_viz get-model``) and the operator's allow-list (MRTPO_ALLOWED_CHECKPOINTS)."""
    from ..policy.known import list_downloaded

    settings = get_settings()
    found = sorted(p.parent.name for p in BUNDLED_POLICIES.glob("*/config.json"))
    real = [key for key in list_downloaded() if settings.checkpoint_allowed(key)]
    return list(dict.fromkeys([default_checkpoint(settings), *found, *real, *settings.allowed_checkpoints]))


def get_policy(checkpoint: str | None):
    """The loaded policy for a folder, a bundled policy's name or a hub id, under the operator's rules (cached by
    ``load_policy``)."""
    checkpoint = (checkpoint or "").strip()
    if not checkpoint:
        raise ValueError("No checkpoint given: pick the bundled policy or type a local folder or hub id.")
    from .zerogpu import startup_device

    # one message for every unusable typed path; on ZeroGPU the weights live on CUDA (None: the library's default)
    return load_allowed_policy(checkpoint, public=True, device=startup_device())


def load_status(checkpoint: str | None) -> str:
    """A status line for the checkpoint: what loaded, or why it did not (never raises)."""
    try:
        policy = get_policy(checkpoint)
    except Exception as err:  # the status line is the error report here
        return f"**Checkpoint not loaded:** {_message(err)}"
    return f"**Loaded** `{checkpoint}`: {policy.describe()}"


# ----------------------------------------------------------------------------------------------- examples

@lru_cache(maxsize=None)
def examples(task: str) -> tuple[Example, ...]:
    """The first test examples of a task family (read once per process)."""
    return tuple(load_examples(task, split="test")[:MAX_EXAMPLES])


def example_choices(task: str) -> list[tuple[str, int]]:
    """Dropdown choices ``(label, index)``: the test examples, then a free prompt (``FREE_PROMPT``)."""
    try:
        exs = examples(task)
    except (FileNotFoundError, ValueError):
        exs = ()
    return [(f"{i}: {prompt_text(ex)[:70]}", i) for i, ex in enumerate(exs)] + [(FREE_LABEL, FREE_PROMPT)]


def first_example(choices) -> int | None:
    """The index the pickers start at: the first real example, else the free prompt."""
    return choices[0][1] if choices else None


def free_example(task: str) -> Example:
    """A free prompt of a task family: no meta, so each verifier needs its arguments typed in."""
    return Example(task=task, prompt="", id="free prompt")


def get_example(task: str, index) -> Example:
    """The picked example, or an empty free prompt (``FREE_PROMPT``)."""
    try:
        index = int(index)
    except (TypeError, ValueError):
        raise ValueError(f"No example {index!r} in {task}: pick one from the list.") from None
    if index == FREE_PROMPT:
        check_task(task)
        return free_example(task)
    exs = examples(task)
    if not 0 <= index < len(exs):
        raise ValueError(f"No example {index} in {task}: pick one of 0..{len(exs) - 1} or the free prompt.")
    return exs[index]


def check_task(task: str) -> None:
    """A ValueError naming the known task families unless ``task`` is one of them."""
    from ..names import TASKS, check_choice

    check_choice("task family", task, TASKS)


def prompt_text(example: Example) -> str:
    """The last user message: what the prompt box shows and edits."""
    users = [m["content"] for m in example.messages() if m.get("role") == "user"]
    return users[-1] if users else ""


def with_prompt(example: Example, text: str) -> Example:
    """The example with its last user message replaced by ``text`` (a free prompt keeps the verifiers' meta)."""
    text = check_text("prompt", text, limits().max_chars)
    if text == prompt_text(example):
        return example
    msgs = example.messages()
    last = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=None)
    if last is None:
        msgs.append({"role": "user", "content": text})
    else:
        msgs[last]["content"] = text
    return dataclasses.replace(example, prompt=msgs, reference=None, id=f"{example.id} (edited)")
