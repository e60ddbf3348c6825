"""Crafted checkpoints: a crafted checkpoint is checked before anything is built, and every failure is one
PolicyLoadError (the CLI prints one line, no traceback).

A memory pre-check that counts only the weights file, a template first run at the first replay, and errors left
to whatever the layer below raises are what these cases attack. Each case says what happens unchecked.
"""

import json
import shutil
from pathlib import Path

import pytest
import torch

from mrtpo_viz.cli import main as cli_main
from mrtpo_viz.policy import PolicyLoadError, load_policy

pytestmark = pytest.mark.usefixtures("sample_data_unchanged")


def _config(folder: Path, **change):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))


def _template(folder: Path, text: str):
    (folder / "chat_template.jinja").write_text(text)


def _index(folder: Path, target: str):
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": {"model.embed_tokens.weight": target}})
    )


def _nan_weight(folder: Path):
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    name = sorted(weights)[0]
    weights[name][0, 0] = float("nan")
    save_file(weights, folder / "model.safetensors")


CRAFTED = {
    # unchecked: builds 100,000 layers from a tiny weights file (4.1 GB and still building after 9 minutes; stopped)
    "layers_100k": (
        lambda f: _config(f, num_hidden_layers=100_000),
        "num_hidden_layers is 100000; it must be a whole number from 0 to 256",
    ),
    # unchecked: builds 200 layers, all but 2 of them random (loads without a word)
    "config_bigger_than_weights": (lambda f: _config(f, num_hidden_layers=200), "the config does not fit the weights"),
    # unchecked: RecursionError from Python's JSON parser
    "deep_config": (
        lambda f: (f / "config.json").write_text('{"a": ' * 100_000 + "1" + "}" * 100_000),
        "nested more than 32 levels deep",
    ),
    # unchecked: AttributeError from transformers (torch has no attribute 'os.system')
    "dtype_not_a_dtype": (lambda f: _config(f, dtype="os.system"), "dtype is 'os.system', not a torch dtype"),
    "dtype_an_object": (lambda f: _config(f, torch_dtype={"evil": 1}), "torch_dtype is \"{'evil': 1}\", not a torch"),
    # unchecked: these load (transformers prefers model.safetensors), and an index alone leads to an
    # UnpicklingError
    "index_outside": (
        lambda f: _index(f, "../../../etc/passwd.safetensors"),
        "must be .safetensors files in the checkpoint folder",
    ),
    "index_pickle": (
        lambda f: (_index(f, "pytorch_model.bin"), torch.save({}, f / "pytorch_model.bin")),
        "must be .safetensors files in the checkpoint folder",
    ),
    # unchecked: a 2,000,000-row embedding is built, then transformers' RuntimeError (ignore_mismatched_sizes)
    "vocab_2m": (lambda f: _config(f, vocab_size=2_000_000), "vocab_size is 2000000; it must be a whole number"),
    # unchecked: these templates load; the first replay then hangs (loops), takes 10 GB ('x' * 10**10) or raises a
    # jinja TemplateError
    "template_nested_loops": (
        lambda f: _template(f, "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
        "time budget",
    ),
    "template_huge_string": (lambda f: _template(f, "{{ 'x' * 10**10 }}"), "multiplies a string or list"),
    "template_raises": (lambda f: _template(f, "{{ raise_exception('no such role') }}"), "no such role"),
    "template_syntax": (lambda f: _template(f, "{% for m in messages %}"), "does not compile"),
    # unchecked: loads, and every forward gives NaN
    "nan_weights": (_nan_weight, "holds NaN or infinite values; this checkpoint cannot be used"),
}


@pytest.fixture
def crafted(tiny_policy_dir, tmp_path):
    def make(kind: str) -> Path:
        folder = tmp_path / kind
        shutil.copytree(tiny_policy_dir, folder)
        CRAFTED[kind][0](folder)
        return folder

    return make


@pytest.mark.parametrize("kind", list(CRAFTED))
def test_a_crafted_checkpoint_is_one_policy_load_error(kind, crafted):
    folder = crafted(kind)
    with pytest.raises(PolicyLoadError) as err:
        load_policy(folder, device="cpu", dtype="float32")
    assert CRAFTED[kind][1] in str(err.value)


@pytest.mark.parametrize("kind", ["deep_config", "dtype_not_a_dtype", "index_pickle", "template_raises"])
def test_the_cli_prints_one_line_for_a_crafted_checkpoint(kind, crafted, capsys):
    """Unchecked, these print a Python traceback (RecursionError, AttributeError, UnpicklingError; the template's
    error at the replay)."""
    folder = crafted(kind)
    assert cli_main(["replay", "--task", "tool_calling", "--checkpoint", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and CRAFTED[kind][1] in err and "Traceback" not in err
