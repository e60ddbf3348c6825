"""Operator settings: parsing, validation, and the checkpoint allow-list (also through ``load_policy``)."""

import dataclasses

import pytest

from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICIES
from mrtpo_viz.settings import ENV_VARS, Settings, SettingsError, get_settings


def test_defaults_when_nothing_is_set():
    s = get_settings({})
    assert s == Settings()
    limits = (s.max_tokens, s.max_chars, s.max_info_chars, s.max_trainings, s.max_new_tokens)
    assert limits == (2048, 8000, 4000, 1, 256)
    assert s.max_rollouts == 200
    assert s.max_upload_bytes == 5 * 2**20
    assert s.checkpoint_allowed("/anything/at/all") and s.checkpoint_allowed("owner/model")


def test_values_are_parsed_and_blank_means_default():
    env = {
        "MRTPO_MAX_TOKENS": " 512 ",
        "MRTPO_MAX_INFO_CHARS": "100",
        "MRTPO_MAX_TRAININGS": "3",
        "MRTPO_MAX_UPLOAD_MB": "0.5",
        "MRTPO_MAX_NEW_TOKENS": "",
        "MRTPO_ALLOWED_CHECKPOINTS": " a/b ,, c/d ",
    }
    s = get_settings(env)
    assert (s.max_tokens, s.max_info_chars, s.max_trainings, s.max_new_tokens) == (512, 100, 3, 256)
    assert s.max_upload_bytes == 2**19
    assert s.allowed_checkpoints == ("a/b", "c/d")
    assert (s.checkpoint, s.threads) == ("", None)  # unset: the bundled policy, torch's thread count
    s = get_settings({"MRTPO_CHECKPOINT": " owner/model ", "MRTPO_THREADS": "2"})
    assert (s.checkpoint, s.threads) == ("owner/model", 2)


def test_every_field_has_an_environment_variable():
    from dataclasses import fields

    assert [f.name for f in fields(Settings)] == list(ENV_VARS)
    assert all(var.startswith("MRTPO_") for var, _ in ENV_VARS.values())


@pytest.mark.parametrize(
    "var, value, says",
    [
        ("MRTPO_MAX_TOKENS", "lots", "MRTPO_MAX_TOKENS must be a whole number, got 'lots'"),
        ("MRTPO_MAX_TOKENS", "1.5", "MRTPO_MAX_TOKENS must be a whole number"),
        ("MRTPO_MAX_TRAININGS", "0", "MRTPO_MAX_TRAININGS must be a positive number, got 0"),
        ("MRTPO_MAX_NEW_TOKENS", "-5", "MRTPO_MAX_NEW_TOKENS must be a positive number, got -5"),
        ("MRTPO_MAX_UPLOAD_MB", "nan", "MRTPO_MAX_UPLOAD_MB must be a positive number"),
        ("MRTPO_MAX_UPLOAD_MB", "5MB", "MRTPO_MAX_UPLOAD_MB must be a number, got '5MB'"),
        ("MRTPO_ALLOWED_CHECKPOINTS", " , ,", "MRTPO_ALLOWED_CHECKPOINTS is set but names no checkpoint"),
        ("MRTPO_THREADS", "two", "MRTPO_THREADS must be a whole number, got 'two'"),
        ("MRTPO_THREADS", "0", "MRTPO_THREADS must be a positive number, got 0"),
    ],
)
def test_invalid_values_name_the_variable(var, value, says):
    with pytest.raises(SettingsError) as err:
        get_settings({var: value})
    assert says in str(err.value)
    assert isinstance(err.value, ValueError)


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().max_tokens = 1


def test_allow_list_admits_listed_folders_their_subfolders_and_hub_ids(tmp_path):
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    s = get_settings({"MRTPO_ALLOWED_CHECKPOINTS": f"org/model,{tmp_path / 'runs'}"})
    assert s.checkpoint_allowed("org/model")
    assert s.checkpoint_allowed(tmp_path / "runs") and s.checkpoint_allowed(tmp_path / "runs" / "a")
    assert not s.checkpoint_allowed("org/other") and not s.checkpoint_allowed(tmp_path / "other")
    assert not s.checkpoint_allowed(f"{tmp_path}/runs/../other")  # resolved before comparing: no climbing out
    assert not s.checkpoint_allowed("/etc") and not s.checkpoint_allowed("../../etc")
    assert not s.checkpoint_allowed("bad\x00name")


def test_allow_list_admits_the_bundled_policy_only_inside_its_folder(tmp_path):
    s = get_settings({"MRTPO_ALLOWED_CHECKPOINTS": "org/model"})
    assert s.checkpoint_allowed(BUNDLED_POLICIES)
    assert not s.checkpoint_allowed(BUNDLED_POLICIES / ".." / "..")


def test_allow_list_symlink_cannot_smuggle_a_folder_in(tmp_path):
    (tmp_path / "allowed").mkdir()
    (tmp_path / "secret").mkdir()
    (tmp_path / "allowed" / "link").symlink_to(tmp_path / "secret")
    s = get_settings({"MRTPO_ALLOWED_CHECKPOINTS": str(tmp_path / "allowed")})
    assert not s.checkpoint_allowed(tmp_path / "allowed" / "link")


def test_check_checkpoint_message_lists_what_is_allowed():
    s = get_settings({"MRTPO_ALLOWED_CHECKPOINTS": "org/model"})
    with pytest.raises(ValueError, match=r"'/etc/passwd' is not allowed here; this app loads only org/model"):
        s.check_checkpoint("/etc/passwd")


def test_the_app_and_cli_loader_obeys_the_allow_list_and_the_library_does_not(monkeypatch, tiny_policy_dir):
    from mrtpo_viz.policy import PolicyLoadError, load_policy
    from mrtpo_viz.settings import load_allowed_policy

    monkeypatch.setenv("MRTPO_ALLOWED_CHECKPOINTS", "org/model")
    with pytest.raises(PolicyLoadError, match="not allowed here"):
        load_allowed_policy(tiny_policy_dir, device="cpu", dtype="float32")
    assert load_policy(tiny_policy_dir, device="cpu", dtype="float32").n_params > 0  # deployment stays in the app
    assert load_allowed_policy("tiny-mrtpo", device="cpu", dtype="float32").n_params > 0  # bundled: always allowed
    monkeypatch.setenv("MRTPO_ALLOWED_CHECKPOINTS", str(tiny_policy_dir))
    assert load_allowed_policy(tiny_policy_dir, device="cpu", dtype="float32").n_params > 0


def test_run_folders_open_only_under_the_runs_dir_and_say_nothing_about_what_lies_outside(tmp_path):
    import os

    runs, outside = tmp_path / "runs", tmp_path / "private"
    (runs / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (runs / "link").symlink_to(outside)
    s = get_settings({"MRTPO_RUNS_DIR": str(runs)})
    assert s.run_folder("a") == (runs / "a").resolve()  # relative to the runs folder
    assert s.run_folder(str(runs / "a" / "b")) == (runs / "a" / "b").resolve()
    assert s.run_folder("a/b/..") == (runs / "a").resolve()
    messages = set()
    for typed in (
        str(outside),
        str(tmp_path / "no-such-folder"),
        "../private",
        "a/../../private",
        "link",
        "/etc",
        "\0bad",
    ):
        with pytest.raises(ValueError) as err:
            s.run_folder(typed)
        assert "is not under the runs folder" in str(err.value)
        messages.add(str(err.value).replace(repr(typed), "X"))
    assert len(messages) == 1  # an existing and a missing outside path read alike
    with pytest.raises(FileNotFoundError, match="no run folder 'missing'"):
        s.run_folder("missing")  # inside the runs folder, existence may be told
    with pytest.raises(ValueError, match="Typed run folders are off here"):
        get_settings({}).run_folder("a")
    with pytest.raises(SettingsError, match="MRTPO_RUNS_DIR must be an existing folder"):
        get_settings({"MRTPO_RUNS_DIR": str(tmp_path / "nope")})
    assert os.path.isdir(outside)


def test_the_mcp_switch_is_off_by_default_and_parses_flags():
    assert get_settings({}).mcp is False
    assert [get_settings({"MRTPO_MCP": v}).mcp for v in ("1", " true", "Yes", "on", "0", "false", "OFF")] == [
        True,
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    with pytest.raises(SettingsError, match="MRTPO_MCP must be 1 or 0 .* got 'maybe'"):
        get_settings({"MRTPO_MCP": "maybe"})


def test_every_setting_is_an_mrtpo_variable_with_its_type_and_a_docstring():
    from mrtpo_viz.docstrings import field_docs

    assert ENV_VARS["max_upload_mb"] == ("MRTPO_MAX_UPLOAD_MB", float)
    assert ENV_VARS["threads"] == ("MRTPO_THREADS", int) and ENV_VARS["allowed_checkpoints"][1] is tuple
    docs = field_docs(Settings)
    assert all(docs[name].startswith(f"``{var}``: ") for name, (var, _) in ENV_VARS.items())


def test_the_settings_table_is_generated_from_the_settings():
    """docs/reference/settings.md is this table (tests/docs/test_generated.py checks the page is current)."""
    from mrtpo_viz.settings import settings_table

    table = settings_table().splitlines()
    assert len(table) == 2 + len(dataclasses.fields(Settings))
    assert (
        "| `MRTPO_MAX_TOKENS` | whole number, at most 131,072 | `2048` | tokens of one request (prompt + response + "
        "all verifier information). |" in table
    )
    assert any(
        r.startswith("| `MRTPO_MAX_UPLOAD_MB` | number, at most 1,024 | `5.0` | megabytes (MiB) of one ") for r in table
    )
    assert (
        "| `MRTPO_ALLOWED_CHECKPOINTS` | comma list | (unset) | hub ids and folders that may load; empty admits "
        "any checkpoint. |" in table
    )


def test_bf16_replay_is_off_by_default_and_needs_a_native_cpu(monkeypatch):
    import mrtpo_viz.policy.precision as precision
    from mrtpo_viz.settings import replay_dtype

    assert get_settings({}).bf16_replay is False
    on = get_settings({"MRTPO_BF16_REPLAY": "1"})
    assert replay_dtype(get_settings({}), "cpu") is None
    monkeypatch.setattr(precision, "native_bf16", lambda: False)
    assert replay_dtype(on, "cpu") is None  # emulated bfloat16 is slower: float32 stays
    monkeypatch.setattr(precision, "native_bf16", lambda: True)
    assert replay_dtype(on, "cpu") == "bfloat16" and replay_dtype(on, None) == "bfloat16"
    assert replay_dtype(on, "cuda") is None  # the GPU keeps the library's own default


def test_the_model_line_says_when_the_replay_runs_in_bfloat16(tiny_policy):
    import torch

    from mrtpo_viz.policy import Policy
    from mrtpo_viz.ui.policy_choice import precision_note

    assert precision_note(tiny_policy) == ""
    bf16 = Policy(tiny_policy.model, tiny_policy.tokenizer, "x", torch.device("cpu"), torch.bfloat16)
    assert "reduced precision" in precision_note(bf16) and "85%" in precision_note(bf16)
