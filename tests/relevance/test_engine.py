"""The with/without-information replay on the tiny random-init policy (sharp outputs: initializer_range=0.2)."""

import math

import pytest
import torch

from mrtpo_viz.relevance.controls import _corrupted_infos, ControlInput
from mrtpo_viz.relevance.tokens import display_tokens
from mrtpo_viz.relevance.engine import plan_replay, replay, replay_variants
from mrtpo_viz.relevance.branches import branch_logits, reference_logits, shared_branches, tokenize_response
from mrtpo_viz.relevance.results import Relevance
from mrtpo_viz.tasks.base import Example, get_verifier
from mrtpo_viz.tasks.example_sources import load_examples
from mrtpo_viz.tasks.base import Verdict, Verifier

torch.set_num_threads(1)

PROMPT = "What is the weather in Paris for the next 3 days? Use the tool and answer with one call."
RESPONSE = ' <tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}</tool_call>'
INFOS = {
    "t.format": "The answer must be one JSON object inside <tool_call> tags.",
    "t.correct": "The gold call is get_weather with city Paris and days 3.",
}


def _verifier(name, title, score=1.0, spans=None):
    return Verifier(
        name=name,
        task="custom",
        title=title,
        description="test verifier",
        info_fn=lambda ex: ex.meta.get(name, ""),
        check_fn=lambda r, ex: Verdict(score, f"{name} says"),
        spans_fn=None if spans is None else (lambda r, ex: spans),
    )


FMT = _verifier("t.format", "Tool call format", 1.0, spans=[(1, 12)])
COR = _verifier("t.correct", "Correctness", 0.0)
EXAMPLE = Example(task="custom", prompt=PROMPT, meta=dict(INFOS), id="custom-0")


def _logp_of_response(logits, ids):
    """(B, T, V) logits, T ids -> (B, T) float32 log-probs of the actual tokens."""
    logp = logits.float().log_softmax(-1)
    return logp.gather(-1, torch.tensor(ids).expand(logits.shape[0], -1)[..., None]).squeeze(-1)


def test_fixture_model_is_sharp(tiny_policy):
    """Guard: a near-uniform model (entropy ~ log V) would hide mask and position bugs."""
    rel = replay(tiny_policy, PROMPT, RESPONSE, [FMT], infos=INFOS)
    assert rel.entropy.mean() < 0.8 * math.log(len(tiny_policy.tokenizer))


@pytest.mark.parametrize("position", ["user_end", "system"])
def test_cached_prefix_equals_full_recomputation(tiny_policy, position):
    plan = plan_replay(tiny_policy, PROMPT, RESPONSE, [FMT, COR], infos=INFOS, info_position=position)
    br = plan.branches
    assert br.B == 3
    if position == "user_end":
        assert len(br.prefix_ids) > 10  # the chat header and most of the user message are shared
    cached = _logp_of_response(branch_logits(tiny_policy.model, br, 0, "cpu"), br.response_ids)
    full = _logp_of_response(reference_logits(tiny_policy.model, br, "cpu"), br.response_ids)
    assert (cached - full).abs().max() < 1e-4
    assert full.std() > 1.0  # sharp: a mask or position bug would show as errors of several nats
    rel = replay(tiny_policy, PROMPT, RESPONSE, [FMT, COR], infos=INFOS, info_position=position)
    assert (rel.logp_without - full[0]).abs().max() < 1e-4
    assert (rel.logp_with - full[1:]).abs().max() < 1e-4


def test_split_ids_equal_whole_tokenization(tiny_policy):
    """Tokenizing the shared prefix and each rest separately gives the ids of each whole prompt text."""
    plan = plan_replay(tiny_policy, PROMPT, RESPONSE, [FMT, COR], infos=INFOS)
    tok = tiny_policy.tokenizer
    for b, text in enumerate(plan.texts):
        whole = tok(text, add_special_tokens=False)["input_ids"]
        assert plan.branches.prefix_ids + plan.branches.suffix_ids[b] == whole


@pytest.mark.parametrize("response", [RESPONSE, " leading space", "done<|im_end|> then more <|im_start|>user"])
def test_response_ids_identical_in_every_branch(tiny_policy, response):
    plan = plan_replay(tiny_policy, PROMPT, response, [FMT, COR], infos=INFOS)
    ids = tokenize_response(tiny_policy.tokenizer, response)
    T = len(ids)
    assert tiny_policy.tokenizer.eos_token_id not in ids  # "<|im_end|>" typed as text stays text
    for b in range(plan.branches.B):
        assert plan.branches.full_ids(b)[-T:] == ids
    rel = replay(tiny_policy, PROMPT, response, [FMT], infos=INFOS)
    assert rel.token_ids == ids and "".join(rel.tokens) == response == rel.response
    assert [response[s:e] for s, e in rel.offsets] == rel.tokens


def test_response_given_as_ids_is_used_as_is(tiny_policy):
    ids = [5, 77, 300, 2, 41]  # includes the eos id: given ids are never re-tokenized
    rel = replay(tiny_policy, PROMPT, ids, [FMT], infos=INFOS)
    assert rel.token_ids == ids and rel.scores.shape == (1, 5)


def test_k_verifiers_at_once_equal_one_at_a_time(tiny_policy):
    both = replay(tiny_policy, PROMPT, RESPONSE, [FMT, COR], infos=INFOS)
    for k, v in enumerate([FMT, COR]):
        one = replay(tiny_policy, PROMPT, RESPONSE, [v], infos=INFOS)
        assert torch.allclose(both.raw_scores[k], one.raw_scores[0], atol=1e-5)
        assert torch.allclose(both.logp_with[k], one.logp_with[0], atol=1e-4)
    assert both.raw_scores.mean() > 0.05  # the information really changes the sharp model's predictions


def test_variants_from_one_forward_equal_separate_replays(tiny_policy):
    """replay_variants shares the without/with branches between controls and metrics; each result equals its own
    replay. Tolerance 1e-5: the same logits from a batch of another size (a different padding and prefix cut),
    float32 rounding of the attention sums, whatever the CPU's kernels; the JS values here are ~0.1-0.9."""
    ex = load_examples("tool_calling", "test")[0]
    variants = [("js", "none"), ("js", "placebo"), ("js", "others"), ("kl", "none"), ("js", "corrupted")]
    many = replay_variants(tiny_policy, ex, ex.reference, list(ex.verifiers), variants + [("js", "none")])
    assert list(many) == variants  # a repeated variant is run once
    for metric, control in variants:
        one = replay(tiny_policy, ex, ex.reference, list(ex.verifiers), metric=metric, control=control)
        got = many[(metric, control)]
        assert (got.metric, got.control, got.token_ids) == (metric, control, one.token_ids)
        assert (got.scores - one.scores).abs().max() < 1e-5 and (got.raw_scores - one.raw_scores).abs().max() < 1e-5
        assert (got.logp_with - one.logp_with).abs().max() < 1e-4 and got.rewards == one.rewards
    assert many[("js", "none")].raw_scores.max() > 0.1  # the comparison is not between zeros
    assert not torch.equal(many[("js", "placebo")].scores, many[("js", "none")].scores)
    with pytest.raises(ValueError, match="at least one"):
        replay_variants(tiny_policy, ex, ex.reference, list(ex.verifiers), [])


def test_shared_branches_keeps_one_id_per_suffix():
    br = shared_branches([[1, 2, 3, 4], [1, 2, 3, 9, 9], [1, 2, 3, 4]], [7, 8])
    assert br.prefix_ids == [1, 2, 3] and br.suffix_ids == [[4], [9, 9], [4]]
    same = shared_branches([[1, 2], [1, 2]], [7])  # identical prompts: the last id still predicts the response
    assert same.prefix_ids == [1] and same.suffix_ids == [[2], [2]]


def test_empty_information_gives_zero_relevance(tiny_policy):
    rel = replay(tiny_policy, PROMPT, RESPONSE, [FMT, COR], infos={"t.format": "", "t.correct": INFOS["t.correct"]})
    assert rel.raw_scores[0].abs().max() < 1e-3  # float32 noise under a sqrt
    assert rel.raw_scores[1].mean() > 0.05
    assert rel.infos["t.format"] == ""


@pytest.mark.parametrize("metric", ["js", "kl", "tvd"])
def test_metrics_and_ranges(tiny_policy, metric):
    rel = replay(tiny_policy, PROMPT, RESPONSE, [FMT], infos=INFOS, metric=metric)
    assert rel.metric == metric and (rel.raw_scores >= 0).all()
    if metric != "kl":
        assert (rel.raw_scores <= 1).all()


def test_per_token_columns(tiny_policy):
    rel = replay(tiny_policy, EXAMPLE, RESPONSE, [FMT, COR], topk=3)
    T = rel.T
    assert rel.logp_with.shape == (2, T) and rel.logp_without.shape == (T,) and rel.entropy.shape == (T,)
    assert len(rel.top_without) == T and len(rel.top_with) == 2 and len(rel.top_with[0][0]) == 3
    probs = [p for _, p in rel.top_without[0]]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
    # the actual token's probability is at most the top-1 probability
    assert math.exp(rel.logp_without[0]) <= rel.top_without[0][0][1] + 1e-6
    assert rel.rewards == {"t.format": 1.0, "t.correct": 0.0}
    assert rel.reasons["t.correct"] == "t.correct says"
    assert rel.spans == {"t.format": [(1, 12)], "t.correct": None}
    assert rel.example_id == "custom-0" and rel.infos == INFOS
    assert set(rel.timings) == {"tokenize", "forward", "metric", "verify"}


def test_json_round_trip(tiny_policy):
    rel = replay(tiny_policy, EXAMPLE, RESPONSE, [FMT, COR], control="others")
    back = Relevance.from_json(rel.to_json())
    assert back.tokens == rel.tokens and back.token_ids == rel.token_ids and back.offsets == rel.offsets
    assert torch.allclose(back.scores, rel.scores) and torch.allclose(back.logp_with, rel.logp_with)
    assert back.top_with == rel.top_with and back.spans == rel.spans and back.control == "others"
    assert len(rel.to_frame()) == 2 * rel.T


def test_control_others(tiny_policy):
    raw = replay(tiny_policy, PROMPT, RESPONSE, [FMT, COR], infos=INFOS).raw_scores
    rel = replay(tiny_policy, PROMPT, RESPONSE, [FMT, COR], infos=INFOS, control="others")
    assert torch.allclose(rel.raw_scores, raw, atol=1e-6)
    assert torch.allclose(rel.scores[0], (raw[0] - raw[1]).clamp_min(0), atol=1e-6)
    assert torch.allclose(rel.scores[1], (raw[1] - raw[0]).clamp_min(0), atol=1e-6)
    one = replay(tiny_policy, PROMPT, RESPONSE, [FMT], infos=INFOS, control="others")
    assert torch.equal(one.scores, one.raw_scores)


def test_control_placebo(tiny_policy):
    rel = replay(tiny_policy, PROMPT, RESPONSE, [FMT, COR], infos=INFOS, control="placebo")
    assert (rel.scores <= rel.raw_scores + 1e-6).all() and (rel.scores >= 0).all()
    assert rel.scores.sum() < rel.raw_scores.sum() - 0.1  # a neutral block also moves a random model


def test_control_corrupted(tiny_policy):
    pool = [
        EXAMPLE,
        Example("custom", PROMPT, dict(INFOS), id="custom-1"),  # same information: skipped
        Example("custom", PROMPT, {"t.format": "Answer in plain prose.", "t.correct": "Use city Lima."}, id="custom-2"),
    ]
    c = ControlInput([FMT, COR], list(INFOS.values()), EXAMPLE, tiny_policy.tokenizer, pool)
    assert _corrupted_infos(c) == ["Answer in plain prose.", "Use city Lima."]
    rel = replay(tiny_policy, EXAMPLE, RESPONSE, [FMT, COR], control="corrupted", pool=pool)
    plain = replay(tiny_policy, EXAMPLE, RESPONSE, [FMT, COR])
    assert torch.allclose(rel.raw_scores, plain.raw_scores, atol=1e-6)
    assert not torch.allclose(rel.scores, rel.raw_scores, atol=1e-2)
    with pytest.raises(ValueError, match="no other example"):
        replay(tiny_policy, EXAMPLE, RESPONSE, [FMT], control="corrupted", pool=pool[:1])


def test_control_corrupted_borrows_another_verifiers_information_when_its_own_never_changes(tiny_policy):
    """An IFEval instruction without arguments has one information (its official description) in every example."""
    pool = load_examples("instruction_following", split="all")
    ex = next(e for e in pool if "ifeval.title" in e.verifiers)
    names = list(ex.verifiers)
    own = [get_verifier(n).info(ex) for n in names]
    got = _corrupted_infos(ControlInput([get_verifier(n) for n in names], own, ex, tiny_policy.tokenizer, pool))
    title = names.index("ifeval.title")
    assert all(g != o for g, o in zip(got, own)) and got[title] not in own
    assert got[title] in {get_verifier(n).info(e) for e in pool for n in e.verifiers if n != "ifeval.title"}
    with pytest.raises(ValueError, match="needs an Example"):
        replay(tiny_policy, PROMPT, RESPONSE, [FMT], infos=INFOS, control="corrupted")


def test_bad_input_messages(tiny_policy):
    with pytest.raises(ValueError, match="response is empty"):
        replay(tiny_policy, PROMPT, "", [FMT], infos=INFOS)
    with pytest.raises(KeyError, match="unknown verifier 'no.such'"):
        replay(tiny_policy, PROMPT, RESPONSE, ["no.such"], infos=INFOS)
    with pytest.raises(ValueError, match="no information for verifier 't.format'"):
        replay(tiny_policy, PROMPT, RESPONSE, [FMT])
    with pytest.raises(ValueError, match="unknown control"):
        replay(tiny_policy, PROMPT, RESPONSE, [FMT], infos=INFOS, control="bogus")
    with pytest.raises(ValueError, match="unknown metric"):
        replay(tiny_policy, PROMPT, RESPONSE, [FMT], infos=INFOS, metric="bogus")


def test_display_tokens_join_multibyte_characters(tiny_policy):
    text = " café ☃ ok"
    ids = tokenize_response(tiny_policy.tokenizer, text)
    tokens, offsets, joined = display_tokens(tiny_policy.tokenizer, ids)
    assert joined == text and "".join(tokens) == text and len(tokens) == len(ids)
    assert offsets[-1][1] == len(text)


def test_real_tool_calling_example_and_cli(tiny_policy_dir, tiny_policy, tmp_path, capsys):
    """The task-family verifiers on a bundled example: rewards, spans, token table and JSON output."""
    from mrtpo_viz.cli import main
    from mrtpo_viz.tasks.example_sources import load_examples

    example = load_examples("tool_calling")[0]
    rel = replay(tiny_policy, example, example.reference, list(example.verifiers))
    assert rel.rewards == {"tool_call.format": 1.0, "tool_call.correctness": 1.0}
    assert rel.spans["tool_call.format"][0] == (0, 11)  # the opening tag decides the format verdict
    assert any(rel.token_in_span("tool_call.correctness"))
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "replay",
                "--checkpoint",
                str(tiny_policy_dir),
                "--task",
                "tool_calling",
                "--example",
                "0",
                "--out",
                str(out),
                "--threads",
                "1",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "tool_call.format: reward 1.00" in printed and printed.count("\n") > rel.T
    back = Relevance.from_json(out.read_text())
    assert back.token_ids == rel.token_ids and torch.allclose(back.scores, rel.scores, atol=1e-6)


def test_the_placebo_control_does_not_warn_about_a_too_long_sequence(capfd):
    """The README's replay_variants example printed transformers' "(3649 > 2048) ... indexing errors" warning:
    the placebo's filler pool is tokenized once, longer than the context, but never fed to the model."""
    from mrtpo_viz import load_examples, load_policy
    from mrtpo_viz.relevance import replay_variants

    policy = load_policy("tiny-mrtpo")
    ex = load_examples("tool_calling", split="test")[0]
    capfd.readouterr()
    both = replay_variants(policy, ex, ex.reference, ["tool_call.correctness"], [("js", "none"), ("js", "placebo")])
    assert set(both) == {("js", "none"), ("js", "placebo")}
    said = capfd.readouterr()
    assert "indexing errors" not in said.err + said.out and "maximum sequence length" not in said.err + said.out
