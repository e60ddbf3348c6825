"""verl rollout dumps (verl 0.8.0.dev ``_dump_generations``): hand-built files with exact numbers, and a dump
written the way verl writes one from the bundled policy's samples (tests/integrations/verl_fixture.py), opened,
replayed and scored by the CLI."""

import json
import math
import statistics

import pytest
import torch

from mrtpo_viz.integrations import run_replay, run_uploads, run_view, verl_runs
from tests.integrations.verl_fixture import PROMPTS, SYSTEM, dump_generations, write_verl_dump

CHATML_A = "system\nAnswer briefly.\nuser\nWhat is 2+2?\nassistant\n"
CHATML_B = "user\nName a color.\nassistant\n"


def hand_dump(folder):
    """Step 3: groups A, B interleaved in the file (regrouped by prompt), a text extra key, a bool reward."""
    inputs = [CHATML_A, CHATML_B, CHATML_A, CHATML_B, CHATML_A, CHATML_B]
    extra = {
        "acc": [True, False, False, False, True, True],
        "fmt": [1.0, 0.5, 0.0, 0.5, 1.0, None],
        "pred": ["4", "x", "5", "y", "4", "red"],
        "score": [1.5, 0.5, 0.0, 0.5, 2.0, 1.0],
    }
    dump_generations(
        3,
        inputs,
        [f"out {i}" for i in range(6)],
        ["4", "red", "4", "red", "4", "red"],
        extra["score"],
        extra,
        str(folder),
    )
    return folder


def test_a_hand_built_dump_opens_with_groups_rewards_and_grpo_advantages(tmp_path):
    run = run_view.open_run(hand_dump(tmp_path / "dump"))
    assert run.kind == "verl" and run.steps() == [("train", 3)]
    assert run_view.reward_names(run) == ["acc", "fmt"]  # pred is text; input/output/gts/score/step are verl's own
    frame = run_view.step_frame(run, 3)
    assert frame["row"].tolist() == [0, 2, 4, 1, 3, 5] and frame["group"].tolist() == [0, 0, 0, 1, 1, 1]
    assert frame["reward/acc"].tolist() == [1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    assert math.isnan(frame["reward/fmt"].iloc[5])  # null: not scored
    assert frame["prompt"].tolist()[:1] == ["What is 2+2?"] and frame["gts"].iloc[3] == "red"
    assert json.loads(frame["messages"].iloc[0]) == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What is 2+2?"},
    ]
    scores = [1.5, 0.0, 2.0]  # group A: verl's GRPO (unbiased std, eps 1e-6)
    want = [(s - statistics.mean(scores)) / (statistics.stdev(scores) + 1e-6) for s in scores]
    assert frame["advantage"].tolist()[:3] == pytest.approx(want, abs=1e-12)
    assert frame["advantage"].tolist()[3:] == pytest.approx([-0.57735, -0.57735, 1.1547], abs=1e-5)
    curves = run_view.reward_curves(run)
    assert curves["reward/acc"].tolist() == [0.5] and curves["reward/fmt"].tolist() == [0.6]
    groups = run_view.groups_table(frame, ["acc", "fmt"])
    # the groups table is for display: 3 significant digits (viz.numbers.sig_frame), so 2/3 reads 0.667
    assert groups["mean acc"].tolist() == pytest.approx([2 / 3, 1 / 3], abs=5e-4)


def test_only_score_is_a_reward_without_extra_keys_and_bad_lines_are_named(tmp_path):
    dump_generations(1, [CHATML_B, CHATML_B], ["a", "b"], [None, None], [1.0, 0.0], {}, str(tmp_path / "d"))
    run = run_view.open_run(tmp_path / "d" / "1.jsonl")  # one file opens as a run of one step
    assert run_view.reward_names(run) == ["score"]
    assert run_view.step_frame(run, 1)["advantage"].tolist() == pytest.approx([0.7071063, -0.7071063], abs=1e-6)
    (tmp_path / "d" / "2.jsonl").write_text('{"input": "x", "output": "y"}\nnot json\n')
    with pytest.raises(ValueError, match=r"2\.jsonl:2: not JSON"):
        run_view.step_frame(run_view.open_run(tmp_path / "d"), 2)
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "notes.jsonl").write_text("{}\n")
    with pytest.raises(FileNotFoundError, match="rollout_data_dir"):
        run_view.open_run(tmp_path / "e")


def test_chat_messages_recover_chatml_and_keep_other_text_whole():
    assert verl_runs.chat_messages(CHATML_B) == [{"role": "user", "content": "Name a color."}]
    multi = "user\nline one\nline two\nassistant\nan answer\nuser\nagain?\nassistant\n"
    assert [m["role"] for m in verl_runs.chat_messages(multi)] == ["user", "assistant", "user"]
    llama = "<s>[INST] What is 2+2? [/INST]"
    assert verl_runs.chat_messages(llama) == [{"role": "user", "content": llama}]


def test_a_zip_of_a_dump_uploads(tmp_path):
    import zipfile

    hand_dump(tmp_path / "dump")
    with zipfile.ZipFile(tmp_path / "run.zip", "w") as zf:
        zf.write(tmp_path / "dump" / "3.jsonl", "rollouts/3.jsonl")
        zf.writestr("../../evil.jsonl", "{}")  # neither a step file nor a way out of the folder
    path = run_uploads.extract_upload(tmp_path / "run.zip", tmp_path / "up", max_bytes=2**20)
    assert sorted(p.name for p in path.rglob("*") if p.is_file()) == ["3.jsonl"]
    assert run_view.open_run(path).steps() == [("train", 3)]


@pytest.fixture(scope="module")
def bundled():
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    return load_policy(str(BUNDLED_POLICY_DIR))


@pytest.fixture(scope="module")
def fixture_dump(tmp_path_factory):
    torch.set_num_threads(1)
    return write_verl_dump(tmp_path_factory.mktemp("verl") / "rollouts")


def test_the_verl_style_dump_replays_with_the_policy_that_wrote_it(fixture_dump, bundled):
    run = run_view.open_run(fixture_dump)
    names = run_view.reward_names(run)
    assert run.steps() == [("train", 1), ("train", 2)] and names == ["acc", "format", "overlap"]
    frame = run_view.step_frame(run, 2)
    assert frame["group"].tolist() == [0] * 4 + [1] * 4
    for group, (question, truth) in enumerate(PROMPTS):
        record = run_view.completion_record(frame, 4 * group)
        messages = json.loads(record["messages"])
        assert messages == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        # the recovered messages render to the very prompt the dump holds
        ids = bundled.chat_ids(messages)
        assert (
            bundled.tokenizer.decode(ids, skip_special_tokens=True)
            == json.loads((fixture_dump / "2.jsonl").read_text().splitlines()[4 * group])["input"]
        )
        assert run_replay.record_infos(record, names, run.format) == {n: truth for n in names}
    record = run_view.completion_record(frame, 5)
    view = run_replay.replayed_view(bundled, frame, record, names, run_replay.record_infos(record, names, run.format))
    K, T = view.relevance.scores.shape
    assert K == 3 and T == len(view.relevance.tokens) > 0
    assert float(view.relevance.scores.max()) > 0.0
    assert view.relevance.rewards == {n: record[f"reward/{n}"] for n in names}
    # MRTPO's token advantages average to the GDPO advantage of the row (uniform weights of the mean)
    assert float(view.breakdown.mrtpo.mean()) == pytest.approx(view.breakdown.gdpo, abs=1e-5)


def test_the_cli_scores_a_dump_folder(fixture_dump, tmp_path, capsys):
    from mrtpo_viz.cli import main
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    out = tmp_path / "scores.jsonl"
    assert (
        main(
            [
                "score",
                str(fixture_dump),
                "--out",
                str(out),
                "--checkpoint",
                str(BUNDLED_POLICY_DIR),
                "--verifiers",
                "overlap",
            ]
        )
        == 0
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 16 and records[0]["id"] == "step1-row0" and records[0]["task"] == "verl"
    assert all(r["verifiers"] == ["overlap"] for r in records)
    first = json.loads((fixture_dump / "1.jsonl").read_text().splitlines()[0])
    assert records[0]["rewards"] == {"overlap": first["overlap"]}
    assert "scored 16 rollouts" in capsys.readouterr().out
    # rerun: everything is already there
    assert main(["score", str(fixture_dump), "--out", str(out), "--checkpoint", str(BUNDLED_POLICY_DIR)]) == 0
    assert "0 rollouts" in capsys.readouterr().out
