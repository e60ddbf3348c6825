"""The checks of a checkpoint folder, one by one (their effect through load_policy: tests/hostile)."""

import json

import pytest
import torch

from mrtpo_viz.policy.checkpoint_checks import (
    MAX_JSON_DEPTH,
    CheckpointCheckError,
    check_config,
    check_index,
    check_param_counts,
    check_weights,
    config_param_count,
    read_json,
)


def test_read_json_caps_size_and_depth(tmp_path):
    ok, big, deep, broken = (tmp_path / n for n in ("ok.json", "big.json", "deep.json", "broken.json"))
    ok.write_text(json.dumps({"a": [1, {"b": 2}]}))
    big.write_text(json.dumps({"a": "x" * 2000}))
    deep.write_text("[" * 5000 + "]" * 5000)
    broken.write_text("{nope")
    assert read_json(ok) == {"a": [1, {"b": 2}]}
    with pytest.raises(CheckpointCheckError, match="at most 0.000953674 MiB"):
        read_json(big, max_bytes=1000)
    with pytest.raises(CheckpointCheckError, match=f"nested more than {MAX_JSON_DEPTH} levels"):
        read_json(deep)
    with pytest.raises(CheckpointCheckError, match="is not valid JSON"):
        read_json(broken)


@pytest.mark.parametrize(
    "config, says",
    [
        ({"num_hidden_layers": 100_000}, "num_hidden_layers is 100000"),
        ({"hidden_size": 64.5}, "hidden_size is 64.5; it must be a whole number"),
        ({"vocab_size": True}, "vocab_size is True"),
        ({"text_config": {"num_attention_heads": -1}}, "text_config.num_attention_heads is -1"),
        ({"dtype": "os.system"}, "not a torch dtype"),
        ({"torch_dtype": ["float32"]}, "not a torch dtype"),
    ],
)
def test_check_config_refuses_sizes_and_dtypes(config, says, tmp_path):
    with pytest.raises(CheckpointCheckError, match=says):
        check_config(config, tmp_path / "config.json")


def test_check_config_accepts_a_real_shape(tmp_path):
    check_config(
        {
            "num_hidden_layers": 24,
            "hidden_size": 896,
            "vocab_size": 151_936,
            "dtype": "bfloat16",
            "torch_dtype": None,
            "rope_parameters": {"rope_theta": 1e6},
        },
        tmp_path / "config.json",
    )


def test_check_index_keeps_entries_inside_the_folder(tmp_path):
    (tmp_path / "a.safetensors").write_bytes(b"")
    index = tmp_path / "model.safetensors.index.json"
    for target, ok in [
        ("a.safetensors", True),
        ("../a.safetensors", False),
        ("/etc/a.safetensors", False),
        ("pytorch_model.bin", False),
        ("missing.safetensors", False),
    ]:
        index.write_text(json.dumps({"weight_map": {"w": target}}))
        if ok:
            check_index(tmp_path)
        else:
            with pytest.raises(CheckpointCheckError):
                check_index(tmp_path)


def test_param_counts_on_the_meta_device(tiny_policy):
    described = config_param_count(tiny_policy.model.config)
    assert described == sum(p.numel() for p in tiny_policy.model.parameters())
    check_param_counts(described, described, tiny_policy.model.config)  # what the weights hold
    with pytest.raises(CheckpointCheckError, match="does not fit the weights"):
        check_param_counts(100 * described, described, "folder")


def test_check_weights_finds_a_nan():
    layer = torch.nn.Linear(3, 2)
    check_weights(layer, "f")
    with torch.no_grad():
        layer.bias[1] = float("inf")
    with pytest.raises(CheckpointCheckError, match="the weight bias holds NaN or infinite values"):
        check_weights(layer, "f")
