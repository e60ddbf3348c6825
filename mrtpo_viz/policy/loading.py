"""Loading a policy: a local folder, the bundled policy or a downloaded known real model by name, a ``.gguf`` file,
or a Hugging Face hub id.

``load_policy`` loads safetensors or GGUF only and never runs remote code; every way a checkpoint can be unusable ends
in a :class:`PolicyLoadError` that says what is wrong, before any weights are read. Loaded policies are cached per
process by (resolved path, device, dtype). A known real model (``names.KNOWN_MODELS``, fetched once by ``python -m
mrtpo_viz get-model KEY``, :mod:`.known`) loads from its converted folder in the models cache; a ``.gguf`` file is
dequantized on every load (:mod:`.gguf`, needs the optional ``gguf`` package), which takes ~8x as long as loading the
converted folder.

Deployment rules are not applied here: an operator's checkpoint allow-list, request limits and the allocator setting
of :mod:`mrtpo_viz.serving.memory` belong to the app and the CLI (``mrtpo_viz.settings``). A Python user who wants
the replay's memory bound calls ``mrtpo_viz.policy.bound_freed_memory()`` once.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Union

import torch

from ..names import BUNDLED_POLICY, KNOWN_MODELS
from ..tasks.bundled_data import BUNDLED_POLICY_DIR
from .gguf import GGUFError, is_gguf_path
from . import checkpoint_checks
from .model import PLAIN_CHAT_TEMPLATE, Policy

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")
_MEMORY_HEADROOM = 1.3  # activations, tokenizer and Python overhead on top of the parameter bytes
_CACHE: dict[tuple[str, str, str], Policy] = {}
_LOCK = threading.Lock()


class PolicyLoadError(ValueError):
    """A checkpoint that cannot (or must not) be loaded; the message says why and what to do."""


# --- loading -------------------------------------------------------------------------------------------------------


def load_policy(
    name_or_path: Union[str, os.PathLike],
    *,
    device: Union[str, torch.device, None] = None,
    dtype: Union[str, torch.dtype, None] = None,
) -> Policy:
    """Load (once per process) a causal LM and its tokenizer.

    Args:
        name_or_path: a local checkpoint folder, ``"tiny-mrtpo"`` (the bundled policy, inside the installed package),
            a known real model's name (``"smollm2-135m-instruct"``, once ``python -m mrtpo_viz get-model`` has
            fetched it), a ``.gguf`` file, or a hub id (``owner/name``). A local folder wins over the names.
        device: ``"cpu"``, ``"cuda"``, ... (default: accelerate's device for this process).
        dtype: ``"float32"``, ``"bfloat16"``, ... (default: bfloat16 on CUDA, float32 elsewhere).
    Raises:
        PolicyLoadError: not found, not a model, not a causal LM, no tokenizer, pickle weights only, remote code
            required, hub unreachable, a known model not downloaded yet, a garbled GGUF file or no ``gguf``
            package, or too large for the available memory.
    """
    dev = _resolve_device(device)
    dt = _resolve_dtype(dtype, dev)
    name = str(name_or_path)
    if is_gguf_path(name) and not _is_dir(name):
        file = _resolve_gguf(name)
        key, load = ("gguf:" + str(file), str(dev), str(dt)), lambda: _load_gguf(file, name, dev, dt)
    else:
        folder = _resolve_folder(name)
        if folder == BUNDLED_POLICY_DIR.resolve():  # by path or by name, one policy with one name (the cache is shared)
            name = BUNDLED_POLICY
        key, load = (str(folder), str(dev), str(dt)), lambda: _load(folder, name, dev, dt)
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = load()
        return _CACHE[key]


_DEVICE_LOCK = threading.Lock()


def _resolve_device(device) -> torch.device:
    if device is not None:
        return torch.device(device)
    from accelerate import PartialState

    # PartialState is a process-wide singleton whose first initialization is not thread-safe: two app handlers that
    # load a policy at once saw ``device`` still None. Initialize it under a lock, and never return None.
    with _DEVICE_LOCK:
        dev = PartialState().device
    return dev if dev is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _resolve_dtype(dtype, device: torch.device) -> torch.dtype:
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    if str(dtype) not in DTYPES:
        raise PolicyLoadError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    return DTYPES[str(dtype)]


def _resolve_folder(name: str) -> Path:
    """A local folder as is; the bundled policy's name; a hub id through the local cache or a download; anything
    else is 'not found'."""
    path = Path(name).expanduser()
    try:
        if path.is_dir():
            return path.resolve()
    except OSError:  # e.g. a name longer than the file system allows
        raise PolicyLoadError(f"policy not found: {name[:80]!r} is not a usable path") from None
    if name == BUNDLED_POLICY:
        return BUNDLED_POLICY_DIR.resolve()
    if name in KNOWN_MODELS:
        return _known_folder(name)
    looks_like_path = name.startswith((".", "/", "~")) or "\\" in name or ".." in name or name.count("/") > 1
    if path.exists() or looks_like_path or not _HUB_ID.match(name):
        raise PolicyLoadError(f"policy not found: {name!r} is neither a local model folder nor a hub id")
    return _hub_folder(name)


def _is_dir(name: str) -> bool:
    try:
        return Path(name).expanduser().is_dir()
    except OSError:
        return False


def _known_folder(key: str) -> Path:
    """The converted folder of a downloaded known model; 'not downloaded yet' names the command that fetches it."""
    from .known import KNOWN_MODEL_SPECS as REGISTRY, is_downloaded, model_dir

    if not is_downloaded(key):
        raise PolicyLoadError(
            f"{key!r} is a known real model that is not downloaded yet (looked in "
            f"{model_dir(key)}): run `python -m mrtpo_viz get-model {key}` once (about "
            f"{REGISTRY[key].disk_mb} MB on disk; set MRTPO_MODELS_DIR to use another folder)"
        )
    return model_dir(key).resolve()


def _resolve_gguf(name: str) -> Path:
    try:
        file = Path(name).expanduser().resolve(strict=True)
    except (OSError, RuntimeError):  # missing, a link loop, a name longer than the file system allows
        raise PolicyLoadError(f"GGUF file not found: {name[:200]!r}") from None
    if not file.is_file():
        raise PolicyLoadError(f"{file} is not a file (give the .gguf file itself)")
    return file


def _hub_folder(repo_id: str) -> Path:
    from huggingface_hub import constants, snapshot_download

    patterns = ["*.json", "*.safetensors", "*.jinja", "*.txt", "*.model", "*.tiktoken"]
    try:
        return Path(snapshot_download(repo_id, allow_patterns=patterns, local_files_only=True))
    except Exception:  # not in the local cache: only a download can help
        pass
    if constants.HF_HUB_OFFLINE:
        raise PolicyLoadError(f"{repo_id!r}: the Hugging Face hub cannot be reached (offline); give a local folder")
    try:
        return Path(snapshot_download(repo_id, allow_patterns=patterns))
    except Exception as e:
        kind = type(e).__name__
        if "NotFound" in kind or "Repository" in kind:
            raise PolicyLoadError(f"policy not found on the Hugging Face hub: {repo_id!r}") from None
        raise PolicyLoadError(
            f"{repo_id!r}: the Hugging Face hub cannot be reached ({kind}); give a local folder"
        ) from None


def _check_folder(folder: Path) -> dict:
    """Everything that can be said from the folder's files alone, before transformers reads it."""
    cfg_file = folder / "config.json"
    if not cfg_file.is_file():
        raise PolicyLoadError(f"{folder} is not a model folder (no config.json)")
    config = checkpoint_checks.read_json(cfg_file)  # size and depth capped (a 100,000-deep file is refused, not
    # recursed)
    if not isinstance(config, dict):
        raise PolicyLoadError(f"{cfg_file} is not a model configuration (expected a JSON object)")
    if config.get("auto_map"):
        raise PolicyLoadError(
            f"{folder} needs custom code from the checkpoint (auto_map in config.json); "
            "remote code is refused (trust_remote_code=False)"
        )
    if not list(folder.glob("*.safetensors")):
        pickles = [p.name for p in folder.iterdir() if p.suffix in (".bin", ".pt", ".pth", ".ckpt")]
        if pickles:
            raise PolicyLoadError(
                f"{folder} has only pickle weights ({', '.join(sorted(pickles))}); loading them "
                "can run arbitrary code, so they are refused: convert them to safetensors"
            )
        raise PolicyLoadError(f"{folder} has no weights (*.safetensors)")
    checkpoint_checks.check_config(config, cfg_file)
    checkpoint_checks.check_files(folder)
    return config


def _param_count(folder: Path) -> int:
    """Parameters in the folder's safetensors files, read from their headers (no weights are loaded)."""
    from safetensors import safe_open

    n = 0
    for file in folder.glob("*.safetensors"):
        try:
            with safe_open(str(file), framework="pt") as f:
                for name in f.keys():
                    shape = f.get_slice(name).get_shape()
                    n += int(torch.Size(shape).numel())
        except Exception as e:  # safetensors raises its own SafetensorError on a truncated or garbled header
            raise PolicyLoadError(f"{file} is not a readable safetensors file ({e})") from None
    return n


def _check_memory(n_params: int, label: str, device: torch.device, dtype: torch.dtype) -> None:
    need = n_params * torch.empty((), dtype=dtype).element_size() * _MEMORY_HEADROOM
    if device.type == "cuda":
        free = torch.cuda.mem_get_info(device)[0]
    else:
        import psutil

        free = psutil.virtual_memory().available
    if need > free:
        raise PolicyLoadError(
            f"{label} is too large for memory: needs about {need / 2**30:.1f} GiB in "
            f"{str(dtype).removeprefix('torch.')}, {free / 2**30:.1f} GiB available on "
            f"{device.type}"
        )


def _load(folder: Path, name: str, device: torch.device, dtype: torch.dtype) -> Policy:
    """:func:`_build`, with every failure one PolicyLoadError: the checks' own, and whatever a crafted file makes
    transformers, tokenizers or jinja raise (RecursionError, AttributeError, IndexError, UnpicklingError, ...)."""
    try:
        return _build(folder, name, device, dtype)
    except PolicyLoadError:
        raise
    except checkpoint_checks.CheckpointCheckError as e:
        raise PolicyLoadError(str(e)) from None
    except Exception as e:  # noqa: BLE001 -- a crafted checkpoint can make any layer raise anything
        raise PolicyLoadError(f"{folder} cannot be loaded ({type(e).__name__}: {str(e)[:300]})") from None


def _build(folder: Path, name: str, device: torch.device, dtype: torch.dtype) -> Policy:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    _check_folder(folder)
    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=False, local_files_only=True)
    except (ValueError, KeyError, OSError) as e:
        raise PolicyLoadError(f"{folder}: the configuration cannot be read ({e})") from None
    if type(config) not in MODEL_FOR_CAUSAL_LM_MAPPING:
        raise PolicyLoadError(f"{folder} is not a causal language model (model_type {config.model_type!r})")
    described, in_weights = checkpoint_checks.config_param_count(config), _param_count(folder)
    checkpoint_checks.check_param_counts(described, in_weights, folder)
    _check_memory(max(described or 0, in_weights), folder.name, device, dtype)
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, local_files_only=True)
    except Exception as e:  # transformers raises many kinds here; all mean the same to the user
        raise PolicyLoadError(f"{folder} has no usable tokenizer ({type(e).__name__}: {e})") from None
    if isinstance(tokenizer, bool) or not hasattr(tokenizer, "apply_chat_template"):
        raise PolicyLoadError(f"{folder} has no usable tokenizer")
    _prepare_tokenizer(tokenizer)
    checkpoint_checks.check_tokenizer(tokenizer, config, folder)
    model = AutoModelForCausalLM.from_pretrained(
        folder, dtype=dtype, use_safetensors=True, trust_remote_code=False, local_files_only=True
    )
    checkpoint_checks.check_weights(model, folder)
    model.to(device).eval()
    return Policy(model=model, tokenizer=tokenizer, name=name, device=device, dtype=dtype)


def _load_gguf(file: Path, name: str, device: torch.device, dtype: torch.dtype) -> Policy:
    """A policy from one GGUF file: the header's checks, the memory check at the dequantized size, then the load."""
    from .gguf import check_architecture, load_gguf, read_header

    try:
        header = read_header(file)
        check_architecture(file, header)
        _check_memory(header.n_params, file.name, device, dtype)
        model, tokenizer, _ = load_gguf(file, header, dtype)
    except GGUFError as e:
        raise PolicyLoadError(str(e)) from None
    _prepare_tokenizer(tokenizer)
    model.to(device).eval()
    return Policy(model=model, tokenizer=tokenizer, name=name, device=device, dtype=dtype)


def _prepare_tokenizer(tokenizer) -> None:
    """A plain chat template where none is given; padding falls back to eos."""
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = PLAIN_CHAT_TEMPLATE
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token


def clear_cache() -> None:
    """Forget the loaded policies (tests; freeing memory)."""
    with _LOCK:
        _CACHE.clear()
