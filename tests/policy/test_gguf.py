"""GGUF files: ``load_policy("x.gguf")`` gives the model it was written from (same logits, same ids), the pre-tokenizer
repair, and every way a GGUF file can be unusable as one readable PolicyLoadError (the same rules as a folder)."""

import shutil

import pytest
import torch

from mrtpo_viz.policy import gguf as gguf_mod
from mrtpo_viz.policy.gguf import PRE_TOKENIZERS, GGUFError, is_gguf_path, read_header
from mrtpo_viz.policy.loading import PolicyLoadError, load_policy

from .gguf_files import need_gguf, write_gguf

torch.set_num_threads(1)


def test_gguf_policy_is_the_model_it_was_written_from(tiny_gguf, tiny_policy):
    pol = load_policy(tiny_gguf, device="cpu", dtype="float32")
    assert load_policy(str(tiny_gguf), device="cpu", dtype="float32") is pol  # cached like a folder
    assert pol.n_params == tiny_policy.n_params and pol.name == str(tiny_gguf)
    assert not hasattr(pol.model, "hf_quantizer") or pol.model.hf_quantizer is None  # a plain model
    msgs = [{"role": "user", "content": "What is the weather in Oslo? Use the tool."}]
    ids = pol.chat_ids(msgs)
    assert ids == tiny_policy.chat_ids(msgs)  # same chat template, same ids (no digits: the pre-tokenizers agree)
    with torch.no_grad():
        a = pol.model(input_ids=torch.tensor([ids])).logits
        b = tiny_policy.model(input_ids=torch.tensor([ids])).logits
    assert torch.equal(a, b)  # F32 tensors go through unchanged (the q/k row permutation is undone exactly)
    assert pol.generate(msgs, max_new_tokens=8, seed=1) == tiny_policy.generate(msgs, max_new_tokens=8, seed=1)


def test_the_smollm_pre_tokenizer_is_put_back(tiny_gguf, tiny_policy):
    """transformers' GGUF builder ignores tokenizer.ggml.pre = 'smollm' (every digit alone, then byte-level)."""
    pol = load_policy(tiny_gguf, device="cpu", dtype="float32")
    split = pol.tokenizer.convert_ids_to_tokens(pol.tokenizer(" 123", add_special_tokens=False)["input_ids"])
    plain = tiny_policy.tokenizer.convert_ids_to_tokens(
        tiny_policy.tokenizer(" 123", add_special_tokens=False)["input_ids"]
    )
    assert split == ["\u0120", "1", "2", "3"] and plain == ["\u0120" + "12", "3"]
    assert set(PRE_TOKENIZERS) == {"smollm"}


def test_another_pre_tokenizer_is_left_as_transformers_builds_it(tiny_policy_dir, tmp_path):
    need_gguf()
    file = write_gguf(tiny_policy_dir, tmp_path / "gpt2pre.gguf", pre="gpt-2")
    header = read_header(file)
    assert header.pre_tokenizer == "gpt-2" and header.architecture == "llama"
    assert header.tensor_types == {"F32": 21} and header.n_params > 0
    pol = load_policy(file, device="cpu")
    assert pol.tokenizer.convert_ids_to_tokens(pol.tokenizer(" 123", add_special_tokens=False)["input_ids"]) == [
        "\u0120" + "12",
        "3",
    ]


def test_header_counts_the_parameters(tiny_gguf, tiny_policy):
    header = read_header(tiny_gguf)
    assert header.n_params == tiny_policy.n_params
    assert header.metadata["general.name"] == "tiny-test" and header.pre_tokenizer == "smollm"


@pytest.mark.parametrize("name,ok", [("m.gguf", True), ("M.GGUF", True), ("m.gguf.bin", False), ("folder", False)])
def test_is_gguf_path(name, ok):
    assert is_gguf_path(name) is ok


def test_missing_and_not_a_file(tmp_path):
    with pytest.raises(PolicyLoadError, match="GGUF file not found"):
        load_policy(tmp_path / "nope.gguf", device="cpu")
    (tmp_path / "dir.gguf").mkdir()  # a folder with that name is a folder: no config.json
    with pytest.raises(PolicyLoadError, match="not a model folder"):
        load_policy(tmp_path / "dir.gguf", device="cpu")


def test_not_a_gguf_file(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 definitely a zip, not a GGUF")
    with pytest.raises(PolicyLoadError, match="not a GGUF file .*magic bytes"):
        load_policy(fake, device="cpu")


def test_truncated_gguf(tiny_gguf, tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_gguf.read_bytes()[:5000])
    with pytest.raises(PolicyLoadError, match="not a readable GGUF file"):
        load_policy(cut, device="cpu")


def test_unsupported_architecture(tiny_policy_dir, tmp_path):
    need_gguf()
    file = write_gguf(tiny_policy_dir, tmp_path / "odd.gguf", arch="bert")
    with pytest.raises(PolicyLoadError, match="cannot load the GGUF architecture 'bert'"):
        load_policy(file, device="cpu")


def test_too_large_for_memory(tiny_gguf, tmp_path, monkeypatch):
    from collections import namedtuple

    import psutil

    big = shutil.copy(tiny_gguf, tmp_path / "big.gguf")
    monkeypatch.setattr(psutil, "virtual_memory", lambda: namedtuple("memory", "available")(available=1000))
    with pytest.raises(PolicyLoadError, match="big.gguf is too large for memory"):
        load_policy(big, device="cpu")


def test_without_the_gguf_package_the_error_names_the_extra(tmp_path, monkeypatch):
    """Runs with or without gguf installed: the version lookup is what decides."""
    file = tmp_path / "m.gguf"
    file.write_bytes(b"GGUF" + b"\0" * 64)
    monkeypatch.setattr(gguf_mod, "gguf_version", lambda: None)
    with pytest.raises(
        PolicyLoadError,
        match=r"needs the optional 'gguf' package, which is not installed.*"
        r"pip install 'mrtpo-viz\[gguf\]'",
    ):
        load_policy(file, device="cpu")
    monkeypatch.setattr(gguf_mod, "gguf_version", lambda: "0.9.0")
    with pytest.raises(GGUFError, match=r"is too old \(0.9.0\)"):
        gguf_mod.require_gguf("x")


def test_allow_list_admits_a_gguf_file_under_an_allowed_folder(tiny_gguf, tmp_path):
    from mrtpo_viz.settings import get_settings, load_allowed_policy

    allowed = get_settings({"MRTPO_ALLOWED_CHECKPOINTS": str(tiny_gguf.parent)})
    assert allowed.checkpoint_allowed(tiny_gguf)
    assert load_allowed_policy(tiny_gguf, device="cpu", dtype="float32", settings=allowed).n_params > 0
    elsewhere = shutil.copy(tiny_gguf, tmp_path / "other.gguf")
    assert not allowed.checkpoint_allowed(elsewhere)
    assert not allowed.checkpoint_allowed(tiny_gguf.parent / ".." / tmp_path.name / "other.gguf")
    with pytest.raises(PolicyLoadError, match="not allowed here"):
        load_allowed_policy(elsewhere, device="cpu", settings=allowed)
