"""prime-rl token exports (``token_exports/step_<s>/rank_<r>.jsonl``, schema 1): a hand-built export with exact
numbers, and one written in prime-rl's format from the bundled policy's samples (tests/integrations/
prime_rl_fixture.py), opened, replayed from its exact ids and scored by the CLI."""

import json
import math
import zipfile

import numpy as np
import pytest
import torch

from mrtpo_viz.integrations import prime_rl_runs, run_replay, run_uploads, run_view
from tests.integrations.prime_rl_fixture import PROMPTS, SYSTEM, sequence_record, write_lines, write_prime_rl_export


def hand_export(folder):
    """Step 7: rank 0 holds prompt A twice, rank 1 prompt B once and prompt A once (grouped by prompt ids)."""
    a, b = [5, 6, 7], [5, 9]
    logp = [0.0, -1.0, -0.5, -0.25, -2.0, -0.1]
    ent = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    write_lines(
        folder,
        7,
        0,
        [
            sequence_record(7, 0, 0, a, [11, 12, 13], 1.5, logp, ent, "math"),
            sequence_record(7, 0, 1, a, [14, 15, 16], -0.5, logp, ent, "math", weights={"rl": [1, 1, 1, 1, 0, 0.5]}),
        ],
    )
    write_lines(
        folder,
        7,
        1,
        [
            sequence_record(7, 1, 0, b, [21, 22], 2.0, logp[:4], ent[:4], None),
            sequence_record(7, 1, 1, a, [17, 18, 19], 0.25, logp, ent, "math", weights={"ce": [0, 0, 0, 0.1, 0.1, 0]}),
        ],
    )
    return folder


def test_a_hand_built_export_opens_with_groups_channels_and_curves(tmp_path):
    run = run_view.open_run(hand_export(tmp_path / "out"))
    assert run.kind == "prime-rl" and run.steps() == [("train", 7)] and run_view.reward_names(run) == []
    frame = run_view.step_frame(run, 7)
    assert frame["rank"].tolist() == [0, 0, 1, 1] and frame["line"].tolist() == [1, 2, 1, 2]
    assert frame["group"].tolist() == [0, 0, 1, 0]  # prompt B is the second distinct prompt
    assert frame["advantage"].tolist() == [1.5, -0.5, 2.0, 0.25]  # the mean over loss tokens
    assert frame["completion_ids"].map(list).tolist() == [[11, 12, 13], [14, 15, 16], [21, 22], [17, 18, 19]]
    assert frame["prompt"].iloc[2] == "2 prompt tokens (no env name)"
    rec = run_view.completion_record(frame, 1)
    ch = prime_rl_runs.channels(rec)
    assert list(ch) == ["rl"]  # no ce and no ref_kl stream in this sequence
    # rl weight 0 on the 5th token (response index 1): not trained by the rl channel; 0.5 on the last
    assert ch["rl"][0] == -0.5 and math.isnan(ch["rl"][1]) and ch["rl"][2] == pytest.approx(-0.25)
    ce = prime_rl_runs.channels(run_view.completion_record(frame, 3))
    assert ce["rl"].tolist() == [0.25, 0.25, 0.25] and ce["ce"][:2].tolist() == [0.1, 0.1] and math.isnan(ce["ce"][2])
    streams, masks = prime_rl_runs.logged_streams(rec)
    assert streams["entropy"] == [3.0, 4.0, 5.0] and masks["loss mask"] == [1.0, 1.0, 1.0]
    curves = run_view.reward_curves(run)
    loss_tokens = 3 + 3 + 2 + 3
    assert curves["reward/advantage"].tolist() == pytest.approx(
        [(3 * 1.5 - 3 * 0.5 + 2 * 2.0 + 3 * 0.25) / loss_tokens]
    )
    assert curves["reward/entropy"].tolist() == pytest.approx([(12 + 12 + 5 + 12) / loss_tokens])


def test_mismatch_values_follow_prime_rls_formulas(tmp_path):
    hand_export(tmp_path / "out")
    line = json.loads((tmp_path / "out/token_exports/step_7/rank_0.jsonl").read_text().splitlines()[0])
    t, i = np.array(line["trainer_logprobs"]), np.array(line["inference_logprobs"])
    r = np.exp(t - i)
    assert line["mismatch_kl"] == pytest.approx((r - (t - i) - 1).tolist())
    frame = run_view.step_frame(run_view.open_run(tmp_path / "out"), 7)
    assert frame["mismatch_kl"].iloc[0].tolist() == pytest.approx(line["mismatch_kl"][3:])


def test_a_step_folder_a_token_exports_folder_and_one_rank_file_open(tmp_path):
    hand_export(tmp_path / "out")
    exports = tmp_path / "out" / "token_exports"
    assert run_view.open_run(exports, tmp_path).steps() == [("train", 7)]
    assert run_view.open_run(exports / "step_7", tmp_path).steps() == [("train", 7)]
    one = run_view.open_run(exports / "step_7" / "rank_1.jsonl")
    assert one.kind == "prime-rl" and one.steps() == [("train", 7)]
    assert run_view.step_frame(one, 7)["completion_ids"].map(list).tolist() == [[21, 22], [17, 18, 19]]


def test_a_zip_of_an_export_uploads_with_its_step_folders(tmp_path):
    hand_export(tmp_path / "out")
    with zipfile.ZipFile(tmp_path / "run.zip", "w") as zf:
        for p in (tmp_path / "out").rglob("*.jsonl"):
            zf.write(p, str(p.relative_to(tmp_path)))
        zf.writestr("out/token_exports/step_7/STABLE", "")
        zf.writestr("../../rank_3.jsonl", "{}")  # no step folder: not placed
    path = run_uploads.extract_upload(tmp_path / "run.zip", tmp_path / "up", max_bytes=2**20)
    files = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
    assert files == ["token_exports/step_7/rank_0.jsonl", "token_exports/step_7/rank_1.jsonl"]
    assert run_view.open_run(path).kind == "prime-rl"
    single = run_uploads.extract_upload(tmp_path / "out/token_exports/step_7/rank_0.jsonl", tmp_path / "u2", 2**20)
    assert single.name == "rank_0.jsonl"


@pytest.fixture(scope="module")
def bundled():
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    return load_policy(str(BUNDLED_POLICY_DIR))


@pytest.fixture(scope="module")
def fixture_export(tmp_path_factory):
    torch.set_num_threads(1)
    return write_prime_rl_export(tmp_path_factory.mktemp("prime") / "run")


def test_the_export_replays_its_exact_ids_with_the_policy_that_wrote_it(fixture_export, bundled):
    run = run_view.open_run(fixture_export)
    assert run.kind == "prime-rl" and run.steps() == [("train", 1), ("train", 2)]
    frame = run_view.step_frame(run, 2)
    assert frame["group"].tolist() == [0] * 4 + [1] * 4 and frame["env_name"].tolist() == ["geo"] * 4 + ["colors"] * 4
    for group, (question, _, _) in enumerate(PROMPTS):
        record = run_view.completion_record(frame, 4 * group)
        messages, ids = run.format.rollout(record, bundled)
        assert messages == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        assert bundled.chat_ids(messages) == list(record["prompt_ids"])  # the decoded prompt renders to its ids
        assert ids == list(record["completion_ids"])
    record = run_view.completion_record(frame, 5)
    messages, ids = run.format.rollout(record, bundled)
    rel = run_replay.replayed_relevance(bundled, messages, ids, {"answer": "red"})
    assert rel.token_ids == ids and rel.scores.shape == (1, len(ids)) and float(rel.scores.max()) > 0.0
    streams, masks = prime_rl_runs.logged_streams(record)
    assert len(streams["entropy"]) == len(ids) and set(masks) == {"loss mask", "masked", "masked high", "masked low"}
    # step 2 carries rl weights (0.5 on the last token) and a ce stream: both channels shown
    assert streams["rl channel advantage"][-1] == pytest.approx(0.5 * record["advantage"])
    assert streams["ce channel weight"] == pytest.approx([0.1] * len(ids))


def test_the_cli_scores_an_export_with_typed_information(fixture_export, tmp_path, capsys):
    from mrtpo_viz.cli import main
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    out = tmp_path / "scores.jsonl"
    args = ["score", str(fixture_export), "--out", str(out), "--checkpoint", str(BUNDLED_POLICY_DIR)]
    assert main(args) == 0
    said = capsys.readouterr().out
    assert "scored 0 rollouts" in said and "skipped 16" in said and "give it (--info NAME=TEXT)" in said
    assert main([*args, "--info", "answer=the capital or the color asked for", "--info", "brevity=one word"]) == 0
    assert "scored 16 rollouts" in capsys.readouterr().out
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records[:2]] == ["step1-row0", "step1-row1"] and records[0]["task"] == "prime-rl"
    assert all(r["verifiers"] == ["answer", "brevity"] for r in records)
    first = json.loads((fixture_export / "token_exports/step_1/rank_0.jsonl").read_text().splitlines()[0])
    start = first["loss_mask"].index(True)
    assert records[0]["token_ids"] == first["token_ids"][start:]  # the exact exported ids, not re-tokenized text
    assert run_view.open_run(fixture_export).kind == "prime-rl"
