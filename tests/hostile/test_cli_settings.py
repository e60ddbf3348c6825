"""Threat: command-line arguments and operator settings out of range (issue 42, items 11-12). ``serve --port -1``
or ``99999`` was an "internal error" (OverflowError, exit 1); ``replay --threads 100000`` died with exit 130;
``MRTPO_RUNS_DIR=/etc/passwd`` (a file) was accepted; ``MRTPO_MODEL_REQUESTS`` had no upper bound. Arguments are now
checked by argparse (exit 2, the option named), settings at start (the variable named); the highest legal value of
each still passes."""

import pytest

from mrtpo_viz.cli import build_parser, main
from mrtpo_viz.settings import HIGHEST, SettingsError, get_settings


@pytest.mark.parametrize(
    "argv, option",
    [
        (["serve", "--port", "-1"], "--port"),
        (["serve", "--port", "99999"], "--port"),
        (["serve", "--port", "0"], "--port"),
        (["replay", "--task", "text_to_sql", "--threads", "100000"], "--threads"),
        (["replay", "--task", "text_to_sql", "--threads", "0"], "--threads"),
        (["replay", "--task", "text_to_sql", "--example", "-1"], "--example"),
        (["score", "r.jsonl", "--out", "o.jsonl", "--threads", "1e9"], "--threads"),
        (["train", "--out", "o", "--seeds", "100000"], "--seeds"),
        (["make-sample-policy", "--threads", "100000"], "--threads"),
    ],
)
def test_an_argument_out_of_range_is_a_usage_error_naming_the_option(argv, option, capsys):
    """Parsed only: were the check gone, ``main`` would serve on port 0 or start 100,000 threads."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"argument {option}: must be a whole number from" in err, err
    assert "internal error" not in err and "Traceback" not in err


def test_the_highest_legal_arguments_still_parse():
    parser = build_parser()
    assert parser.parse_args(["serve", "--port", "65535"]).port == 65535
    assert parser.parse_args(["serve", "--port", "1"]).port == 1
    assert parser.parse_args(["replay", "--task", "text_to_sql", "--threads", "256"]).threads == 256
    assert parser.parse_args(["train", "--out", "o", "--seeds", "1000"]).seeds == 1000


def test_runs_dir_must_be_a_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    for value in (str(tmp_path / "file"), "/etc/passwd", str(tmp_path / "missing")):
        with pytest.raises(SettingsError, match="MRTPO_RUNS_DIR must be an existing folder"):
            get_settings({"MRTPO_RUNS_DIR": value})
    assert get_settings({"MRTPO_RUNS_DIR": str(tmp_path)}).runs_dir == str(tmp_path)


def test_the_cli_stops_at_a_bad_setting_with_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MRTPO_MODEL_REQUESTS", "100000000000000000000")
    assert main(["replay", "--task", "text_to_sql"]) == 2
    assert "MRTPO_MODEL_REQUESTS must be at most 256" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(HIGHEST))
def test_each_number_setting_has_an_upper_bound_and_accepts_it(name):
    var, kind = {
        "max_tokens": ("MRTPO_MAX_TOKENS", int),
        "max_chars": ("MRTPO_MAX_CHARS", int),
        "max_info_chars": ("MRTPO_MAX_INFO_CHARS", int),
        "max_trainings": ("MRTPO_MAX_TRAININGS", int),
        "max_upload_mb": ("MRTPO_MAX_UPLOAD_MB", float),
        "max_rollouts": ("MRTPO_MAX_ROLLOUTS", int),
        "max_new_tokens": ("MRTPO_MAX_NEW_TOKENS", int),
        "model_requests": ("MRTPO_MODEL_REQUESTS", int),
        "threads": ("MRTPO_THREADS", int),
        "replay_cache_mb": ("MRTPO_REPLAY_CACHE_MB", float),
    }[name]
    highest = kind(HIGHEST[name])
    assert getattr(get_settings({var: str(highest)}), name) == highest
    over = str(highest + 1) if kind is int else "inf"
    with pytest.raises(SettingsError, match=f"{var} must be at most"):
        get_settings({var: over})
    with pytest.raises(SettingsError, match=f"{var} must be at most"):
        get_settings({var: "1" + "0" * 20})
