"""Opening a run's files under a root, with bounds: what the Runs view reads from a typed folder or an upload.

- **Only files under the root.** A run folder may hold symbolic links (a linked ``completions/`` folder, a
  ``run.json`` that points at ``/etc/passwd``). :func:`safe_file` resolves each path and admits only a regular
  file whose resolved path lies under the root (``MRTPO_RUNS_DIR``, or the upload's own folder); anything else gets
  the answer a missing file gets, so a link tells nothing about what it points to.
- **Parquet bounded before it is materialized.** :func:`read_parquet` reads the footer first (rows, columns, the
  uncompressed sizes the file declares) and refuses a file over the caps; then it reads small row batches and
  counts what they really hold (the footer can understate it): bytes in all, bytes of one cell, items of one list
  cell, and a wall-clock budget checked between batches, so a hostile file stops within the caps and no thread keeps
  decoding for minutes after the client has gone.
- **Zip members streamed with a running cap** (:func:`copy_member`): the decompressed bytes are counted as they
  come, whatever the member's headers claim.
- **run.json** is read only up to :data:`MAX_JSON_BYTES`, and a nesting deeper than :data:`MAX_JSON_DEPTH` is
  refused before anything recurses into it.

The caps are module constants (a run file is not a user-sized input: the app's ``MRTPO_MAX_UPLOAD_MB`` bounds the
upload itself, and the callers pass ``max_bytes`` down from it).
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import IO, Optional
from collections.abc import Sequence

from ..guards import nesting_depth

MAX_ROWS = 50_000
"""Rows of one run parquet file (a TRL step logs one generation batch: hundreds to a few thousand rows)."""
MAX_COLUMNS = 512
"""Leaf columns of one run parquet file (TRL's: a few per reward; ours: three per reward)."""
MAX_CELL_BYTES = 2**20
"""Bytes of one text cell (a prompt, a completion) of a run file."""
MAX_LIST_ITEMS = 65_536
"""Items of one list cell (a completion's token ids, its per-token relevance)."""
MAX_FILE_BYTES = 512 * 2**20
"""Decompressed bytes of one run parquet file, unless the caller passes a smaller ``max_bytes``."""
MAX_FOOTER_BYTES = 2**20
"""Bytes of a run parquet file's footer (its schema and row-group metadata: ~300 bytes per column)."""
MAX_NESTING = 16
"""Nesting levels of one column (TRL's chat messages: a list of structs, 3 levels)."""
READ_BUDGET_S = 30.0
"""Wall-clock seconds one parquet file may take to read."""
BATCH_ROWS = 256
"""Rows per batch while reading: the unit between two checks of the caps."""
MAX_JSON_BYTES = 2**20
"""Bytes of ``mrtpo/run.json``."""
MAX_JSON_DEPTH = 32
"""Nesting of ``mrtpo/run.json``."""
MAX_REWARDS = 32
"""Rewards of one run (a TRL reward column, a verl reward key, a token log's ``reward/<name>``): each is a panel of
the reward curves, a column of every table and a line of the replay form; multi-reward runs have a handful (the
bundled instruction-following task, 14)."""
MAX_CURVE_ROWS = 100_000
"""Rows the reward curves read over a run's steps, in step order: later steps are left off the curves (and the
status says so); each one still opens when picked."""
MAX_UPLOAD_FILES = 500
"""Run files of one uploaded zip (a 5 MiB upload of real steps holds tens of them)."""
CHUNK = 2**20


class RunFileError(ValueError):
    """A run file over a cap or of the wrong shape; the message names the file (never its folder)."""


def open_regular(path: os.PathLike | str, name: str) -> IO[bytes]:
    """``path`` opened for reading in binary, if it is a regular file (after following links); a fifo, a device or a
    link to one is refused before anything is read from it (opening a fifo would wait for a writer for ever,
    ``/dev/zero`` never ends).

    Raises:
        RunFileError: not a regular file (named ``name``).
    """
    try:  # O_NONBLOCK: opening a fifo returns at once instead of waiting for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise FileNotFoundError(f"{name}: cannot be opened ({e.strerror or type(e).__name__})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RunFileError(f"{name} is not a regular file (a fifo, a device or a link to one); only files are read")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def safe_file(path: os.PathLike | str, root: os.PathLike | str) -> Optional[Path]:
    """The resolved path of ``path`` if it is a regular file under ``root`` (both resolved), else None.

    A link out of ``root``, a folder, a device or a missing file all give None: the same answer."""
    try:
        real = Path(path).resolve(strict=True)
        base = Path(root).resolve(strict=True)
        return real if _under(real, base) and stat.S_ISREG(os.stat(real).st_mode) else None
    except (OSError, ValueError, RuntimeError):  # missing, a loop, NUL bytes, over-long names
        return None


def safe_folder(path: os.PathLike | str, root: os.PathLike | str) -> Optional[Path]:
    """The resolved folder of ``path`` if it is a folder under ``root``, else None (as :func:`safe_file`)."""
    try:
        real = Path(path).resolve(strict=True)
        return real if real.is_dir() and _under(real, Path(root).resolve(strict=True)) else None
    except (OSError, ValueError, RuntimeError):
        return None


def files_in(folder: Path, root: Path, pattern: str = "*.parquet") -> list[Path]:
    """The regular files matching ``pattern`` directly in ``folder``, each admitted by :func:`safe_file` (named by
    their own path, so the caller keeps the names it matched on); nothing when the folder itself leaves ``root``."""
    if safe_folder(folder, root) is None:
        return []
    try:
        found = sorted(folder.glob(pattern))
    except OSError:
        return []
    return [p for p in found if safe_file(p, root) is not None]


def read_json(path: Path, root: Path) -> dict:
    """A small JSON object file under ``root`` (``run.json``); ``{}`` when it is missing or leaves the root.

    Raises:
        RunFileError: over :data:`MAX_JSON_BYTES`, not JSON, nested deeper than :data:`MAX_JSON_DEPTH`.
    """
    real = safe_file(path, root)
    if real is None:
        return {}
    with open_regular(real, path.name) as fh:
        data = fh.read(MAX_JSON_BYTES + 1)
    if len(data) > MAX_JSON_BYTES:
        raise RunFileError(f"{path.name} is larger than {MAX_JSON_BYTES // 1024} KiB; a run's settings file is small")
    if _bracket_depth(data) > MAX_JSON_DEPTH:
        raise RunFileError(f"{path.name} is nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise RunFileError(f"{path.name} is not valid JSON ({getattr(e, 'msg', type(e).__name__)})") from None
    return value if isinstance(value, dict) and nesting_depth(value, MAX_JSON_DEPTH) <= MAX_JSON_DEPTH else {}


def _bracket_depth(data: bytes) -> int:
    """An upper bound of a JSON text's nesting (brackets inside strings count too), without parsing it."""
    depth = deepest = 0
    for b in data:
        if b in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif b in (0x5D, 0x7D):
            depth -= 1
    return deepest


# ----------------------------------------------------------------------------------------------- parquet


def parquet_columns(path: Path, root: Path) -> list[str]:
    """The top-level column names of a run parquet file (its footer only)."""
    return list(parquet_schema(path, root).names)


def parquet_schema(path: Path, root: Path):
    """The arrow schema of a run parquet file (its footer only), refused over :data:`MAX_COLUMNS` leaf columns."""
    pf = _open_parquet(path, root)
    if pf.metadata.num_columns > MAX_COLUMNS:
        raise RunFileError(
            f"{path.name} has {pf.metadata.num_columns:,} columns; a run file here has at most {MAX_COLUMNS:,}"
        )
    return pf.schema_arrow


def _open_parquet(path: Path, root: Path):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("reading a run's parquet files needs pyarrow: pip install 'mrtpo-viz[trl]'") from None
    real = safe_file(path, root)
    if real is None:
        raise FileNotFoundError(f"{path.name}: no such run file")
    _check_footer_size(real, path.name)
    try:
        return pq.ParquetFile(real)
    except Exception as e:  # noqa: BLE001 -- any unreadable file: one readable message
        raise RunFileError(f"{path.name} is not a readable parquet file ({type(e).__name__})") from None


def _check_footer_size(real: Path, name: str) -> None:
    """Refuse a footer over :data:`MAX_FOOTER_BYTES` from its length field (the file's last 8 bytes), before it is
    parsed: parsing the footer of 10,000 columns costs more memory than any run file needs."""
    try:
        with open(real, "rb") as fh:
            fh.seek(-8, os.SEEK_END)
            tail = fh.read(8)
    except OSError:
        return  # shorter than 8 bytes: the parquet reader says it is not a parquet file
    if tail[4:] == b"PAR1" and int.from_bytes(tail[:4], "little") > MAX_FOOTER_BYTES:
        raise RunFileError(
            f"{name}'s footer is {int.from_bytes(tail[:4], 'little') / 2**20:.1f} MiB (thousands of "
            f"columns or row groups); a run file here has at most {MAX_COLUMNS} columns"
        )


def check_footer(meta, name: str, max_bytes: int) -> None:
    """Refuse a parquet file whose footer declares more than the caps (rows, leaf columns, uncompressed bytes)."""
    if meta.num_rows > MAX_ROWS:
        raise RunFileError(f"{name} has {meta.num_rows:,} rows; a run file here has at most {MAX_ROWS:,}")
    if meta.num_columns > MAX_COLUMNS:
        raise RunFileError(f"{name} has {meta.num_columns:,} columns; a run file here has at most {MAX_COLUMNS:,}")
    deepest = max((meta.schema.column(c).max_definition_level for c in range(meta.num_columns)), default=0)
    if deepest > MAX_NESTING:
        raise RunFileError(f"{name} nests its columns {deepest} levels deep; a run file here has at most {MAX_NESTING}")
    declared = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):  # more bytes than rows x the cell cap: some cell is over it
            chunk = group.column(c)
            if chunk.total_uncompressed_size > MAX_CELL_BYTES * max(group.num_rows, 1) + 2**16:
                raise RunFileError(
                    f"{name}: a cell of column {chunk.path_in_schema!r} holds more than "
                    f"{MAX_CELL_BYTES // 1024} KiB (the file says so); at most that here"
                )
        declared += max(
            group.total_byte_size, sum(group.column(c).total_uncompressed_size for c in range(group.num_columns))
        )
        if declared > max_bytes:
            raise RunFileError(f"{name} unpacks to more than {max_bytes / 2**20:.0f} MiB; open fewer or smaller steps")


def read_parquet(
    path: Path,
    root: Path,
    columns: Optional[Sequence[str]] = None,
    *,
    max_bytes: int = MAX_FILE_BYTES,
    budget_s: float = READ_BUDGET_S,
):
    """A run parquet file under ``root`` as a pandas frame, read within the caps (see the module docstring).

    Raises:
        FileNotFoundError: missing, or not a regular file under ``root``.
        RunFileError: unreadable, over a cap, or over the time budget.
    """
    import pyarrow as pa

    pf = _open_parquet(path, root)
    max_bytes = min(int(max_bytes), MAX_FILE_BYTES)
    check_footer(pf.metadata, path.name, max_bytes)
    names = pf.schema_arrow.names
    if columns is not None:
        missing = [c for c in columns if c not in names]
        if missing:
            raise RunFileError(f"{path.name} has no column {missing[0]!r}")
    deadline, total, batches = time.monotonic() + budget_s, 0, []
    try:
        for batch in pf.iter_batches(
            batch_size=BATCH_ROWS, columns=list(columns) if columns is not None else None, use_threads=False
        ):
            total += batch.nbytes
            if total > max_bytes:
                raise RunFileError(
                    f"{path.name} unpacks to more than {max_bytes / 2**20:.0f} MiB; open fewer or smaller steps"
                )
            _check_cells(batch, path.name)
            if time.monotonic() > deadline:
                raise RunFileError(f"{path.name} took longer than {budget_s:g} s to read and was stopped")
            batches.append(batch)
        table = pa.Table.from_batches(batches, schema=batches[0].schema) if batches else pf.schema_arrow.empty_table()
        if columns is not None and not batches:
            table = table.select(list(columns))
        return table.to_pandas()
    except RunFileError:
        raise
    except (MemoryError, OSError, ValueError, pa.ArrowException) as e:
        raise RunFileError(f"{path.name} could not be read ({type(e).__name__})") from None
    finally:
        del batches
        # Arrow's allocator keeps freed blocks per thread; a refused 30 MB cell stayed in each server thread
        pa.default_memory_pool().release_unused()


def _check_cells(batch, name: str) -> None:
    """Refuse a batch with a text cell over :data:`MAX_CELL_BYTES` or a list cell over :data:`MAX_LIST_ITEMS`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for field, column in zip(batch.schema, batch.columns):
        t = field.type
        if pa.types.is_dictionary(t):
            column, t = column.dictionary, t.value_type
        if (
            pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
        ) and len(column):
            longest = pc.max(pc.binary_length(column)).as_py() or 0
            if longest > MAX_CELL_BYTES:
                raise RunFileError(
                    f"{name}: a cell of column {field.name!r} holds {longest / 2**20:.1f} MiB; at "
                    f"most {MAX_CELL_BYTES // 1024} KiB here"
                )
        elif (pa.types.is_list(t) or pa.types.is_large_list(t)) and len(column):
            longest = pc.max(pc.list_value_length(column)).as_py() or 0
            if longest > MAX_LIST_ITEMS:
                raise RunFileError(
                    f"{name}: a cell of column {field.name!r} holds {longest:,} items; at most "
                    f"{MAX_LIST_ITEMS:,} here (tokens of one completion)"
                )


# ----------------------------------------------------------------------------------------------- zip members


def copy_member(source: IO[bytes], target: Path, budget: list[int], what: str) -> None:
    """Stream one opened zip member into ``target``, counting decompressed bytes against ``budget[0]`` (shared by
    all the members of one upload); the partial file is removed when the budget runs out.

    Raises:
        RunFileError: the members unpack to more than the budget.
    """
    try:
        with open(target, "wb") as out:
            while chunk := source.read(CHUNK):
                budget[0] -= len(chunk)
                if budget[0] < 0:
                    raise RunFileError(f"{what} unpacks to more than it may here; upload fewer steps")
                out.write(chunk)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
