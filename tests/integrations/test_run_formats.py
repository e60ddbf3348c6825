"""The run-format registry: every format is found, opened and unpacked through it, and verl's GRPO advantage
matches verl's own ``compute_grpo_outcome_advantage`` (installed, not copied), groups of one included."""

import os
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from mrtpo_viz.integrations import run_view, verl_runs
from tests.integrations.verl_fixture import dump_generations

CHATML = "user\nName a color.\nassistant\n"


@pytest.fixture(scope="module")
def core_algos():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from verl.trainer.ppo import core_algos
    except ImportError as e:
        if os.environ.get("MRTPO_REQUIRE_REFERENCES") == "1":
            pytest.fail(f"verl must be installed here (pip install --no-deps -r requirements-ref.txt): {e}")
        pytest.skip(f"verl is not installed: {e}")
    return core_algos


def verl_grpo(core_algos, scores, groups):
    """verl's own GRPO outcome advantage of one score per row (the score on the last of 3 response tokens)."""
    B = len(scores)
    rewards = torch.zeros(B, 3)
    rewards[:, -1] = torch.tensor(scores, dtype=torch.float32)
    adv, _ = core_algos.compute_grpo_outcome_advantage(rewards, torch.ones(B, 3), np.array(groups, dtype=object))
    return adv[:, 0].tolist()


def test_grpo_advantages_match_verls_own_function_for_groups_of_one_two_and_three(core_algos):
    scores = [0.7, 1.0, 0.0, 2.0, 0.5, 1.5, -0.3]
    groups = [0, 1, 1, 2, 2, 2, 3]  # groups 0 and 3 have one row: verl takes mean 0 and std 1 there
    ours = verl_runs.grpo_advantages(scores, groups)
    assert ours == pytest.approx(verl_grpo(core_algos, scores, groups), abs=1e-6)
    assert ours[0] == pytest.approx(0.7 / (1 + 1e-6)) and ours[-1] == pytest.approx(-0.3 / (1 + 1e-6))


def test_a_dump_with_a_prompt_of_one_rollout_gets_verls_advantage(tmp_path, core_algos):
    other = "user\nWhat is 2+2?\nassistant\n"
    dump_generations(5, [CHATML, CHATML, other], ["red", "blue", "4"], [None] * 3, [1.0, 0.0, 0.8], {}, str(tmp_path))
    frame = run_view.step_frame(run_view.open_run(tmp_path), 5)
    want = verl_grpo(core_algos, [1.0, 0.0, 0.8], [0, 0, 1])
    assert frame["advantage"].tolist() == pytest.approx(want, abs=1e-6)
    assert frame["advantage"].iloc[2] == pytest.approx(0.8, abs=1e-5)  # was 0 before: verl keeps the score


def test_every_builtin_format_is_registered_in_detection_order():
    assert list(run_view.formats())[:4] == ["mrtpo", "trl", "verl", "prime-rl"]
    for fmt in run_view.formats().values():
        assert fmt.title and fmt.advantage and fmt.looks


@pytest.mark.parametrize(
    "member, target",
    [
        ("out/completions/completions_00003.parquet", "completions/completions_00003.parquet"),
        ("mrtpo/eval_tokens_00002.parquet", "mrtpo/eval_tokens_00002.parquet"),
        ("run/mrtpo/run.json", "mrtpo/run.json"),
        ("dump/12.jsonl", "12.jsonl"),
        ("out/token_exports/step_4/rank_1.jsonl", "token_exports/step_4/rank_1.jsonl"),
        ("../../step_4/rank_1.jsonl", "token_exports/step_4/rank_1.jsonl"),
        ("rank_1.jsonl", None),  # a rank file outside its step folder: its step is unknown
        ("notes.jsonl", None),
        ("step_4/STABLE", None),
    ],
)
def test_a_zip_member_is_placed_by_the_format_that_claims_it(member, target):
    assert run_view.upload_target(member) == target


def test_a_folder_is_the_first_format_that_finds_files_in_it(tmp_path):
    # an MRTPO run holds TRL's completions too: its token log wins
    (tmp_path / "completions").mkdir()
    (tmp_path / "mrtpo").mkdir()
    pd.DataFrame({"prompt": ["p"], "completion": ["c"], "advantage": [0.5], "r": [1.0]}).to_parquet(
        tmp_path / "completions" / "completions_00001.parquet"
    )
    assert run_view.open_run(tmp_path).kind == "trl"
    pd.DataFrame({"token_advantages": [[0.1]]}).to_parquet(tmp_path / "mrtpo" / "tokens_00001.parquet")
    assert run_view.open_run(tmp_path).kind == "mrtpo"
    assert run_view.open_run(tmp_path / "completions", tmp_path).kind == "mrtpo"  # its inner folder: the run
    dump_generations(2, [CHATML], ["red"], [None], [1.0], {}, str(tmp_path / "v"))
    assert run_view.open_run(tmp_path / "v").kind == "verl"
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"holds no run files: neither mrtpo/.* nor .*token_exports"):
        run_view.open_run(tmp_path / "empty")


def test_a_run_is_scored_through_the_same_path_and_caps_as_a_rollouts_file(tmp_path):
    import json

    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.relevance.rows import RowLimits
    from mrtpo_viz.relevance.scoring import score_run_rows
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    torch.set_num_threads(1)
    policy = load_policy(str(BUNDLED_POLICY_DIR))
    outputs = ["red", "red " * 60, "blue"]
    dump_generations(1, [CHATML] * 3, outputs, ["red"] * 3, [1.0, 0.5, 0.0], {}, str(tmp_path / "v"))
    run = run_view.open_run(tmp_path / "v")
    rows = list(run_view.rollout_rows(run, policy))
    assert [r["id"] for r in rows] == ["step1-row0", "step1-row1", "step1-row2"]
    assert rows[1]["infos"] == {"score": "red"} and rows[1]["rewards"] == {"score": 0.5}

    def tokens(text):
        return len(policy.tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])

    short = tokens("Name a color.") + tokens("red") + tokens("red")
    limits = RowLimits(max_rows=2, max_tokens=short + 5)
    out = tmp_path / "o.jsonl"
    *_, progress = score_run_rows(policy, iter(rows), out=out, limits=limits)
    assert progress.scored == 1 and [line for line, _ in progress.problems] == [3, 2]
    assert "more than 2 rollouts" in progress.problems[0][1]
    assert f"at most {short + 5:,} per row" in progress.problems[1][1]
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["id"] == "step1-row0" and record["task"] == "verl" and record["rewards"] == {"score": 1.0}


def test_score_reads_a_trl_run_folder_as_a_trl_run(tmp_path, capsys):
    """The CLI asks the registry: a TRL output_dir is scored as TRL's completions (a bundled prompt's verifiers give
    the information), not taken for a verl dump."""
    import json

    from mrtpo_viz.cli import main
    from mrtpo_viz.tasks import load_examples
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    ex = load_examples("tool_calling", split="test")[0]
    (tmp_path / "run" / "completions").mkdir(parents=True)
    frame = pd.DataFrame(
        {
            "step": [1, 1],
            "prompt": [ex.messages(), [{"role": "user", "content": "not a bundled prompt"}]],
            "completion": [ex.reference, "no"],
            "tool_call.format": [1.0, 0.0],
            "advantage": [0.7, -0.7],
        }
    )
    frame.to_parquet(tmp_path / "run" / "completions" / "completions_00001.parquet")
    out = tmp_path / "o.jsonl"
    args = ["score", str(tmp_path / "run"), "--out", str(out), "--checkpoint", str(BUNDLED_POLICY_DIR)]
    assert main(args) == 0
    said = capsys.readouterr().out
    assert "scored 1 rollouts" in said and "step1-row1" in said and "give --info" in said
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["id"] == "step1-row0" and record["task"] == "trl" and record["verifiers"] == ["tool_call.format"]
    assert record["rewards"] == {"tool_call.format": 1.0}
