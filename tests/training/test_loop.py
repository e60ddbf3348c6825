"""The training loop on the tiny random-init policy: learning, method equivalence, resume, the comparison report.

The Live training tab's generator is tested in tests/ui/test_training_tab.py."""

import csv
import math

import pytest
import torch

from mrtpo_viz.training.metrics import StepMetrics
from mrtpo_viz.tasks.base import Example
from mrtpo_viz.training.config import TrainConfig
from mrtpo_viz.training.loop import train
from mrtpo_viz.tasks import Verdict, Verifier, register

torch.set_num_threads(1)

LETTER = "e"


def _share_of_letter(response: str, example) -> Verdict:
    share = response.count(LETTER) / max(len(response), 1)
    return Verdict(min(1.0, 4 * share), f"{share:.0%} of the characters are {LETTER!r}")


def _brevity(response: str, example) -> Verdict:
    return Verdict(1.0 if len(response) <= 20 else 0.0, f"{len(response)} characters")


register(
    Verifier(
        "test.letter_e",
        "custom",
        "Letter e",
        "Rewards responses made of the letter e.",
        lambda ex: f"Use the letter {LETTER} as often as you can.",
        _share_of_letter,
    ),
    replace=True,
)
register(
    Verifier(
        "test.brief",
        "custom",
        "Brief",
        "Rewards responses of at most 20 characters.",
        lambda ex: "Answer in at most 20 characters.",
        _brevity,
    ),
    replace=True,
)


def _examples(verifiers=("test.letter_e",), n=4):
    return [
        Example("custom", f"Write something about the weather in city {i}.", id=f"ex{i}", verifiers=tuple(verifiers))
        for i in range(n)
    ]


def _config(tmp_path=None, **kw):
    base = dict(
        task="custom",
        method="gdpo",
        group_size=4,
        prompts_per_step=2,
        steps=2,
        lr=1e-3,
        max_new_tokens=12,
        seed=0,
        threads=1,
    )
    base.update(kw)
    if tmp_path is not None:
        base["out_dir"] = str(tmp_path)
    return TrainConfig(**base)


def _params(policy_run):
    return torch.cat([p.detach().flatten() for p in policy_run.policy.model.parameters()])


# --- learning ------------------------------------------------------------------------------------------------------


def test_seeded_steps_raise_the_mean_reward(tiny_policy):
    cfg = _config(method="grpo", steps=10, group_size=8, prompts_per_step=2, lr=1e-2, max_new_tokens=10)
    curve = [m.rewards["test.letter_e"] for m in train(cfg, examples=_examples(), policy=tiny_policy)]
    first, last = sum(curve[:3]) / 3, sum(curve[-3:]) / 3
    print("letter-e reward per step:", [round(r, 3) for r in curve])
    assert last > first + 0.15, curve


def test_a_step_yields_full_metrics(tiny_policy):
    cfg = _config(method="gdpo", steps=1)
    (m,) = list(train(cfg, examples=_examples(("test.letter_e", "test.brief")), policy=tiny_policy))
    assert isinstance(m, StepMetrics) and m.step == 0 and m.method == "gdpo"
    assert set(m.rewards) == {"test.letter_e", "test.brief"}
    assert all(0.0 <= r <= 1.0 for r in m.rewards.values())
    assert 0 < m.mean_length <= cfg.max_new_tokens + 1
    assert set(m.times) == {"sample", "score", "replay", "advantages", "update"}
    assert math.isnan(m.relevance_mean)  # GDPO does not replay
    assert m.clip_frac == 0.0  # one update per batch: ratio 1
    assert m.grad_norm > 0 and 0.0 <= m.truncated <= 1.0  # the pre-clip norm and the cut share are logged
    assert m.to_row()["grad_norm"] == m.grad_norm
    s = m.sample
    assert len(s["tokens"]) == len(s["adv"]) and s["text"] and set(s["rewards"]) <= set(m.rewards)


def test_the_shared_policy_is_not_trained(tiny_policy):
    before = torch.cat([p.detach().flatten().clone() for p in tiny_policy.model.parameters()])
    list(train(_config(steps=1, lr=1e-2), examples=_examples(), policy=tiny_policy))
    after = torch.cat([p.detach().flatten() for p in tiny_policy.model.parameters()])
    assert torch.equal(before, after)


# --- validation ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"method": "ppo"}, "unknown method"),
        ({"control": "nothing"}, "unknown control"),
        ({"group_size": 1}, "group_size"),
        ({"temperature": 0.0}, "temperature"),
        ({"alpha": 1.5}, "alpha"),
        ({"clip_eps": 0.0}, "clip_eps"),
        ({"lr": -1.0}, "lr"),
        ({"save_every": 2}, "out_dir"),
        ({"metric": "cosine"}, "unknown metric"),
        ({"info_position": "middle"}, "unknown info_position"),
    ],
)
def test_config_rejects_bad_values(kw, words):
    with pytest.raises(ValueError, match=words):
        TrainConfig(**kw)


def test_unknown_task_and_weights_are_reported(tiny_policy):
    with pytest.raises(ValueError, match="unknown task"):
        next(train(TrainConfig(task="chess"), policy=tiny_policy))
    cfg = _config(reward_weights=(("test.nope", 2.0),))
    with pytest.raises(ValueError, match="test.nope"):
        next(train(cfg, examples=_examples(), policy=tiny_policy))


# --- relevance: the batched group replay equals the replay -----------------------------------------------------------


@pytest.mark.parametrize("control", ["none", "placebo", "others"])
def test_group_relevance_equals_replay_per_completion(tiny_policy, control):
    from mrtpo_viz.relevance.engine import replay
    from mrtpo_viz.training.group_replay import group_relevance

    ex = _examples(("test.letter_e", "test.brief"))[0]
    group = tiny_policy.generate_group(ex, 3, max_new_tokens=9, temperature=1.0, seed=5)
    responses = [c.token_ids + [tiny_policy.tokenizer.eos_token_id] for c in group]
    got = group_relevance(tiny_policy, ex, responses, ["test.letter_e", "test.brief"], control=control)
    assert got.shape == (3, 2, max(len(r) for r in responses))
    for g, ids in enumerate(responses):
        want = replay(tiny_policy, ex, ids, ["test.letter_e", "test.brief"], control=control).scores
        assert torch.allclose(got[g, :, : len(ids)], want, atol=2e-5), (got[g], want)
        assert torch.all(got[g, :, len(ids) :] == 0)
    assert got.max() > 0.01  # the sharp random-init model does react to the information


@pytest.mark.parametrize("control", ["none", "placebo"])
def test_training_forward_serves_as_the_no_information_branch(tiny_policy, control, monkeypatch):
    """The training forward's logits replace the replay's no-information branch: same relevance, one branch less."""
    import mrtpo_viz.training.group_replay as tr
    from mrtpo_viz.training.rollouts import rollout_relevance, sample_rollouts, token_logprobs

    ex = _examples(("test.letter_e", "test.brief"))[:2]
    rollouts = sample_rollouts(tiny_policy, ex, 3, seeds=[1, 2], max_new_tokens=9, temperature=1.0, top_p=1.0)
    names = ["test.letter_e", "test.brief"]
    full = rollout_relevance(tiny_policy, rollouts, names, metric="js", control=control, info_position="user_end")
    seen = []
    real = tr.branch_logits_for_group
    monkeypatch.setattr(
        tr, "branch_logits_for_group", lambda model, br, *a, **kw: seen.append(br.B) or real(model, br, *a, **kw)
    )
    _, logits = token_logprobs(
        tiny_policy.model,
        rollouts,
        tiny_policy.tokenizer.pad_token_id or 0,
        tiny_policy.device,
        temperature=0.7,
        return_logits=True,
    )
    assert logits.shape[:2] == (6, rollouts.T) and not logits.requires_grad
    reused = rollout_relevance(
        tiny_policy, rollouts, names, metric="js", control=control, info_position="user_end", without_logits=logits
    )
    assert seen == [2 if control == "none" else 4] * 2  # K (+ K placebo) branches: no-information one skipped
    assert full.abs().max() > 0.01
    assert torch.allclose(reused, full, atol=2e-5), (reused - full).abs().max()
    # prompt ids that are not the replay's no-information context: the branch is computed, not borrowed
    seen.clear()
    rollouts.prompt_ids[0] = rollouts.prompt_ids[0][:-1]
    rollout_relevance(
        tiny_policy, rollouts, names, metric="js", control=control, info_position="user_end", without_logits=logits
    )
    assert seen[0] == seen[1] + 1


def test_sampling_prompt_cache_serves_the_replay_prefix(tiny_policy, monkeypatch):
    """The prompt pass of sampling serves the replay's shared prefix: same relevance, no prefix forward."""
    import dataclasses

    import mrtpo_viz.training.group_replay as tr
    from mrtpo_viz.policy.kvcache import cache_length
    from mrtpo_viz.training.rollouts import rollout_relevance, sample_rollouts

    ex = _examples(("test.letter_e", "test.brief"))[:2]
    rollouts = sample_rollouts(tiny_policy, ex, 3, seeds=[1, 2], max_new_tokens=9, temperature=1.0, top_p=1.0)
    assert [cache_length(c) for c in rollouts.prompt_caches] == [len(p) for p in rollouts.prompt_ids]
    names = ["test.letter_e", "test.brief"]
    prefix_runs = []
    real = tr.prefix_cache
    monkeypatch.setattr(tr, "prefix_cache", lambda *a: prefix_runs.append(1) or real(*a))
    fresh = rollout_relevance(
        tiny_policy,
        dataclasses.replace(rollouts, prompt_caches=None),
        names,
        metric="js",
        control="none",
        info_position="user_end",
    )
    assert len(prefix_runs) == 2
    cached = rollout_relevance(tiny_policy, rollouts, names, metric="js", control="none", info_position="user_end")
    assert len(prefix_runs) == 2  # no prefix forward this time
    assert fresh.abs().max() > 0.01
    assert torch.allclose(cached, fresh, atol=2e-5), (cached - fresh).abs().max()
    assert [cache_length(c) for c in rollouts.prompt_caches] == [len(p) for p in rollouts.prompt_ids]  # untouched
    # a cache of other ids (here: a different first token) is not used
    rollouts.prompt_ids[0] = [rollouts.prompt_ids[0][0] + 1] + rollouts.prompt_ids[0][1:]
    rollout_relevance(tiny_policy, rollouts, names, metric="js", control="none", info_position="user_end")
    assert len(prefix_runs) == 3


# --- one verifier, alpha = 0: the three methods give the same update ------------------------------------------------


def _one_step_params(tiny_policy, **kw):
    from mrtpo_viz.training.loop import setup_run, train_step

    run = setup_run(_config(steps=1, prompts_per_step=1, group_size=6, lr=1e-3, **kw), _examples(), tiny_policy)
    m = train_step(run, 0)
    return _params(run), m


def test_one_verifier_alpha_zero_gives_identical_updates(tiny_policy):
    start = torch.cat([p.detach().flatten() for p in tiny_policy.model.parameters()])
    grpo, m = _one_step_params(tiny_policy, method="grpo")
    gdpo, _ = _one_step_params(tiny_policy, method="gdpo")
    mrtpo, m_mrtpo = _one_step_params(tiny_policy, method="mrtpo", alpha=0.0)
    assert m.adv_absmax > 0.5  # the group's rewards differ: there is an update to compare
    assert (grpo - start).abs().max() > 1e-4
    # MRTPO at alpha = 0 is GDPO to the bit: w = 1 exactly, so the same operations run on the same numbers, on any
    # CPU (the code guarantees it).
    assert torch.equal(mrtpo, gdpo)
    # GRPO's advantages equal GDPO's up to a scale of 1 + O(eps) with one prompt per step, and AdamW's first step
    # lr * g / (|g| + eps_adam) divides a common scale out -- except for a weight whose gradient is near Adam's eps
    # or is float rounding noise of the backward pass. Rounding depends on the CPU's kernels (2.1e-5 on an
    # AVX-512/AMX Xeon, 3.0e-5 with ATEN_CPU_CAPABILITY=default, under 2e-5 with AVX2), and such a weight can move by
    # anything up to lr in each run: the only bound that holds on every CPU is 2 * lr. What the test rests on is the
    # count: those weights are rare (under 0.1%), while a real difference (the alpha = 1 control below) moves over
    # 5% of them by more than 1e-7, and the largest by over 0.5 * lr.
    diff = (gdpo - grpo).abs()
    print("gdpo vs grpo: max", diff.max().item(), "weights over 1e-7:", int((diff > 1e-7).sum()), "of", diff.numel())
    assert diff.max() <= 2 * 1e-3
    assert int((diff > 1e-7).sum()) < 1e-3 * grpo.numel()
    assert m_mrtpo.relevance_mean > 0  # MRTPO did replay; alpha = 0 ignores it
    # A control that the comparison can fail: relevance-weighted credit (alpha = 1) moves the parameters elsewhere.
    weighted, _ = _one_step_params(tiny_policy, method="mrtpo", alpha=1.0)
    print("alpha=1 vs gdpo", (weighted - gdpo).abs().max().item(), int(((weighted - gdpo).abs() > 1e-7).sum()))
    assert (weighted - gdpo).abs().max() > 0.5 * 1e-3
    assert int(((weighted - gdpo).abs() > 1e-7).sum()) > 0.05 * grpo.numel()


# --- checkpoints: kill and resume ----------------------------------------------------------------------------------


def _csv_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_kill_and_resume_continues_the_run(tiny_policy, tmp_path):
    ex = _examples()
    whole = [m.to_row() for m in train(_config(steps=4), examples=ex, policy=tiny_policy)]
    # Crash after step 2 (index 2): the checkpoint of save_every=2 holds 2 steps, the CSV already 3 rows.
    cfg = _config(tmp_path, steps=4, save_every=2)
    first = train(cfg, examples=ex, policy=tiny_policy)
    assert [next(first).step for _ in range(3)] == [0, 1, 2]
    first.close()
    assert len(_csv_rows(tmp_path / "metrics.csv")) == 3
    assert (tmp_path / "checkpoints" / "LATEST").read_text() == "step-000002"
    # A kill in the middle of a later save leaves temporary files behind; they must be ignored.
    (tmp_path / "checkpoints" / ".step-000004.tmp-999").mkdir()
    (tmp_path / ".metrics.csv.tmp-999").write_text("step,meth")
    resumed = [m.to_row() for m in train(cfg, examples=ex, policy=tiny_policy)]
    assert [r["step"] for r in resumed] == [2, 3]
    rows = _csv_rows(tmp_path / "metrics.csv")
    assert [int(r["step"]) for r in rows] == [0, 1, 2, 3]
    # Same prompts, seeds and optimizer state: the resumed steps are the uninterrupted run's steps.
    for got, want in zip(resumed, whole[2:]):
        assert got["reward/test.letter_e"] == pytest.approx(want["reward/test.letter_e"], abs=1e-6)
        assert got["loss"] == pytest.approx(want["loss"], abs=1e-6)
    assert list(train(cfg, examples=ex, policy=tiny_policy)) == []  # finished: nothing left to do


def test_corrupted_or_foreign_checkpoint_is_reported(tiny_policy, tmp_path):
    from mrtpo_viz.training.checkpoints import CheckpointError

    cfg = _config(tmp_path, steps=1, save_every=1)
    list(train(cfg, examples=_examples(), policy=tiny_policy))
    with pytest.raises(CheckpointError, match="another run"):
        next(train(_config(tmp_path, steps=2, save_every=1, method="grpo"), examples=_examples(), policy=tiny_policy))
    weights = tmp_path / "checkpoints" / "step-000001" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="corrupted"):
        next(train(_config(tmp_path, steps=2, save_every=1), examples=_examples(), policy=tiny_policy))


# --- the comparison report -----------------------------------------------------------------------------------------


def _hand_frame():
    import pandas as pd

    rows = []
    curves = {"fast": [0.1, 0.5, 0.9, 0.9], "slow": [0.1, 0.2, 0.3, 0.6]}
    for variant, ys in curves.items():
        for seed, shift in ((0, 0.0), (1, 0.1)):
            for step, y in enumerate(ys):
                rows.append(
                    {
                        "variant": variant,
                        "seed": seed,
                        "step": step,
                        "reward/mean": y + shift,
                        "all_pass": y / 2,
                        "reward/a": y,
                        "time/sample": 1.0,
                        "time/replay": 0.5,
                    }
                )
    return pd.DataFrame(rows)


def test_summary_counts_steps_to_threshold_and_final_rewards():
    from mrtpo_viz.training.report import steps_to_threshold, summarize

    df = _hand_frame()
    hits = steps_to_threshold(df, 0.5, window=1).set_index(["variant", "seed"])["steps"]
    assert hits[("fast", 0)] == 2 and hits[("fast", 1)] == 2  # 0.5 at step 1 -> 2 steps; 0.6 at step 1
    assert hits[("slow", 0)] == 4 and hits[("slow", 1)] == 4  # 0.6 / 0.7 first at step 3
    assert steps_to_threshold(df, 2.0, window=1)["steps"].isna().all()
    s = summarize(df, threshold=0.5, window=1)
    fast = s["variants"]["fast"]
    assert fast["final"]["reward/mean"]["mean"] == pytest.approx(0.95)  # last step: 0.9 and 1.0
    assert fast["final"]["reward/mean"]["std"] == pytest.approx(0.05)
    assert fast["steps_to_threshold"] == {"mean": 2.0, "per_seed": [2, 2], "reached": 2, "runs": 2}
    assert fast["step_seconds"] == pytest.approx(1.5)
    # default threshold: half-way from the start (0.15) to the best final (0.95)
    assert summarize(df, window=1)["threshold"] == pytest.approx(0.55)


def test_kl_penalty_is_zero_at_the_start_and_grows_after_an_update(tiny_policy):
    cfg = _config(method="gdpo", steps=2, lr=1e-2, kl_coef=0.1)
    first, second = list(train(cfg, examples=_examples(), policy=tiny_policy))
    assert first.kl == pytest.approx(0.0, abs=1e-6)  # the policy is still the reference
    assert second.kl > 1e-4


@pytest.mark.parametrize("method", ["mrtpo:oracle", "entropy", "mrtpo:oracle-mask", "mrtpo:placebo-mask"])
def test_the_study_baselines_train_a_step_with_their_own_token_inputs(tiny_policy, method, monkeypatch):
    import mrtpo_viz.training.rollouts as ro

    calls = []
    real = ro.span_masks
    monkeypatch.setattr(ro, "span_masks", lambda *a: calls.append("spans") or real(*a))
    m = next(train(_config(method=method, steps=1), examples=_examples(), policy=tiny_policy))
    assert m.method == method and math.isfinite(m.loss) and m.times["replay"] >= 0
    assert calls == ([] if method == "entropy" else ["spans"])  # the placebo draws spans of the oracle's sizes
    assert m.adv_absmax > 0  # the letter-e reward varies within a group: some credit moves


def test_span_masks_mark_the_tokens_of_each_verifiers_spans(tiny_policy):
    from mrtpo_viz.tasks import load_examples
    from mrtpo_viz.training.rollouts import Rollouts, span_masks

    ex = load_examples("tool_calling")[0]
    ids = tiny_policy.tokenizer(ex.reference, add_special_tokens=False)["input_ids"]
    ro = Rollouts([ex], [[ex.reference]], [[1]], [[ids]])
    masks = span_masks(ro, ["tool_call.format", "tool_call.correctness", "test.letter_e"], tiny_policy.tokenizer)
    assert masks.shape == (1, 1, 3, len(ids))
    toks = [tiny_policy.tokenizer.decode([i]) for i in ids]
    marked = "".join(t for t, m in zip(toks, masks[0, 0, 0].tolist()) if m)
    assert "<tool_call>" in marked.replace(" ", "") or "tool_call" in marked  # the opening tag is a format span
    assert masks[0, 0, 1].sum() > 0 and masks[0, 0, 2].sum() == 0  # the example does not use test.letter_e


def test_a_step_on_multi_call_bfcl_examples(tiny_policy):
    """BFCL-style examples (two expected calls, any order; the functions in the system message) train like any
    other: both tool-call verifiers score every completion and MRTPO replays them."""
    from mrtpo_viz.tasks.bfcl import make_example

    fn = {
        "name": "spotify.play",
        "description": "Play songs.",
        "parameters": {
            "type": "dict",
            "required": ["artist"],
            "properties": {"artist": {"type": "string"}, "duration": {"type": "integer"}},
        },
    }
    examples = [
        make_example(
            {
                "id": f"parallel_{i}",
                "function": [fn],
                "question": [
                    [{"role": "user", "content": f"Play artist {i} for {i} minutes and artist {i + 1} for 5."}]
                ],
            },
            [
                {"spotify.play": {"artist": [f"artist {i}"], "duration": [i]}},
                {"spotify.play": {"artist": [f"artist {i + 1}"], "duration": [5, ""]}},
            ],
            "parallel",
        )
        for i in range(2)
    ]
    assert all(ex.reference.count("<tool_call>") == 2 for ex in examples)
    cfg = _config(task="bfcl", method="mrtpo", steps=1, group_size=2, max_new_tokens=12)
    (m,) = list(train(cfg, examples=examples, policy=tiny_policy))
    assert set(m.rewards) == {"tool_call.format", "tool_call.correctness"}
    assert all(0.0 <= r <= 1.0 for r in m.rewards.values())  # no NaN: the examples give what both verifiers need
    assert m.relevance_mean > 0


def test_a_line_stop_ends_a_rollout_like_its_own_end(tiny_policy, monkeypatch):
    """``stop_after_lines``: a row the line count ended gets end-of-sequence appended and is not truncated; a row
    that ran to ``max_new_tokens`` without reaching the count has no end-of-sequence and is truncated."""
    import mrtpo_viz.policy.sampling as sampling
    from mrtpo_viz.training.rollouts import sample_rollouts

    monkeypatch.setattr(type(tiny_policy), "stop_ids", lambda self: {tiny_policy.tokenizer.eos_token_id})
    monkeypatch.setattr(sampling._NewlineCounter, "__call__", lambda self, t: int(t % 5 == 0))
    monkeypatch.setattr(
        type(tiny_policy.tokenizer), "decode", lambda self, ids, **kw: "\n" * sum(i % 5 == 0 for i in ids)
    )
    ex = _examples(n=2)
    r = sample_rollouts(
        tiny_policy, ex, 4, seeds=[1, 2], max_new_tokens=12, temperature=1.0, top_p=1.0, stop_after_lines=2
    )
    eos, kinds = tiny_policy.tokenizer.eos_token_id, set()
    for rows, cut in zip(r.response_ids, r.truncated):
        for ids, c in zip(rows, cut):
            body = ids[:-1] if ids[-1] == eos else ids
            lines = sum(t % 5 == 0 for t in body)
            if c:  # ran to the cap with fewer than two line ends
                assert len(ids) == 12 and ids[-1] != eos and lines < 2
            else:  # ended by the second line end (or its own eos): eos appended
                assert ids[-1] == eos and (lines == 2 and body[-1] % 5 == 0 or len(body) < 12)
            kinds.add(c)
    assert kinds == {True, False}  # with these seeds some rows reach two line ends in 12 tokens, some do not
