"""The bundled tiny policy (sample_data/policies/tiny-mrtpo) and the code that builds it.

The policy tests use the committed checkpoint; the thresholds are set below what the committed policy measured
(numbers in the comments), so they catch a broken or untrained policy, not seed noise.
"""

import importlib.util
import json
import random
import sys

import pytest
import torch

from mrtpo_viz.sample_policy.build import (
    CHAT_TEMPLATE,
    IM_END,
    TinyPolicyConfig,
    _collate,
    build_tokenizer,
    encode,
    lr_at,
    sft_loss,
)
from mrtpo_viz.sample_policy.violations import VIOLATIONS
from mrtpo_viz.sample_policy.sft_data import (
    NoiseConfig,
    Pools,
    SftExample,
    build_sft_data,
    inject_error,
    make_sft_example,
)
from mrtpo_viz.tasks.bundled_data import SAMPLE_DATA
from mrtpo_viz.tasks.base import Example
from mrtpo_viz.tasks.example_sources import load_examples
from mrtpo_viz.tasks import get_verifier
from tests.apphelpers import REPO

POLICY_DIR = SAMPLE_DATA / "policies" / "tiny-mrtpo"
TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "description": "Temperature unit", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
}
WEATHER = Example(
    task="tool_calling",
    prompt="What's the weather in Oslo in celsius?",
    meta={
        "category": "simple",
        "functions": [TOOL],
        "possible_answer": [{"get_weather": {"city": ["Oslo"], "unit": ["celsius"]}}],
    },
    reference='<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}</tool_call>',
    verifiers=("tool_call.format", "tool_call.correctness"),
)
GOLD_ARGS = {"city": "Oslo", "unit": "celsius"}
POOLS = Pools(tool_values={("get_weather", "city"): ("Oslo", "Lima", "Paris")})


def _passes(response: str, ex: Example) -> dict:
    return {name: get_verifier(name).score(response, ex) >= 1.0 for name in ex.verifiers}


# --- training data ------------------------------------------------------------------------------------------------
def test_information_present_means_the_target_passes_its_verifier():
    cfg = NoiseConfig(p_info=1.0, p_content=1.0, p_format=1.0, p_nuisance=1.0)
    rng = random.Random(0)
    for _ in range(20):
        sft = make_sft_example(WEATHER, rng, cfg, POOLS)
        assert set(sft.present) == set(WEATHER.verifiers) and sft.noised == ()
        assert _passes(sft.response, WEATHER) == {"tool_call.format": True, "tool_call.correctness": True}
        assert (
            sft.messages[-1]["content"].count("[Verifier: ")
            + sum(m["content"].count("[Verifier: ") for m in sft.messages[:-1])
            == 2
        )


def test_absent_correctness_information_gives_one_wrong_value_and_a_valid_form():
    cfg = NoiseConfig(p_info=0.0, p_content=1.0, p_format=0.0, p_nuisance=0.0)
    sft = make_sft_example(WEATHER, random.Random(1), cfg, POOLS)
    assert sft.present == () and sft.noised == ("tool_call.correctness",)
    assert _passes(sft.response, WEATHER) == {"tool_call.format": True, "tool_call.correctness": False}
    got = json.loads(sft.response.removeprefix("<tool_call>").removesuffix("</tool_call>"))["arguments"]
    assert sum(got[k] != v for k, v in GOLD_ARGS.items()) == 1
    assert sft.messages == WEATHER.messages()  # no information block at all


def test_absent_format_information_breaks_only_the_form():
    cfg = NoiseConfig(p_info=0.0, p_content=0.0, p_format=1.0, p_nuisance=0.0)
    for seed in range(8):
        sft = make_sft_example(WEATHER, random.Random(seed), cfg, POOLS)
        assert sft.noised == ("tool_call.format",)
        assert not _passes(sft.response, WEATHER)["tool_call.format"]
        assert '"city": "Oslo"' in sft.response and '"unit": "celsius"' in sft.response


def test_instruction_violation_breaks_exactly_its_constraint():
    ex = next(e for e in load_examples("instruction_following", "test") if "ifeval.no_comma" in e.verifiers)
    cfg = NoiseConfig(p_info=0.0, p_violation=1.0)
    sft = make_sft_example(ex, random.Random(0), cfg, Pools())
    verdicts = _passes(sft.response, ex)
    assert sft.noised and all(not verdicts[n] for n in sft.noised)
    assert all(verdicts[n] for n in ex.verifiers if n not in sft.noised)


def test_every_violation_breaks_its_constraint_on_the_gold_responses():
    from mrtpo_viz.tasks.generators.instruction_following import NAMES
    from mrtpo_viz.tasks.ifeval import BY_ID

    assert set(VIOLATIONS) <= set(NAMES)
    broke, tried = {}, {}
    for ex in load_examples("instruction_following", split="test"):
        for c in ex.meta["constraints"]:
            name = BY_ID[c["id"]].short
            if name not in VIOLATIONS:
                continue
            out = VIOLATIONS[name](ex.reference, c["kwargs"], random.Random(0))
            tried[name] = tried.get(name, 0) + 1
            if out is not None and get_verifier(f"ifeval.{name}").score(out, ex) == 0.0:
                broke[name] = broke.get(name, 0) + 1
    assert set(tried) == set(VIOLATIONS)  # every violation is exercised by the test split
    # a violation may miss (None, or a change the verifier still accepts: the caller checks and retries), but rarely
    assert all(broke.get(n, 0) >= 0.65 * tried[n] for n in tried), (broke, tried)
    assert sum(broke.values()) >= 0.95 * sum(tried.values())


def test_injected_error_fails_the_verifier_at_an_argument_value():
    bad = inject_error(WEATHER, "tool_call.correctness", random.Random(0), POOLS)
    assert get_verifier("tool_call.correctness").score(bad, WEATHER) < 1.0
    at = next(i for i, (a, b) in enumerate(zip(bad, WEATHER.reference)) if a != b)
    spans = get_verifier("tool_call.correctness").relevant_spans(bad, WEATHER)
    assert any(a <= at < b for a, b in spans[1:])  # spans[0] is the tool name, the rest the argument values


def test_injected_errors_on_a_multi_call_example():
    """BFCL-style references (several blocks, possible answers instead of ``meta.arguments``): one value of one call
    changes, or the first block's form breaks; the other verifier still passes."""
    from mrtpo_viz.tasks.bfcl import make_example

    fn = {
        "name": "spotify.play",
        "parameters": {
            "type": "dict",
            "required": ["artist"],
            "properties": {"artist": {"type": "string"}, "duration": {"type": "integer"}},
        },
    }
    ex = make_example(
        {"id": "parallel_0", "function": [fn], "question": [[{"role": "user", "content": "q"}]]},
        [
            {"spotify.play": {"artist": ["Adele"], "duration": [20]}},
            {"spotify.play": {"artist": ["Queen"], "duration": [15, ""]}},
        ],
        "parallel",
    )
    fmt, cor = get_verifier("tool_call.format"), get_verifier("tool_call.correctness")
    for seed in range(8):
        bad = inject_error(ex, "tool_call.correctness", random.Random(seed))
        assert bad.count("<tool_call>") == 2 and cor.score(bad, ex) == 0.0 and fmt.score(bad, ex) == 1.0
        at = next(i for i, (a, b) in enumerate(zip(bad, ex.reference)) if a != b)
        assert any(a <= at < b for a, b in cor.relevant_spans(bad, ex)), (bad, at)  # the error sits in a value
        broken = inject_error(ex, "tool_call.format", random.Random(seed))
        assert fmt.score(broken, ex) == 0.0 and broken.endswith(ex.reference.split("\n")[1])


def test_content_error_changes_up_to_max_content_edits_values():
    cfg = NoiseConfig(p_info=0.0, p_content=1.0, p_format=0.0, p_nuisance=0.0, max_content_edits=2)
    changed = set()
    for seed in range(12):
        sft = make_sft_example(WEATHER, random.Random(seed), cfg, POOLS)
        got = json.loads(sft.response.removeprefix("<tool_call>").removesuffix("</tool_call>"))["arguments"]
        changed.add(sum(got[k] != v for k, v in GOLD_ARGS.items()))
    assert changed == {1, 2}


def test_training_data_is_deterministic_for_a_seed():
    def draw(seed):
        return [(x.messages, x.response) for x in build_sft_data({"tool_calling": 24}, seed=seed)]

    assert draw(3) == draw(3) and draw(3) != draw(4)


def test_bad_probabilities_and_sizes_are_rejected():
    with pytest.raises(ValueError, match="p_info"):
        NoiseConfig(p_info=1.5)
    with pytest.raises(ValueError, match="multiple of num_heads"):
        TinyPolicyConfig(hidden_size=130, num_heads=4)


# --- tokenizer, batches, loss -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_tokenizer():
    texts = [WEATHER.prompt, WEATHER.reference, "Write a short note about cats."] * 20
    return build_tokenizer(texts, vocab_size=400)


def test_chat_template_and_encoding_split_prompt_from_response(small_tokenizer):
    tok = small_tokenizer
    sft = SftExample(WEATHER.messages(), WEATHER.reference, (), (), WEATHER)
    ids, n_prompt = encode(tok, sft)
    assert tok.chat_template == CHAT_TEMPLATE
    assert tok.decode(ids[:n_prompt]) == f"<|im_start|>user\n{WEATHER.prompt}<|im_end|>\n<|im_start|>assistant\n"
    assert tok.decode(ids[n_prompt:]) == WEATHER.reference + IM_END
    assert ids[-1] == tok.eos_token_id and tok.pad_token_id == tok.bos_token_id


def test_collate_masks_prompt_and_padding():
    input_ids, labels = _collate([([5, 6, 7, 8], 2), ([9, 10], 1)], pad_id=0)
    assert input_ids.tolist() == [[5, 6, 7, 8], [9, 10, 0, 0]]
    assert labels.tolist() == [[-100, -100, 7, 8], [-100, 10, -100, -100]]


def test_training_is_deterministic_and_the_same_on_one_or_two_threads(small_tokenizer):
    """The build's weights depend on the seed only: two runs on the same threads give the same bytes, and one or two
    torch threads the same weights up to rounding (byte for byte on the AVX2 build machine, which is what let
    ``--threads 2`` rebuild the committed one-thread policy)."""
    from mrtpo_viz.sample_policy.build import build_model, train

    data = build_sft_data({"tool_calling": 40, "text_to_sql": 0, "instruction_following": 0}, seed=0)
    seqs = [encode(small_tokenizer, ex) for ex in data]
    cfg = TinyPolicyConfig(steps=4, warmup=2, tokens_per_batch=1024, max_len=256, vocab_size=400, seed=0)
    before = torch.get_num_threads()

    def weights(threads: int) -> list[torch.Tensor]:
        torch.set_num_threads(threads)
        torch.manual_seed(cfg.seed)
        model = build_model(cfg, small_tokenizer)
        train(model, seqs, cfg, small_tokenizer.pad_token_id, log_every=2)
        return [p.detach().clone() for p in model.parameters()]

    try:
        one, again, two = weights(1), weights(1), weights(2)
    finally:
        torch.set_num_threads(before)
    torch.manual_seed(cfg.seed)
    start = build_model(cfg, small_tokenizer)  # the same initial weights
    assert all(not torch.equal(a, b) for a, b in zip(one, start.parameters()))  # every tensor trained
    # Same threads, same kernels: every operation is deterministic, so the bits are the same (guaranteed).
    assert all(torch.equal(a, b) for a, b in zip(one, again))
    # One vs two threads: torch splits reductions (matmuls, sums) over threads as the CPU's kernels decide, so the
    # bits may differ (they did on an AVX-512/AMX Xeon; not on the AVX2 build machine). Rounding-level differences
    # then grow through the 4 AdamW steps, each of which moves a weight by at most about lr = 3e-3. Measured on the
    # build machine between its AVX2 and its portable kernels (ATEN_CPU_CAPABILITY=default vs avx2, same seed):
    # largest difference 2.9e-5, 12 of 1.09M weights beyond 1e-5, none beyond 1e-4. Allowed: a third of one step
    # (1e-3) and 0.1% of the weights beyond 1e-5; a real divergence (another batch order or seed) moves the weights
    # by about lr everywhere.
    diff = torch.cat([(a - b).abs().flatten() for a, b in zip(one, two)])
    print(
        "1 vs 2 threads: max", diff.max().item(), "weights beyond 1e-5:", int((diff > 1e-5).sum()), "of", diff.numel()
    )
    assert diff.max() < 1e-3
    assert int((diff > 1e-5).sum()) < 1e-3 * diff.numel()


def test_sft_loss_equals_the_full_logits_loss():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=50,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            initializer_range=0.2,
        )
    )
    input_ids, labels = _collate([([1, 2, 3, 4, 5, 6], 3), ([7, 8, 9], 1)], pad_id=0)
    logp = torch.log_softmax(model(input_ids=input_ids).logits[:, :-1].float(), dim=-1)  # (B, L-1, V)
    target = labels[:, 1:]
    keep = target != -100
    want = -logp[keep].gather(-1, target[keep][:, None]).mean()
    assert sft_loss(model, input_ids, labels).item() == pytest.approx(want.item(), rel=1e-5)


def test_learning_rate_warms_up_then_decays_to_a_tenth():
    cfg = TinyPolicyConfig(steps=1000, warmup=100, lr=1e-3)
    assert lr_at(0, cfg) == pytest.approx(1e-5)
    assert lr_at(99, cfg) == pytest.approx(1e-3)
    assert lr_at(550, cfg) == pytest.approx(1e-3 * (0.1 + 0.45))
    assert lr_at(1000, cfg) == pytest.approx(1e-4)


# --- the committed policy -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def policy():
    from mrtpo_viz.policy import load_policy

    return load_policy(str(POLICY_DIR))


def test_committed_policy_is_small_complete_and_a_chat_model(policy):
    size = sum(f.stat().st_size for f in POLICY_DIR.iterdir() if f.is_file())
    config = json.loads((POLICY_DIR / "config.json").read_text())
    assert size < 25e6 and policy.n_params < 3_000_000
    assert config["model_type"] == "llama" and config["bos_token_id"] == policy.tokenizer.bos_token_id
    assert (POLICY_DIR / "model.safetensors").is_file() and "toy" in (POLICY_DIR / "README.md").read_text()
    assert policy.render([{"role": "user", "content": "hi"}]).endswith("<|im_start|>assistant\n")


def test_greedy_generation_is_a_parseable_tool_call(policy):
    for ex in load_examples("tool_calling", "test")[:3]:
        text = policy.generate(ex, temperature=0, max_new_tokens=96).text
        assert get_verifier("tool_call.format").score(text, ex) == 1.0, text
        call = json.loads(text[text.index("{") : text.rindex("}") + 1])
        assert set(call) == {"name", "arguments"}


N_RELEVANCE = 16
PEAK_IN_VALUES_MIN = 0.8  # committed policy: the raw JS peak sits in the argument values for 16 of 16
P_GOLD_GAIN_MIN = 0.08  # committed policy: mean p(gold) on the values 0.857 without, 0.951 with (+0.095)


@pytest.fixture(scope="module")
def correctness_replays(policy):
    from mrtpo_viz.relevance.engine import replay

    examples = load_examples("tool_calling", "test")[:N_RELEVANCE]
    return [(ex, replay(policy, ex, ex.reference, ["tool_call.correctness"])) for ex in examples]


def _value_tokens(ex, rel) -> torch.Tensor:
    """(T,) bool: tokens inside the argument values (the correctness spans after the tool name)."""
    spans = get_verifier("tool_call.correctness").relevant_spans(ex.reference, ex)[1:]
    return torch.tensor([any(a < e and s < b for a, b in spans) for s, e in rel.offsets])


def test_correctness_relevance_peaks_inside_the_argument_values(correctness_replays):
    hits = [bool(_value_tokens(ex, rel)[rel.raw_scores[0].argmax()]) for ex, rel in correctness_replays]
    assert sum(hits) / len(hits) >= PEAK_IN_VALUES_MIN, hits


def test_correctness_information_raises_p_gold_on_the_values(correctness_replays):
    gains = []
    for ex, rel in correctness_replays:
        mask = _value_tokens(ex, rel)
        gains.append((rel.logp_with[0][mask].exp().mean() - rel.logp_without[mask].exp().mean()).item())
    assert sum(gains) / len(gains) >= P_GOLD_GAIN_MIN, gains
    assert sum(g > 0 for g in gains) >= len(gains) - 2, gains  # committed policy: 15 of the 16 gains


def test_benchmark_auroc_is_the_rank_statistic():
    spec = importlib.util.spec_from_file_location("localization", REPO / "benchmarks" / "localization.py")
    loc = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = loc  # its dataclasses look their module up
    spec.loader.exec_module(loc)
    assert loc.auroc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == pytest.approx(0.75)
    assert loc.auroc([1.0, 1.0, 1.0], [True, False, False]) == pytest.approx(0.5)
    assert loc.auroc([3.0, 1.0], [False, True]) == 0.0
    assert loc.mean_rank([0.2, 0.9, 0.9, 0.1], 1) == 1.5 and loc.mean_rank([0.2, 0.9, 0.9, 0.1], 3) == 4


def test_model_card_names_the_one_command_that_rebuilds_every_stage():
    from mrtpo_viz.sample_policy.evaluate import _commands

    def stage(steps, seed, init_from=None):
        return {"config": {"steps": steps, "seed": seed, "threads": 1, "init_from": init_from}}

    out = "sample_data/policies/tiny-mrtpo"
    assert _commands([stage(2000, 0), stage(2500, 1, out), stage(1500, 2, out)], out) == (
        "python -m mrtpo_viz make-sample-policy --stages 2000,2500,1500 --seed 0 --threads 1 --out " + out
    )
    # a continuation of a policy built elsewhere cannot be rebuilt by one command: one line per stage
    lines = _commands([stage(300, 4, "/elsewhere")], out).splitlines()
    assert lines == [
        "python -m mrtpo_viz make-sample-policy --steps 300 --seed 4 --threads 1 --init-from /elsewhere --out " + out
    ]


def test_make_sample_policy_plans_the_default_stages(monkeypatch, tmp_path):
    import argparse

    import mrtpo_viz.sample_policy.build as sp
    import mrtpo_viz.sample_policy.evaluate as ev
    from mrtpo_viz.cli.commands import make_sample_policy

    calls = []
    monkeypatch.setattr(
        sp,
        "build",
        lambda cfg, out, noise, checkpoint_every: (
            calls.append((cfg.steps, cfg.seed, cfg.init_from, noise.max_content_edits, cfg.lr)) or (None, None, {})
        ),
    )
    monkeypatch.setattr(ev, "evaluate", lambda model, tok, seed: {})
    monkeypatch.setattr(ev, "write_model_card", lambda *a: None)
    args = argparse.Namespace(out=str(tmp_path), steps=None, stages=None, seed=3, threads=1, init_from=None)
    assert make_sample_policy(args) == 0
    assert calls == [(2000, 3, None, 1, 3e-3), (2500, 4, str(tmp_path), 4, 3e-3), (1500, 5, str(tmp_path), 1, 1e-3)]
    calls.clear()
    assert make_sample_policy(argparse.Namespace(**{**vars(args), "steps": 50})) == 0  # --steps: one stage
    assert calls == [(50, 3, None, 1, 3e-3)]
    calls.clear()
    assert make_sample_policy(argparse.Namespace(**{**vars(args), "stages": "10,20,30,40"})) == 0  # later stages: the
    # last's
    assert [c[0] for c in calls] == [10, 20, 30, 40] and calls[3][3:] == (1, 1e-3)
