"""One completion of a run as a token view: from the example run's per-token log (nothing recomputed), and replayed
on demand for a plain TRL run (the same completions with only TRL's file), against the library's own numbers."""

import json
import shutil

import pytest
import torch

from mrtpo_viz.integrations import run_replay, run_view, trl_log
from mrtpo_viz.tasks import get_verifier, load_examples

NAMES = ["tool_call.format", "tool_call.correctness"]


def test_the_logged_view_is_the_log(trl_example_run):
    frame = run_view.step_frame(run_view.open_run(trl_example_run[1]), 1)
    record = run_view.completion_record(frame, 3)
    view = run_replay.logged_view(record, NAMES)
    T = len(record["tokens"])
    assert view.source == "logged" and view.relevance.scores.shape == (2, T)
    assert view.relevance.scores[1].tolist() == pytest.approx(record["relevance/tool_call.correctness"], abs=1e-7)
    assert view.relevance.token_ids == record["completion_ids"]
    br = view.breakdown
    assert br.gdpo == pytest.approx(record["advantage"])
    assert br.mrtpo.tolist() == pytest.approx(record["token_advantages"], abs=1e-7)
    assert (br.parts.sum(0) + br.baseline - br.mrtpo).abs().max() <= 1e-6  # the stacks add up to what trained
    assert set(view.relevance.rewards) <= set(NAMES)
    with pytest.raises(ValueError, match="no per-token log"):
        run_replay.logged_view({"advantage": 0.0}, NAMES)


def test_a_plain_run_is_replayed_on_demand(trl_example_run, tmp_path):
    """The example's completions as a plain TRL run (TRL's files only): the replay with the information found for
    the bundled prompt and the untrained policy gives, within float rounding, step 1's logged relevance (where the
    text re-tokenizes to the sampled ids) and MRTPO advantages whose mean is TRL's advantage."""
    from mrtpo_viz.policy import load_policy

    shutil.copytree(trl_example_run[1] / "completions", tmp_path / "plain" / "completions")
    plain = run_view.open_run(tmp_path / "plain")
    assert plain.kind == "trl" and run_view.reward_names(plain) == NAMES
    frame = run_view.step_frame(plain, 1)
    logged = run_view.step_frame(run_view.open_run(trl_example_run[1]), 1)
    policy = load_policy("tiny-mrtpo", device="cpu", dtype="float32")
    checked = 0
    for row in range(len(frame)):
        record = run_view.completion_record(frame, row)
        infos = run_replay.guess_infos(json.loads(record["messages"]), NAMES)
        assert set(infos) == set(NAMES) and infos["tool_call.correctness"].startswith("The correct call is")
        view = run_replay.replayed_view(policy, frame, record, NAMES, infos)
        br = view.breakdown
        assert br.gdpo == pytest.approx(record["advantage"], abs=1e-5)  # ours vs TRL's GDPO (float32)
        assert float(br.mrtpo.mean()) == pytest.approx(br.gdpo, abs=1e-5)
        log = run_view.completion_record(logged, row)
        if (
            view.relevance.token_ids == log["completion_ids"][: len(view.relevance.token_ids)]
            and len(view.relevance.token_ids) == len(log["completion_ids"]) - 1
        ):  # the log also holds the EOS
            want = torch.tensor([log[trl_log.relevance_column(n)][:-1] for n in NAMES])
            assert (view.relevance.scores - want).abs().max() <= 1e-4  # one replay vs the batched group replay
            checked += 1
    assert checked >= 4


def test_guess_and_parse_infos():
    ex = load_examples("tool_calling", split="test")[2]
    infos = run_replay.guess_infos(ex.messages(), NAMES + ["my_reward"])
    assert infos == {n: get_verifier(n).info(ex) for n in NAMES}
    assert run_replay.guess_infos([{"role": "user", "content": "nothing bundled"}], NAMES) == {}
    assert run_replay.guess_infos(ex.messages(), ["my_reward"]) == {}
    text = "tool_call.format: be one block\n\ntool_call.correctness:   call f(x)  "
    assert run_replay.parse_infos(text, NAMES) == {
        "tool_call.format": "be one block",
        "tool_call.correctness": "call f(x)",
    }
    with pytest.raises(ValueError, match="not understood: 'other'"):
        run_replay.parse_infos("other: text", NAMES)
    with pytest.raises(ValueError, match="not understood: 'no colon here'"):
        run_replay.parse_infos("no colon here", NAMES)
    with pytest.raises(ValueError, match="at least one reward's information"):
        run_replay.parse_infos("tool_call.format:   ", NAMES)


def test_step_breakdown_uses_the_whole_step():
    """Two groups: the batch statistics span both (a one-group breakdown would differ)."""
    import pandas as pd

    from mrtpo_viz.advantages import mrtpo_token_advantages

    rewards = [[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
    frame = pd.DataFrame(
        {
            "row": range(4),
            "group": [0, 0, 1, 1],
            "reward/a": [r[0] for r in rewards],
            "reward/b": [r[1] for r in rewards],
        }
    )
    rel = torch.tensor([[0.1, 0.9, 0.0], [0.5, 0.5, 0.5]])
    br = run_replay.step_breakdown(frame, {"row": 2}, ["a", "b"], rel)
    full = torch.ones(2, 2, 2, 3)
    full[1, 0] = rel
    want = mrtpo_token_advantages(torch.tensor(rewards).view(2, 2, 2), full, torch.ones(2, 2, 3))[1, 0]
    assert br.mrtpo.tolist() == pytest.approx(want.tolist(), abs=1e-6)
    with pytest.raises(ValueError, match="differ in size"):
        run_replay.step_breakdown(frame.assign(group=[0, 0, 0, 1]), {"row": 2}, ["a", "b"], rel)
