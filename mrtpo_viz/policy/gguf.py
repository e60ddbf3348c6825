"""GGUF files: the header, loading a model and its tokenizer from one, and converting one to a safetensors folder.

transformers reads GGUF files (dequantizing every tensor to float) with the optional ``gguf`` package
(``pip install 'mrtpo-viz[gguf]'``). Where we depart from a plain ``from_pretrained(folder, gguf_file=name)``:

- **The pre-tokenizer.** transformers builds the tokenizer from the file's metadata and ignores some values of
  ``tokenizer.ggml.pre``; for those in :data:`PRE_TOKENIZERS` (SmolLM2's ``smollm``: every digit on its own, then the
  GPT-2 byte-level regex, as llama.cpp and the original ``tokenizer.json`` do) the original is put back. ASCII digits
  come out the same either way; other numerals after a space (``" ١٢"``) do not.
- **A plain model.** A GGUF-loaded model carries its quantizer and refuses ``save_pretrained``, so a plain model of
  the same class is rebuilt around the same tensors (on the meta device: no random init, no second copy).
- **Checks before the weights.** The magic bytes and the header (memory-mapped, no tensor data read) come first, so a
  garbled file, an architecture transformers cannot read, and the parameter count for the memory check are known
  before anything is dequantized.

No remote code runs (``trust_remote_code=False``) and nothing is downloaded (``local_files_only=True``).
"""

from __future__ import annotations

import copy
import importlib.metadata
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union
from collections.abc import Callable

import torch

GGUF_MAGIC = b"GGUF"
MIN_GGUF_VERSION = "0.10.0"
"""transformers' GGUF loader needs at least this ``gguf`` package."""
GGUF_EXTRA = "pip install 'mrtpo-viz[gguf]'"
"""How to get the optional dependency."""


def _smollm_pre_tokenizer():
    from tokenizers import pre_tokenizers

    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )


PRE_TOKENIZERS: dict[str, Callable] = {"smollm": _smollm_pre_tokenizer}
"""``tokenizer.ggml.pre`` values that transformers' GGUF tokenizer builder does not honour -> the pre-tokenizer to put
back. A new GGUF model should be checked against its original tokenizer, and its value added here if needed."""


class GGUFError(ValueError):
    """A GGUF file that cannot be read or loaded, or the ``gguf`` package is missing; the message says what to do."""


@dataclass(frozen=True)
class GGUFHeader:
    """What a GGUF file says about itself, read without its tensor data."""

    architecture: str
    """``general.architecture``, e.g. ``"llama"``."""
    n_params: int
    """Elements of all its tensors (the parameter count once dequantized)."""
    tensor_types: dict = field(default_factory=dict)
    """Tensor type -> count, e.g. ``{"Q4_1": 210, "F32": 61}``."""
    metadata: dict = field(default_factory=dict)
    """A few ``general.*`` and ``tokenizer.ggml.*`` fields (name, license, pre-tokenizer, ...)."""

    @property
    def pre_tokenizer(self) -> Optional[str]:
        return self.metadata.get("tokenizer.ggml.pre")


def gguf_version() -> Optional[str]:
    """The installed ``gguf`` package's version, or None."""
    try:
        return importlib.metadata.version("gguf")
    except importlib.metadata.PackageNotFoundError:
        return None


def require_gguf(purpose: str) -> None:
    """Raise a :class:`GGUFError` naming the install command unless a recent enough ``gguf`` is installed."""
    from packaging.version import Version

    have = gguf_version()
    if have is not None and Version(have) >= Version(MIN_GGUF_VERSION):
        return
    what = "is not installed" if have is None else f"is too old ({have})"
    raise GGUFError(
        f"{purpose} needs the optional 'gguf' package, which {what} in this Python: run "
        f"`{GGUF_EXTRA}` (or `{sys.executable} -m pip install 'gguf>={MIN_GGUF_VERSION}'`)"
    )


def is_gguf_path(name: Union[str, os.PathLike]) -> bool:
    """Whether ``name`` names a GGUF file by its suffix (it need not exist)."""
    return str(name).lower().endswith(".gguf")


_FIELDS = (
    "general.architecture",
    "general.name",
    "general.organization",
    "general.license",
    "general.size_label",
    "general.finetune",
    "tokenizer.ggml.pre",
    "tokenizer.ggml.model",
)


def read_header(file: Path) -> GGUFHeader:
    """The header of a GGUF file (memory-mapped; no tensor is dequantized).

    Raises:
        GGUFError: not a file, not a GGUF file (magic bytes), ``gguf`` missing, or a truncated or garbled header.
    """
    from collections import Counter

    try:
        with open(file, "rb") as fh:
            magic = fh.read(4)
    except OSError as e:
        raise GGUFError(f"{file} cannot be read ({e.strerror})") from None
    if magic != GGUF_MAGIC:
        raise GGUFError(f"{file} is not a GGUF file (it does not start with the GGUF magic bytes)")
    check_bounds(file)
    require_gguf(f"loading {file.name}")
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(file))
        meta = {}
        for name in _FIELDS:
            value = reader.fields.get(name)
            if value is not None:
                meta[name] = value.contents()
        types = dict(Counter(t.tensor_type.name for t in reader.tensors))
        n = int(sum(int(t.n_elements) for t in reader.tensors))
    except Exception as e:  # gguf raises ValueError, IndexError, struct and numpy errors on a garbled file
        raise GGUFError(f"{file} is not a readable GGUF file ({type(e).__name__}: {e})") from None
    return GGUFHeader(str(meta.get("general.architecture", "")), n, types, meta)


MAX_ARRAY_ITEMS = 2**24
"""Elements of one GGUF metadata array (a 256k-token vocabulary and its merges fit many times over)."""
MAX_STRING_BYTES = 2**24
"""Bytes of one GGUF metadata string (a chat template is a few KB)."""
MAX_ARRAY_NESTING = 4
"""Arrays of arrays in GGUF metadata (real files nest at most once)."""
_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
"""GGUF metadata value type -> size (uint8 .. bool, uint64, int64, float64); 8 is a string, 9 an array."""


def check_bounds(file: Path) -> None:
    """Walk a GGUF file's metadata (key-value pairs and tensor infos) without allocating anything it declares, and
    refuse counts and lengths that exceed the file or the caps: ``gguf``'s reader allocates what the header
    declares, so a 52-byte file declaring a 2^40-element array ran for minutes into gigabytes.

    Raises:
        GGUFError: the header declares more than the file holds or than :data:`MAX_ARRAY_ITEMS` /
            :data:`MAX_STRING_BYTES` / :data:`MAX_ARRAY_NESTING`.
    """
    import mmap
    import struct

    with open(file, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        size, pos = len(buf), [4]

        def take(fmt: str) -> int:
            n = struct.calcsize(fmt)
            if pos[0] + n > size:
                raise GGUFError(f"{file.name} is not a readable GGUF file (its header is cut short)")
            (value,) = struct.unpack_from(fmt, buf, pos[0])
            pos[0] += n
            return value

        def skip(n: int, what: str) -> None:
            if n > size - pos[0]:
                raise GGUFError(
                    f"{file.name} is not a readable GGUF file (its header declares {what} larger than the file)"
                )
            pos[0] += n

        def string() -> None:
            n = take("<Q")
            if n > MAX_STRING_BYTES:
                raise GGUFError(
                    f"{file.name} is not a readable GGUF file (a metadata string declares {n:,} bytes; "
                    f"at most {MAX_STRING_BYTES:,})"
                )
            skip(n, "a string")

        def value(kind: int, depth: int) -> None:
            if kind in _SCALAR_BYTES:
                return skip(_SCALAR_BYTES[kind], "a value")
            if kind == 8:
                return string()
            if kind != 9 or depth >= MAX_ARRAY_NESTING:
                raise GGUFError(
                    f"{file.name} is not a readable GGUF file (metadata value type {kind} unknown or nested too deeply)"
                )
            inner, n = take("<I"), take("<Q")
            if n > MAX_ARRAY_ITEMS:
                raise GGUFError(
                    f"{file.name} is not a readable GGUF file (a metadata array declares {n:,} "
                    f"elements; at most {MAX_ARRAY_ITEMS:,})"
                )
            if inner in _SCALAR_BYTES:
                return skip(n * _SCALAR_BYTES[inner], "an array")
            skip(n * 8, "an array")  # every string or array element takes at least 8 bytes: bound n first
            pos[0] -= n * 8
            for _ in range(n):
                value(inner, depth + 1)

        take("<I")  # version
        n_tensors, n_kv = take("<Q"), take("<Q")
        skip(n_kv * 12, "its key-value count")  # a key (8-byte length) and a type (4 bytes) at least
        skip(n_tensors * 24, "its tensor count")
        pos[0] -= n_kv * 12 + n_tensors * 24
        for _ in range(n_kv):
            string()
            value(take("<I"), 0)
        for _ in range(n_tensors):
            string()
            dims = take("<I")
            if dims > 8:
                raise GGUFError(f"{file.name} is not a readable GGUF file (a tensor declares {dims} dimensions)")
            skip(dims * 8 + 12, "a tensor's shape")


def check_architecture(file: Path, header: GGUFHeader) -> None:
    """Raise a :class:`GGUFError` unless transformers can load this architecture from GGUF."""
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    if header.architecture not in GGUF_SUPPORTED_ARCHITECTURES:
        known = ", ".join(a for a in GGUF_SUPPORTED_ARCHITECTURES if a not in ("general", "tokenizer"))
        raise GGUFError(
            f"{file.name}: transformers cannot load the GGUF architecture {header.architecture!r} (it reads {known})"
        )


def fix_pre_tokenizer(tokenizer, header: GGUFHeader) -> Optional[str]:
    """Put back the pre-tokenizer that transformers' GGUF builder ignored; a note of what changed, or None."""
    build = PRE_TOKENIZERS.get(header.pre_tokenizer or "")
    if build is None:
        return None
    tokenizer.backend_tokenizer.pre_tokenizer = build()
    return (
        f"pre-tokenizer set to the GGUF's {header.pre_tokenizer!r} one (every digit alone, then byte-level BPE); "
        "transformers' GGUF converter ignores tokenizer.ggml.pre"
    )


def plain_model(src, name: str):
    """A plain model of ``src``'s class around ``src``'s tensors (no quantizer, no GGUF config fields)."""
    from transformers import AutoModelForCausalLM

    config = copy.deepcopy(src.config)
    for attr in ("quantization_config", "_model_name_or_path"):  # the GGUF loader's, not the model's
        if attr in config.__dict__:
            delattr(config, attr)
    config._name_or_path = name
    with torch.device("meta"):
        plain = AutoModelForCausalLM.from_config(config, dtype=next(src.parameters()).dtype)
    missing, unexpected = plain.load_state_dict(src.state_dict(), strict=False, assign=True)
    plain.tie_weights()
    for name, buf in src.named_buffers():  # non-persistent buffers (rotary inverse frequencies) are in no state dict
        module, _, attr = name.rpartition(".")
        plain.get_submodule(module)._buffers[attr] = buf
    missing = [m for m in missing if not (config.tie_word_embeddings and m == "lm_head.weight")]
    if missing or unexpected or any(t.is_meta for t in [*plain.parameters(), *plain.buffers()]):
        raise GGUFError(
            f"{name}: the GGUF's tensors do not fit {type(plain).__name__} (missing {missing[:3]}, "
            f"unexpected {unexpected[:3]})"
        )
    plain.generation_config = copy.deepcopy(src.generation_config)
    return plain.eval()


def load_gguf(file: Path, header: GGUFHeader, dtype: torch.dtype, name: Optional[str] = None) -> tuple:
    """``(model, tokenizer, note)`` from a GGUF file: config, tokenizer (pre-tokenizer repaired) and dequantized
    weights, through transformers, as a plain model named ``name`` (default: the file's stem); ``note`` says what
    :func:`fix_pre_tokenizer` changed.

    Raises:
        GGUFError: not a causal LM, or transformers cannot read the configuration, tokenizer or weights.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING
    from transformers.utils import logging as hf_logging

    common = dict(gguf_file=file.name, trust_remote_code=False, local_files_only=True)
    folder = str(file.parent)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        config = _step(file, "configuration", lambda: AutoConfig.from_pretrained(folder, **common))
        if type(config) not in MODEL_FOR_CAUSAL_LM_MAPPING:
            raise GGUFError(f"{file.name} is not a causal language model (model_type {config.model_type!r})")
        tokenizer = _step(file, "tokenizer", lambda: AutoTokenizer.from_pretrained(folder, **common))
        src = _step(file, "weights", lambda: AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, **common))
    finally:
        hf_logging.set_verbosity(verbosity)
    note = fix_pre_tokenizer(tokenizer, header)
    return plain_model(src, name or file.stem), tokenizer, note


def _step(file: Path, what: str, fn: Callable):
    try:
        return fn()
    except GGUFError:
        raise
    except Exception as e:  # transformers raises many kinds here; all mean the same to the user
        raise GGUFError(f"{file.name}: transformers could not read its {what} ({type(e).__name__}: {e})") from None


def save_checked(model, tokenizer, out: Path) -> None:
    """Save ``model`` (safetensors) and ``tokenizer`` to the new folder ``out``, then check the saved folder gives
    exactly the same tensors and the same token ids (probe strings) and chat template."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    out.mkdir(parents=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.model_max_length = int(getattr(model.config, "max_position_embeddings", 0) or tokenizer.model_max_length)
    tokenizer.save_pretrained(out)
    _clean_tokenizer_config(out / "tokenizer_config.json")
    saved = {}
    for f in sorted(out.glob("*.safetensors")):
        saved.update(load_file(str(f)))
    for k, v in model.state_dict().items():
        if k == "lm_head.weight" and k not in saved and model.config.tie_word_embeddings:
            continue  # tied: saved once, as the embedding
        if k not in saved or not torch.equal(saved[k], v):
            raise GGUFError(f"{out}: tensor {k} was not saved exactly")
    again = AutoTokenizer.from_pretrained(out, trust_remote_code=False, local_files_only=True)
    probe = [
        "Hello, world! 1234 x\u00b2\u00b3 \u0661\u0662 caf\u00e9  \n\n<|im_start|>user\nHi<|im_end|>\n",
        '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call> SELECT * FROM t;',
    ]
    ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in probe]
    if [
        again(p, add_special_tokens=False)["input_ids"] for p in probe
    ] != ids or again.chat_template != tokenizer.chat_template:
        raise GGUFError(f"{out}: the saved tokenizer does not tokenize like the converted one")


def _clean_tokenizer_config(path: Path) -> None:
    """Drop the load-time options that ``save_pretrained`` writes back (``local_files_only``, ``gguf_file``, ...)."""
    import json

    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        for k in ("local_files_only", "is_local", "gguf_file"):
            data.pop(k, None)
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
