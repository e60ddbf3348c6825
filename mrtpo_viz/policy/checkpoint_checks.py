"""Checks of a checkpoint folder before anything is built from it: a downloaded or typed checkpoint is untrusted.

Each raises :class:`~.loading.PolicyLoadError`'s base, ``ValueError`` subclass :class:`CheckpointCheckError`,
which ``load_policy`` turns into its one error type. What they stop (each seen in a hostile probe):

- JSON files too large or nested too deep (a 100,000-deep ``config.json`` made Python's parser raise
  RecursionError): :func:`read_json` caps bytes, parses, and measures the depth without recursion;
- a configuration whose numbers build a model out of proportion (100,000 layers from a 100 kB weights file hung
  the build) or whose ``dtype`` is not a dtype: :func:`check_config` caps sizes and types, and
  :func:`config_param_count` counts the parameters the config describes on the meta device (no memory), so the
  memory check and the comparison with the weights use the larger of the two counts;
- a safetensors index whose entries point outside the folder or at a pickle file: :func:`check_index`;
- a vocabulary of millions of entries or larger than the embedding, a chat template that does not render a plain
  conversation (errors that would otherwise appear at the first replay): :func:`check_tokenizer`;
- NaN or infinite weights: :func:`check_weights`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from ..guards import nesting_depth

MAX_JSON_BYTES = 16 * 2**20
"""Largest JSON file read (config, tokenizer config, index); ``tokenizer.json`` may be larger."""
MAX_TOKENIZER_BYTES = 128 * 2**20
"""Largest ``tokenizer.json`` (a 262k-entry vocabulary is about 33 MB)."""
MAX_JSON_DEPTH = 32
"""Deepest nesting of lists and objects in a JSON file."""
MAX_TEMPLATE_FILE_BYTES = 256 * 2**10
"""Largest ``chat_template.jinja`` file (the template itself is capped in characters by :mod:`.template_sandbox`)."""
MAX_VOCAB = 1_048_576
"""Largest vocabulary (the largest real ones have about 262,000 entries)."""
SIZE_CAPS = {
    "num_hidden_layers": 256,
    "n_layer": 256,
    "num_layers": 256,
    "hidden_size": 65_536,
    "n_embd": 65_536,
    "intermediate_size": 262_144,
    "num_attention_heads": 1024,
    "n_head": 1024,
    "num_key_value_heads": 1024,
    "head_dim": 4096,
    "vocab_size": MAX_VOCAB,
    "max_position_embeddings": 4_194_304,
    "n_positions": 4_194_304,
    "num_experts": 1024,
    "num_local_experts": 1024,
    "num_experts_per_tok": 1024,
    "moe_intermediate_size": 262_144,
}
"""Configuration fields that size the model, and their largest accepted values (the largest real models are
well inside: 126 layers, hidden 16,384)."""
PARAM_SLACK = 1.05
"""How many more parameters than the weights hold a config may describe (rounding, small buffers)."""


class CheckpointCheckError(ValueError):
    """A checkpoint file that must not be built from; the message says which file and why."""


def read_json(path: Path, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """A JSON file's value, refused when larger than ``max_bytes``, not UTF-8 JSON, or nested too deep."""
    size = path.stat().st_size
    if size > max_bytes:
        raise CheckpointCheckError(f"{path} is {size / 2**20:.1f} MiB; at most {max_bytes / 2**20:g} MiB")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointCheckError(f"{path} is not valid JSON ({e})") from None
    except RecursionError:
        raise CheckpointCheckError(f"{path} is nested more than {MAX_JSON_DEPTH} levels deep") from None
    if nesting_depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise CheckpointCheckError(f"{path} is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def check_files(folder: Path) -> None:
    """Sizes, depth and syntax of the folder's JSON and template files (before transformers reads them)."""
    for name in (
        "tokenizer_config.json",
        "generation_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "chat_template.json",
    ):
        if (folder / name).is_file():
            read_json(folder / name)
    if (folder / "tokenizer.json").is_file():
        size = (folder / "tokenizer.json").stat().st_size
        if size > MAX_TOKENIZER_BYTES:
            raise CheckpointCheckError(
                f"{folder / 'tokenizer.json'} is {size / 2**20:.0f} MiB; at most {MAX_TOKENIZER_BYTES / 2**20:g} MiB"
            )
    for template in folder.glob("*.jinja"):
        if template.stat().st_size > MAX_TEMPLATE_FILE_BYTES:
            raise CheckpointCheckError(f"{template} is larger than {MAX_TEMPLATE_FILE_BYTES // 1024} KiB")
    check_index(folder)


def check_index(folder: Path) -> None:
    """Every safetensors index entry names a ``.safetensors`` file inside the folder (no path, no pickle)."""
    for index in folder.glob("*.index.json"):
        content = read_json(index)
        weight_map = content.get("weight_map") if isinstance(content, dict) else None
        if not isinstance(weight_map, dict):
            raise CheckpointCheckError(f"{index} has no weight_map object")
        for name, file in weight_map.items():
            plain = isinstance(file, str) and Path(file).name == file and not file.startswith(".")
            if not plain or not file.endswith(".safetensors"):
                raise CheckpointCheckError(
                    f"{index} maps {str(name)[:60]!r} to {str(file)[:80]!r}: index entries "
                    "must be .safetensors files in the checkpoint folder"
                )
            if not (folder / file).is_file():
                raise CheckpointCheckError(f"{index} maps {str(name)[:60]!r} to {file!r}, which is not in {folder}")


def _dtype_ok(value: Any) -> bool:
    import torch

    return (
        value is None
        or value == "auto"
        or (isinstance(value, str) and isinstance(getattr(torch, value, None), torch.dtype))
    )


def check_config(config: dict, path: Path) -> None:
    """Sizes (``SIZE_CAPS``) must be whole numbers within their caps and ``dtype`` a torch dtype name, in the
    config and in its nested sub-configs (``text_config``, ...)."""
    stack = [("", config)]
    while stack:
        prefix, cfg = stack.pop()
        for key, value in cfg.items():
            if key in ("dtype", "torch_dtype") and not _dtype_ok(value):
                raise CheckpointCheckError(
                    f"{path}: {prefix}{key} is {str(value)[:40]!r}, not a torch dtype (float32, bfloat16, float16, ...)"
                )
            if isinstance(value, dict):
                stack.append((f"{prefix}{key}.", value))
            elif (
                key in SIZE_CAPS
                and value is not None
                and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SIZE_CAPS[key])
            ):
                raise CheckpointCheckError(
                    f"{path}: {prefix}{key} is {str(value)[:40]}; it must be a whole number "
                    f"from 0 to {SIZE_CAPS[key]:,}"
                )


def config_param_count(config) -> Optional[int]:
    """Parameters of the model the (transformers) config describes, counted on the meta device (no memory); None
    where the meta device cannot build it (a quantized config, say: the sizes were capped by :func:`check_config`)."""
    import torch
    from transformers import AutoModelForCausalLM

    try:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
    except Exception:  # noqa: BLE001 -- the real build reports what is wrong; this is only an estimate
        return None
    return sum(p.numel() for p in model.parameters())


def check_param_counts(described: Optional[int], in_weights: int, folder: Path) -> None:
    """The config must not describe many more parameters than the weights hold (they would be random)."""
    if described is not None and described > in_weights * PARAM_SLACK + 1024:
        raise CheckpointCheckError(
            f"{folder}/config.json describes a model of {described:,} parameters but the "
            f"weights hold {in_weights:,}: the config does not fit the weights"
        )


def check_tokenizer(tokenizer, config, folder: Path) -> None:
    """Vocabulary size (at most ``MAX_VOCAB`` and the embedding's rows) and a chat template that renders."""
    from . import template_sandbox

    n = len(tokenizer)
    rows = getattr(config, "vocab_size", None)
    if n > MAX_VOCAB:
        raise CheckpointCheckError(f"{folder}: the tokenizer has {n:,} entries; at most {MAX_VOCAB:,}")
    if isinstance(rows, int) and n > rows:
        raise CheckpointCheckError(
            f"{folder}: the tokenizer has {n:,} entries but the model's embedding only "
            f"{rows:,} rows: its ids would index past the embedding"
        )
    source = tokenizer.chat_template
    source = source.get("default", "") if isinstance(source, dict) else source
    try:
        template_sandbox.render(
            source, [{"role": "user", "content": "Hello."}], add_generation_prompt=True, **tokenizer.special_tokens_map
        )
    except template_sandbox.TemplateLimitError as e:
        raise CheckpointCheckError(
            f"{folder}: the chat template cannot render a one-message conversation: {e}"
        ) from None


def check_weights(model, folder: Path) -> None:
    """Every weight finite (a NaN or inf one poisons every forward)."""
    import torch

    for name, p in model.named_parameters():
        if p.is_floating_point() and not bool(torch.isfinite(p).all()):
            raise CheckpointCheckError(
                f"{folder}: the weight {name} holds NaN or infinite values; this checkpoint "
                "cannot be used (retrain it, or load an earlier checkpoint)"
            )
