"""Threat: inputs whose errors leaked server paths or confused (the Runs tab's bare "prompt", "reward/a", "'int'
object is not iterable", ".str accessor", "invalid literal for int()", recursion errors; a database name that
showed the install path and a wrong hint; a refused argument shown as "needs its arguments"; ``ordered: "no"``
taken as true). Each now says what was wrong and what to do, names no server folder, in a few hundred characters."""

import json
import os

import gradio as gr
import pandas as pd
import pytest

from mrtpo_viz.tasks import Example, get_verifier
from mrtpo_viz.ui import relevance_tab, runs_tab, tools
from mrtpo_viz.ui.errors import readable
from mrtpo_viz.ui.example_picker import FREE_PROMPT
from mrtpo_viz.ui.input_limits import MAX_VERIFIERS
from mrtpo_viz.ui.arguments import FIELDS

from .bounded import bounded


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("MRTPO_RUNS_DIR", str(tmp_path))
    return tmp_path


def trl(folder, **columns):
    folder.mkdir(parents=True, exist_ok=True)
    base = {"step": [1, 1], "prompt": ["a", "a"], "completion": ["x", "y"], "ok": [1.0, 0.0], "advantage": [0.5, -0.5]}
    frame = pd.DataFrame({k: v for k, v in {**base, **columns}.items() if v is not None})
    frame.to_parquet(folder / "completions_00001.parquet")


def says(runs, fn, *args, match):
    with bounded(), pytest.raises(gr.Error) as err:
        fn(*args)
    text = str(err.value)
    assert str(runs) not in text and len(text) <= 500, text
    assert match in text, text
    return text


@pytest.mark.parametrize(
    "columns, match",
    [
        (dict(prompt=None), "completions_00001.parquet has no column 'prompt', which the Runs view needs"),
        (dict(prompt=[1, 2]), "'prompt' and 'completion' must be text or lists of chat messages"),
        (dict(completion=[[{"role": "assistant", "content": 1}], [{"role": "assistant", "content": 2}]]), None),
        (dict(advantage=["high", "low"]), "column 'advantage' must hold numbers"),
    ],
)
def test_malformed_completions_files_read_as_messages(runs, columns, match):
    trl(runs / "r" / "completions", **columns)
    if match is None:  # a chat completion whose content is a number still opens (as its text)
        runs_tab.open_run("r", None)
        return
    says(runs, runs_tab.open_run, "r", None, match=match)


def test_a_reward_missing_from_a_later_step(runs):
    """Not "reward/a" (a KeyError's bare key)."""
    trl(runs / "r" / "completions")
    pd.DataFrame({"step": [2], "prompt": ["a"], "completion": ["x"], "advantage": [0.0]}).to_parquet(
        runs / "r" / "completions" / "completions_00002.parquet"
    )
    says(runs, runs_tab.open_run, "r", None, match="completions_00002.parquet has no column 'ok'")


def test_a_token_log_with_wrong_values(runs):
    """Not ".str accessor" (a completion column of numbers) nor a bare KeyError for a missing column."""
    folder = runs / "r" / "mrtpo"
    folder.mkdir(parents=True)
    base = {
        "row": [0],
        "group": [0],
        "prompt": ["p"],
        "completion": [5],
        "advantage": [0.1],
        "token_advantages": [[0.1, 0.2]],
        "reward/a": [1.0],
    }
    pd.DataFrame(base).to_parquet(folder / "tokens_00001.parquet")
    says(runs, runs_tab.open_run, "r", None, match="column 'completion' must hold text")
    pd.DataFrame({**base, "completion": ["c"]}).to_parquet(folder / "tokens_00001.parquet")
    state = runs_tab.open_run("r", None)[0]
    says(runs, runs_tab.run_completion, state, "train:1", 0, match="per-token log has no column")


def test_group_and_row_numbers_that_are_not_numbers(runs):
    """Not "invalid literal for int() with base 10"."""
    trl(runs / "r" / "completions")
    state = runs_tab.open_run("r", None)[0]
    says(
        runs,
        runs_tab.run_completions,
        state,
        "train:1",
        "abc",
        "",
        "row",
        False,
        match="The group must be a whole number (pick one from the list), got 'abc'",
    )
    says(runs, runs_tab.run_completion, state, "train:1", "1e400", match="The completion row must be a whole number")
    says(runs, runs_tab.run_step, state, "train:" + "9" * 30, match="Pick a step of the run")


def test_a_deeply_nested_run_json(runs):
    """Not a RecursionError."""
    trl(runs / "r" / "completions")
    (runs / "r" / "mrtpo").mkdir()
    (runs / "r" / "mrtpo" / "run.json").write_text("[" * 100_000 + "]" * 100_000)
    says(runs, runs_tab.open_run, "r", None, match="run.json is nested deeper than 32 levels")
    (runs / "r" / "mrtpo" / "run.json").write_text(json.dumps({"rewards": [{"a": 1}]}))
    says(runs, runs_tab.open_run, "r", None, match="'rewards' must be a list of names")


def test_a_missing_database_names_the_bundled_ones_not_the_install_path():
    """Not "no database at <install path>/...; run `python scripts/make_sample_data.py`" (a script that is not
    installed with the package)."""
    ex = Example(task="text_to_sql", prompt="q", meta={"db": "nosuch", "gold_sql": "SELECT 1"})
    with pytest.raises(FileNotFoundError) as err:
        get_verifier("sql.execution").check("SELECT 1", ex)
    text = str(err.value)
    assert text == "no bundled database 'nosuch'; the bundled ones are company, school, shop"


def test_an_os_error_on_the_page_names_its_file_only(tmp_path):
    @readable
    def handler():
        raise PermissionError(13, "Permission denied", str(tmp_path / f"mrtpo-viz-downloads-{os.getpid()}" / "x.csv"))

    with pytest.raises(gr.Error) as err:
        handler()
    assert err.value.message == "Permission denied ('x.csv')"


def _free_fields(values: list[str]) -> list[str]:
    return [""] * MAX_VERIFIERS + values + [""] * (MAX_VERIFIERS * FIELDS - len(values))


@pytest.mark.parametrize(
    "verifier, fields, match",
    [
        (
            "ifeval.keyword",
            ["(", "1", "at least"],
            "kwarg 'keyword' must be a non-blank string that is a valid regular",
        ),
        ("ifeval.word_count", ["-1", "at least"], "kwarg 'num_words' must be an integer >= 0, got -1"),
    ],
)
def test_a_refused_argument_says_why(verifier, fields, match):
    """Not "needs its arguments", the reason hidden."""
    with bounded(), pytest.raises(gr.Error) as err:
        relevance_tab.replay_response(
            "tiny-mrtpo",
            "instruction_following",
            FREE_PROMPT,
            "Say hi.",
            "hi",
            [verifier],
            "user_end",
            "js",
            "none",
            "",
            None,
            *_free_fields(fields),
        )
    assert match in str(err.value) and "its arguments" not in str(err.value)


def test_a_boolean_argument_is_strict():
    """``ordered: "no"`` must not be taken as true (a non-empty string)."""
    args = {"sql.execution": {"db": "shop", "gold_sql": "SELECT name FROM products", "ordered": "no"}}
    with bounded(), pytest.raises(gr.Error, match="argument 'ordered' must be true or false, got 'no'"):
        tools.score_response("SELECT name FROM products", ["sql.execution"], "text_to_sql", -1, "q", args)
    ok = json.loads(
        tools.score_response(
            "```sql\nSELECT name FROM products\n```",
            ["sql.execution"],
            "text_to_sql",
            -1,
            "q",
            {"sql.execution": {**args["sql.execution"], "ordered": False}},
        )
    )
    assert ok["sql.execution"]["reward"] == 1.0
