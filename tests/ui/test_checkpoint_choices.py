"""The app's checkpoint picker: the default, the bundled policy, then the downloaded real models (those the
operator's allow-list admits), then the allow-list."""

import json

import pytest

from mrtpo_viz.policy import known
from mrtpo_viz.ui.policy_choice import checkpoint_choices

KEY = "smollm2-135m-instruct"


@pytest.fixture
def models(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_MODELS_DIR", str(tmp_path / "models"))
    for var in ("MRTPO_ALLOWED_CHECKPOINTS", "MRTPO_CHECKPOINT"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "models"


def _downloaded(models, sha=known.KNOWN_MODEL_SPECS[KEY].sha256):
    folder = models / KEY
    folder.mkdir(parents=True)
    (folder / known.MARKER).write_text(json.dumps({"key": KEY, "gguf_sha256": sha}))


def test_nothing_downloaded(models):
    assert checkpoint_choices() == ["tiny-mrtpo"]


def test_a_downloaded_model_is_listed_after_the_bundled_policy(models):
    _downloaded(models)
    assert checkpoint_choices() == ["tiny-mrtpo", KEY]


def test_an_incomplete_folder_is_not_listed(models):
    _downloaded(models, sha="0" * 64)
    assert checkpoint_choices() == ["tiny-mrtpo"]


def test_the_allow_list_decides(models, monkeypatch):
    _downloaded(models)
    monkeypatch.setenv("MRTPO_ALLOWED_CHECKPOINTS", "org/model")
    assert checkpoint_choices() == ["tiny-mrtpo", "org/model"]
    monkeypatch.setenv("MRTPO_ALLOWED_CHECKPOINTS", f"org/model,{KEY}")
    assert checkpoint_choices() == ["tiny-mrtpo", KEY, "org/model"]
    monkeypatch.setenv("MRTPO_CHECKPOINT", KEY)
    assert checkpoint_choices() == [KEY, "tiny-mrtpo", "org/model"]
