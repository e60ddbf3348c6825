"""Rollout rows: one schema, checked line by line before anything expensive runs.

A row is a JSON object ``{"task", "prompt", "response", "meta"?, "verifiers"?, "id"?}`` (other keys are ignored):

- ``task``: text; ``id``: text or a number (default ``line<N>``);
- ``prompt``: non-empty text, or a non-empty list of chat messages ``{"role": text, "content": text}`` (other
  message keys are dropped: the template sees role and content only);
- ``response``: non-empty text;
- ``meta``: an object (default ``{}``) nested at most ``RowLimits.max_depth`` deep; where a verifier declares its
  arguments (:class:`mrtpo_viz.tasks.Argument`), their values must have the declared kind; ``meta.db_path`` is
  refused (a file must not point the SQL verifier at any database on the machine: ``meta.db`` names a bundled one);
- ``verifiers``: a list of verifier names, or one comma-separated text.

Every text must be valid Unicode (no unpaired surrogates such as JSON's ``"\\ud800"``), and the limits of
:class:`RowLimits` are checked here, before any tokenization: a line's size (read with a bounded ``readline``, so
a 57 MB line is never held whole), characters per text, verifiers per row, rows per file. Each failure is one
``(line number, message)`` problem; the other rows go on. A UTF-8 byte-order mark at the start is skipped.
"""

from __future__ import annotations

import io
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..guards import nesting_depth, unpaired_surrogate

MAX_ROLLOUT_BYTES = 64 * 2**20
"""Largest rollouts file read by default (the CLI and the Python API; the app sets its own, smaller cap)."""
Problem = tuple[int, str]
_KINDS = {
    "text": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "list": (list,),
    "choice": (str,),
}
_KIND_WORDS = {
    "text": "text (a string)",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "list": "a list",
    "choice": "one of the choices",
}


@dataclass(frozen=True)
class RowLimits:
    """Caps on one rollouts file and its rows (``None``: no cap of that kind beyond the model's context window,
    which the replay checks before tokenizing)."""

    max_bytes: int = MAX_ROLLOUT_BYTES
    """Size of the file."""
    max_line_bytes: int = 4 * 2**20
    """Size of one line (one row)."""
    max_depth: int = 32
    """Nesting of lists and objects in a row."""
    max_chars: Optional[int] = None
    """Characters of the response and of each prompt message."""
    max_tokens: Optional[int] = None
    """Tokens of prompt, response and verifier information together (checked by the scorer, after the characters)."""
    max_verifiers: Optional[int] = None
    """Verifiers replayed per row (a row without a list gets its task's verifiers, which count too)."""
    max_rows: Optional[int] = None
    """Valid rows read from one file; later rows are reported and skipped."""


NAME_CHARS = 200
"""Longest task name, role or id."""


def _text(value: Any, what: str, limits: RowLimits, required: bool = True, cap: Optional[int] = -1) -> str:
    """``value`` as checked text: a string, valid Unicode, at most ``cap`` characters (default: ``max_chars``)."""
    if not isinstance(value, str) or (required and not value):
        got = "an empty one" if value == "" else type(value).__name__
        raise ValueError(f"{what} must be a {'non-empty ' if required else ''}string, got {got}")
    bad = unpaired_surrogate(value)
    if bad >= 0:
        raise ValueError(
            f"{what} holds an unpaired surrogate (\\u{ord(value[bad]):04x} at character {bad}), which is "
            "not valid Unicode"
        )
    cap = limits.max_chars if cap == -1 else cap
    if cap is not None and len(value) > cap:
        raise ValueError(f"{what} has {len(value):,} characters; at most {cap:,} here")
    return value


def _prompt(value: Any, limits: RowLimits):
    if isinstance(value, str):
        return _text(value, "'prompt'", limits)
    if not isinstance(value, list) or not value:
        raise ValueError("'prompt' must be a non-empty string or a non-empty list of chat messages")
    messages = []
    for i, m in enumerate(value, 1):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise ValueError(f"'prompt' message {i} must be an object with 'role' and 'content'")
        messages.append(
            {
                "role": _text(m["role"], f"'prompt' message {i} role", limits, cap=NAME_CHARS),
                "content": _text(m["content"], f"'prompt' message {i} content", limits, required=False),
            }
        )
    if not any(m["role"] == "user" for m in messages):
        raise ValueError("'prompt' has no user message")
    return messages


def _verifiers(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError("'verifiers' must be a list of verifier names or one comma-separated string")
    return list(value)


def _check_arguments(meta: dict, names: list[str]) -> None:
    """Values of the arguments the row's verifiers declare must have the declared kind."""
    from ..tasks import VERIFIERS

    for name in names:
        for arg in getattr(VERIFIERS.get(name), "arguments", ()):
            if arg.name not in meta or arg.kind not in _KINDS or meta[arg.name] is None:
                continue
            value = meta[arg.name]
            ok = isinstance(value, _KINDS[arg.kind]) and not (
                arg.kind in ("integer", "number") and isinstance(value, bool)
            )
            ok = ok and (arg.kind != "choice" or not arg.choices or value in arg.choices)
            if not ok:
                raise ValueError(
                    f"meta.{arg.name} must be {_KIND_WORDS[arg.kind]} for {name}, got {json.dumps(value)[:60]}"
                )


def check_row(row: Any, lineno: int, limits: RowLimits = RowLimits()) -> dict:
    """A valid rollout row with ``id``, ``verifiers`` (a list) and ``meta`` set, or ValueError saying what is wrong."""
    if not isinstance(row, dict):
        raise ValueError(f"not a JSON object (got a {type(row).__name__})")
    if nesting_depth(row, limits.max_depth) > limits.max_depth:
        raise ValueError(f"nested more than {limits.max_depth} levels deep")
    missing = [k for k in ("task", "prompt", "response") if k not in row]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)}")
    meta = {} if row.get("meta") is None else row["meta"]
    if not isinstance(meta, dict):
        raise ValueError(f"'meta' must be an object, got {type(meta).__name__}")
    if "db_path" in meta:
        raise ValueError("'meta.db_path' is not accepted in a rollouts file; name a bundled database with 'meta.db'")
    rid = row.get("id")
    if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int)) or len(str(rid)) > NAME_CHARS):
        raise ValueError(f"'id' must be text or a number of at most {NAME_CHARS} characters, got {type(rid).__name__}")
    out = {
        "task": _text(row["task"], "'task'", limits, cap=NAME_CHARS),
        "prompt": _prompt(row["prompt"], limits),
        "response": _text(row["response"], "'response'", limits),
        "meta": dict(meta),
        "verifiers": _verifiers(row.get("verifiers")),
        "id": str(rid if rid not in (None, "") else f"line{lineno}"),
    }
    if limits.max_verifiers is not None and len(out["verifiers"]) > limits.max_verifiers:
        raise ValueError(f"{len(out['verifiers'])} verifiers; at most {limits.max_verifiers} per row here")
    _check_arguments(out["meta"], out["verifiers"] or _task_verifiers(out["task"]))
    return out


def _task_verifiers(task: str) -> list[str]:
    from ..tasks import list_verifiers

    return list_verifiers(task)


def _lines(fh, max_line_bytes: int):
    """(line number, text or None when the line is longer than the cap), reading at most the cap at a time."""
    lineno = 0
    while True:
        line = fh.readline(max_line_bytes + 1)
        if not line:
            return
        lineno += 1
        if len(line) > max_line_bytes and not line.endswith("\n"):
            while (rest := fh.readline(1 << 20)) and not rest.endswith("\n"):  # drop the rest of the long line
                pass
            yield lineno, None
        else:
            yield lineno, line


def _parse(line: str, lineno: int, limits: RowLimits) -> dict:
    text = line.rstrip("\r\n")  # with its line break, a row cut short was reported at "column 1" of the next line
    try:
        return check_row(json.loads(text), lineno, limits)
    except json.JSONDecodeError as e:
        where = (
            f"at the end of the line, column {e.pos + 1} (is the row split over two lines?)"
            if e.pos >= len(text.rstrip())
            else f"at column {e.pos + 1}"
        )
        raise ValueError(f"not valid JSON ({e.msg} {where})") from None
    except RecursionError:  # Python's parser gives up on very deep nesting (100,000 levels)
        raise ValueError(f"nested more than {limits.max_depth} levels deep") from None


def _size(n: int, fmt: str = "g") -> str:
    return f"{n / 2**20:{fmt}} MiB" if n >= 2**20 else f"{n:,} bytes"


def _open_regular(file: Path):
    """``file`` opened for reading in binary if it is a regular file (after following links). Opened without
    blocking, so a fifo is refused at once instead of waiting for a writer for ever (``/dev/zero``, another special
    file, would never end)."""
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise FileNotFoundError(f"no rollouts file at {file}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(
            f"{file.name} is not a regular file (a fifo, a device or a link to one); only regular files are read"
        )
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_rows(path: str | os.PathLike, limits: RowLimits = RowLimits()) -> tuple[list[dict], list[Problem]]:
    """Read a rollouts JSONL file: (valid rows in file order, each with ``id`` and ``line``; problems).

    Raises:
        FileNotFoundError: no such file. ValueError: the file is over ``limits.max_bytes``, or not a regular file (a
        fifo, a device or a link to one: refused before anything is read).
    """
    file = Path(path)
    raw = _open_regular(file)
    size = os.fstat(raw.fileno()).st_size
    if size > limits.max_bytes:
        raw.close()
        raise ValueError(
            f"{file.name} is {_size(size, '.1f')}; the limit is {_size(limits.max_bytes)} (split the file)"
        )
    rows, problems, seen = [], [], set()
    with io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace") as fh:  # -sig: a byte-order mark is not row 1
        for lineno, line in _lines(fh, limits.max_line_bytes):
            if line is None:
                problems.append((lineno, f"the line is longer than {_size(limits.max_line_bytes)}"))
                continue
            if not line.strip():
                continue
            try:
                row = _parse(line, lineno, limits)
            except ValueError as e:
                problems.append((lineno, str(e)))
                continue
            if row["id"] in seen:
                problems.append((lineno, f"repeated id {row['id']!r}"))
            elif limits.max_rows is not None and len(rows) >= limits.max_rows:
                problems.append((lineno, f"more than {limits.max_rows} rollouts; this one and later ones are skipped"))
            else:
                seen.add(row["id"])
                rows.append({**row, "line": lineno})
    return rows, problems
