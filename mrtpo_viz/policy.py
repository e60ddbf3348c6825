"""Load a policy (a causal language model and its tokenizer) and sample from it.

``load_policy`` takes a local folder or a Hugging Face hub id. It loads safetensors only and never runs remote code;
every way a checkpoint can be unusable ends in a :class:`PolicyLoadError` that says what is wrong, before any
weights are read. Loaded policies are cached per process by (resolved path, device, dtype).

``Policy.generate`` / ``Policy.generate_group`` sample with a hand-written loop (one prompt pass, the KV cache
expanded to the G rows without copying, then one token per step) so that the exact generated ids come back.
"""
from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import torch

from .kvcache import expand_cache, forward
from .malloc import bound_freed_memory
from .tasks import Example

PLAIN_CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}{{ m['content'] }}\n\n"
    "{% elif m['role'] == 'user' %}User: {{ m['content'] }}\n"
    "{% else %}Assistant: {{ m['content'] }}\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}Assistant: {% endif %}"
)
"""The fallback chat template for tokenizers that have none: ``System\\n\\nUser: ...\\nAssistant: ``."""

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
    "float16": torch.float16, "fp16": torch.float16,
}
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")
_MEMORY_HEADROOM = 1.3  # activations, tokenizer and Python overhead on top of the parameter bytes
_CACHE: dict[tuple[str, str, str], "Policy"] = {}
_LOCK = threading.Lock()


class PolicyLoadError(ValueError):
    """A checkpoint that cannot (or must not) be loaded; the message says why and what to do."""


@dataclass(frozen=True)
class Completion:
    """One sampled response."""

    text: str
    """Decoded response text (special tokens skipped)."""
    token_ids: list[int]
    """The exact generated ids, without the end-of-sequence token and padding."""
    prompt_ids: list[int] = field(default_factory=list)
    """The prompt ids the response continues (chat template with the generation prompt)."""


PromptLike = Union[Example, str, list]


@dataclass
class Policy:
    """A loaded causal LM with its tokenizer."""

    model: Any
    tokenizer: Any
    name: str
    device: torch.device
    dtype: torch.dtype

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def describe(self) -> str:
        """E.g. ``"1.0M params, float32, cpu"``."""
        n = self.n_params
        size = f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.1f}M"
        return f"{size} params, {str(self.dtype).removeprefix('torch.')}, {self.device.type}"

    def chat_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """Prompt ids of ``messages`` rendered with the chat template and the generation prompt (assistant header)."""
        text = self.render(messages)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def render(self, messages: list[dict[str, str]]) -> str:
        """The chat template as text, ending with the generation prompt."""
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def generate(self, example_or_prompt: PromptLike, *, max_new_tokens: int = 128, temperature: float = 1.0,
                 top_p: float = 1.0, seed: Optional[int] = None, infos: Optional[Sequence[tuple[str, str]]] = None,
                 info_position: str = "user_end") -> Completion:
        """Sample one response (``temperature=0`` is greedy). ``infos``: optional ``(title, info)`` blocks."""
        return self.generate_group(example_or_prompt, 1, max_new_tokens=max_new_tokens, temperature=temperature,
                                   top_p=top_p, seed=seed, infos=infos, info_position=info_position)[0]

    def generate_group(self, example_or_prompt: PromptLike, G: int, *, max_new_tokens: int = 128,
                       temperature: float = 1.0, top_p: float = 1.0, seed: Optional[int] = None,
                       infos: Optional[Sequence[tuple[str, str]]] = None,
                       info_position: str = "user_end", return_prompt_cache: bool = False):
        """Sample ``G`` responses to one prompt in one batch; each row stops at its own end-of-sequence token.

        Returns ``G`` completions; with ``return_prompt_cache``, ``(completions, the prompt's KV cache)`` (see
        :func:`mrtpo_viz.sampling.sample_group`)."""
        from .contexts import with_info
        from .sampling import sample_group

        messages = with_info(as_messages(example_or_prompt), infos or (), info_position)
        prompt_ids = self.chat_ids(messages)
        rows, cache = sample_group(self, prompt_ids, G, max_new_tokens=max_new_tokens, temperature=temperature,
                                   top_p=top_p, seed=seed, return_prompt_cache=True)
        group = [Completion(self.tokenizer.decode(ids, skip_special_tokens=True), ids, list(prompt_ids))
                 for ids in rows]
        return (group, cache) if return_prompt_cache else group

    def stop_ids(self) -> set[int]:
        """Token ids that end a response: the tokenizer's eos and the config's eos id(s)."""
        ids = {self.tokenizer.eos_token_id}
        cfg = self.model.generation_config.eos_token_id if self.model.generation_config else None
        ids.update(cfg if isinstance(cfg, (list, tuple)) else [cfg])
        return {i for i in ids if i is not None}


def as_messages(example_or_prompt: PromptLike) -> list[dict[str, str]]:
    """An Example, a user string, or a list of chat messages -> chat messages."""
    if isinstance(example_or_prompt, Example):
        return example_or_prompt.messages()
    if isinstance(example_or_prompt, str):
        return [{"role": "user", "content": example_or_prompt}]
    if isinstance(example_or_prompt, list) and all(isinstance(m, dict) and "role" in m for m in example_or_prompt):
        return [dict(m) for m in example_or_prompt]
    raise ValueError("the prompt must be an Example, a string, or a list of {'role', 'content'} messages")


# --- loading -------------------------------------------------------------------------------------------------------

def load_policy(name_or_path: Union[str, os.PathLike], *, device: Union[str, torch.device, None] = None,
                dtype: Union[str, torch.dtype, None] = None, threads: Optional[int] = None) -> Policy:
    """Load (once per process) a causal LM and its tokenizer from a local folder or a hub id.

    Args:
        name_or_path: a local checkpoint folder or a hub id (``owner/name``).
        device: ``"cpu"``, ``"cuda"``, ... (default: accelerate's device for this process).
        dtype: ``"float32"``, ``"bfloat16"``, ... (default: bfloat16 on CUDA, float32 elsewhere).
        threads: torch CPU threads to use (default: leave torch's setting).
    Raises:
        PolicyLoadError: not found, not a model, not a causal LM, no tokenizer, pickle weights only, remote code
            required, hub unreachable, too large for the available memory, or not on the operator's allow-list.
    """
    from .settings import get_settings

    try:
        get_settings().check_checkpoint(name_or_path)  # the operator's allow-list (MRTPO_ALLOWED_CHECKPOINTS)
    except ValueError as e:
        raise PolicyLoadError(str(e)) from None
    if threads is not None:
        torch.set_num_threads(int(threads))
    bound_freed_memory()  # the replay's freed metric temporaries go back to the OS (see mrtpo_viz/malloc.py)
    dev = _resolve_device(device)
    dt = _resolve_dtype(dtype, dev)
    folder = _resolve_folder(str(name_or_path))
    key = (str(folder), str(dev), str(dt))
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = _load(folder, str(name_or_path), dev, dt)
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
    """A local folder as is; a hub id through the local cache or a download; anything else is 'not found'."""
    path = Path(name).expanduser()
    try:
        if path.is_dir():
            return path.resolve()
    except OSError:  # e.g. a name longer than the file system allows
        raise PolicyLoadError(f"policy not found: {name[:80]!r} is not a usable path") from None
    looks_like_path = name.startswith((".", "/", "~")) or "\\" in name or ".." in name or name.count("/") > 1
    if path.exists() or looks_like_path or not _HUB_ID.match(name):
        raise PolicyLoadError(f"policy not found: {name!r} is neither a local model folder nor a hub id")
    return _hub_folder(name)


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
        raise PolicyLoadError(f"{repo_id!r}: the Hugging Face hub cannot be reached ({kind}); "
                              "give a local folder") from None


def _check_folder(folder: Path) -> dict:
    """Everything that can be said from the folder's files alone, before transformers reads it."""
    cfg_file = folder / "config.json"
    if not cfg_file.is_file():
        raise PolicyLoadError(f"{folder} is not a model folder (no config.json)")
    try:
        config = json.loads(cfg_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PolicyLoadError(f"{cfg_file} is not valid JSON ({e})") from None
    if not isinstance(config, dict):
        raise PolicyLoadError(f"{cfg_file} is not a model configuration (expected a JSON object)")
    if config.get("auto_map"):
        raise PolicyLoadError(f"{folder} needs custom code from the checkpoint (auto_map in config.json); "
                              "remote code is refused (trust_remote_code=False)")
    if not list(folder.glob("*.safetensors")):
        pickles = [p.name for p in folder.iterdir() if p.suffix in (".bin", ".pt", ".pth", ".ckpt")]
        if pickles:
            raise PolicyLoadError(f"{folder} has only pickle weights ({', '.join(sorted(pickles))}); loading them "
                                  "can run arbitrary code, so they are refused: convert them to safetensors")
        raise PolicyLoadError(f"{folder} has no weights (*.safetensors)")
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


def _check_memory(folder: Path, device: torch.device, dtype: torch.dtype) -> None:
    need = _param_count(folder) * torch.empty((), dtype=dtype).element_size() * _MEMORY_HEADROOM
    if device.type == "cuda":
        free = torch.cuda.mem_get_info(device)[0]
    else:
        import psutil

        free = psutil.virtual_memory().available
    if need > free:
        raise PolicyLoadError(f"{folder.name} is too large for memory: needs about {need / 2**30:.1f} GiB in "
                              f"{str(dtype).removeprefix('torch.')}, {free / 2**30:.1f} GiB available on "
                              f"{device.type}")


def _load(folder: Path, name: str, device: torch.device, dtype: torch.dtype) -> Policy:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    _check_folder(folder)
    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=False, local_files_only=True)
    except (ValueError, KeyError, OSError) as e:
        raise PolicyLoadError(f"{folder}: the configuration cannot be read ({e})") from None
    if type(config) not in MODEL_FOR_CAUSAL_LM_MAPPING:
        raise PolicyLoadError(f"{folder} is not a causal language model (model_type {config.model_type!r})")
    _check_memory(folder, device, dtype)
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, local_files_only=True)
    except Exception as e:  # transformers raises many kinds here; all mean the same to the user
        raise PolicyLoadError(f"{folder} has no usable tokenizer ({type(e).__name__}: {e})") from None
    if isinstance(tokenizer, bool) or not hasattr(tokenizer, "apply_chat_template"):
        raise PolicyLoadError(f"{folder} has no usable tokenizer")
    _prepare_tokenizer(tokenizer)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, use_safetensors=True,
                                                 trust_remote_code=False, local_files_only=True)
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
