"""The command line: options generated from TrainConfig (every field settable, its docstring as help), the
subcommands end to end on the tiny policy, and bad input as one readable line with exit code 2."""

import csv
import dataclasses
import json

import pytest

from mrtpo_viz.cli import build_parser, main
from mrtpo_viz.cli.commands import write_report  # noqa: F401  (the train command's report, exercised below)
from mrtpo_viz.cli.options import add_dataclass_options, dataclass_kwargs, field_docs, plain
from mrtpo_viz.training.config import TrainConfig


def _csv_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_every_train_config_field_is_an_option_with_its_docstring():
    parser = build_parser()
    train = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "train")[1]
    options = {a.dest: a for a in train._actions}
    docs = field_docs(TrainConfig)
    for f in dataclasses.fields(TrainConfig):
        if f.name in ("method", "out_dir"):  # given as --methods (a list of variants) and --out
            continue
        assert f.name in options, f.name
        assert options[f.name].help.startswith(plain(docs[f.name])), f.name
        assert "``" not in options[f.name].help, f.name  # no RST markup in the help
        assert docs[f.name], f"TrainConfig.{f.name} has no docstring"
    assert "smollm2-135m-instruct" in options["checkpoint"].help  # the known real models are listed
    assert "default: grpo,gdpo,mrtpo" in options["methods"].help and "(default: 1)" in options["seeds"].help
    assert "``" not in parser.description


def test_generated_options_parse_to_a_config():
    args = build_parser().parse_args(
        [
            "train",
            "--out",
            "o",
            "--control",
            "others",
            "--metric",
            "kl",
            "--kl-coef",
            "0.05",
            "--top-p",
            "0.9",
            "--temperature",
            "0.7",
            "--reward-weights",
            "tool_call.format=0.5,tool_call.correctness=2",
            "--dtype",
            "bfloat16",
            "--seed",
            "3",
            "--threads",
            "1",
        ]
    )
    cfg = TrainConfig(**dataclass_kwargs(args, TrainConfig, skip=("method", "out_dir")), out_dir=args.out)
    assert (cfg.control, cfg.metric, cfg.kl_coef, cfg.top_p, cfg.temperature, cfg.seed) == (
        "others",
        "kl",
        0.05,
        0.9,
        0.7,
        3,
    )
    assert cfg.reward_weights == (("tool_call.format", 0.5), ("tool_call.correctness", 2.0))
    assert args.steps == 150 and args.save_every == 10  # the comparison's own defaults


def test_a_bad_weight_is_an_argument_error(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--out", "o", "--reward-weights", "tool_call.format"])
    assert "expected verifier=weight" in capsys.readouterr().err


def test_options_from_another_dataclass():
    import argparse

    @dataclasses.dataclass(frozen=True)
    class Small:
        size: int = 3
        """How many."""
        name: str = "x"
        """What it is called."""

    p = argparse.ArgumentParser()
    add_dataclass_options(p, Small, defaults={"size": 5})
    assert dataclass_kwargs(p.parse_args([]), Small) == {"size": 5, "name": "x"}
    assert "How many. (default: 5)" in p.format_help().replace("\n", " ").replace("  ", " ")


def test_help_describes_every_option(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--help"])
    out = capsys.readouterr().out
    for flag in ("--kl-coef", "--top-p", "--temperature", "--control", "--metric", "--info-position"):
        line = next(x for x in out.splitlines() if x.strip().startswith(flag))
        assert len(line.split(flag, 1)[1].strip()) > 0 or flag in out


def test_train_cli_writes_metrics_curves_and_summary(tiny_policy_dir, tmp_path):

    from mrtpo_viz.cli import main

    out = tmp_path / "cmp"
    rc = main(
        [
            "train",
            "--task",
            "tool_calling",
            "--methods",
            "gdpo,mrtpo:others",
            "--steps",
            "2",
            "--seeds",
            "2",
            "--checkpoint",
            str(tiny_policy_dir),
            "--out",
            str(out),
            "--group-size",
            "2",
            "--prompts-per-step",
            "1",
            "--max-new-tokens",
            "6",
            "--threads",
            "1",
            "--save-every",
            "1",
        ]
    )
    assert rc == 0
    rows = _csv_rows(out / "metrics.csv")
    assert len(rows) == 2 * 2 * 2  # variants x seeds x steps
    assert {r["variant"] for r in rows} == {"gdpo", "mrtpo:others"}
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["variants"]) == {"gdpo", "mrtpo:others"} and summary["seeds"] == 2
    assert "plotly" in (out / "curves.html").read_text()[:5000].lower()
    assert "| gdpo |" in (out / "summary.md").read_text()
    assert main(["train", "--task", "tool_calling", "--methods", "gdpo,ppo", "--out", str(out)]) == 2  # clear error


def _help(command: str) -> str:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return " ".join(sub.choices[command].format_help().split())


def test_task_options_list_the_tasks_that_load_here(monkeypatch, capsys, tmp_path):
    from mrtpo_viz.tasks import bfcl

    monkeypatch.setattr(bfcl, "package_dir", lambda: None)  # bfcl-eval not installed
    assert "task family: tool_calling, text_to_sql, instruction_following --example" in _help("replay")
    assert main(["replay", "--task", "bfcl"]) == 2
    assert "bfcl after pip install mrtpo-viz[bfcl]" in capsys.readouterr().err
    assert main(["train", "--task", "bfcl", "--out", str(tmp_path / "t")]) == 2  # refused before any training
    assert "unknown task family 'bfcl'" in capsys.readouterr().err and not (tmp_path / "t").exists()
    monkeypatch.setattr(bfcl, "package_dir", lambda: tmp_path)  # as if installed
    assert "task family: tool_calling, text_to_sql, instruction_following, bfcl" in _help("replay")
    assert "here: tool_calling, text_to_sql, instruction_following, bfcl" in _help("train")


# --- get-model (the fetching itself is tested in tests/policy/test_known.py) ------------------------------------------


def test_checkpoint_help_names_the_known_models(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["replay", "--help"])
    assert "smollm2-135m-instruct" in capsys.readouterr().out.replace("\n", "")


def test_get_model_list_and_errors(tmp_path, monkeypatch, capsys):
    from mrtpo_viz.policy import gguf

    monkeypatch.setenv("MRTPO_MODELS_DIR", str(tmp_path / "models"))
    assert main(["get-model", "--list"]) == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("smollm2-135m-instruct: SmolLM2-135M-Instruct")
        and "not downloaded (python -m mrtpo_viz get-model smollm2-135m-instruct)" in out
    )
    assert main(["get-model"]) == 2
    assert "give a model to fetch (one of: smollm2-135m-instruct)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["get-model", "gpt-9"])
    assert "invalid choice: 'gpt-9'" in capsys.readouterr().err
    monkeypatch.setattr(gguf, "gguf_version", lambda: None)
    assert main(["get-model", "smollm2-135m-instruct"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("error: converting a GGUF model needs the optional 'gguf' package")
        and "mrtpo-viz[gguf]" in err
        and not (tmp_path / "models").exists()
    )


def test_a_known_model_not_downloaded_yet_names_the_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MRTPO_MODELS_DIR", str(tmp_path / "models"))
    assert main(["replay", "--task", "tool_calling", "--checkpoint", "smollm2-135m-instruct"]) == 2
    assert "run `python -m mrtpo_viz get-model smollm2-135m-instruct` once" in capsys.readouterr().err


def test_bench_without_a_checkout_says_so_and_exits_2(monkeypatch, tmp_path, capsys):
    from mrtpo_viz import bench

    monkeypatch.setattr(bench, "benchmarks_dir", lambda: tmp_path / "no-benchmarks-here")
    assert main(["bench"]) == 2
    assert "needs a source checkout" in capsys.readouterr().err
