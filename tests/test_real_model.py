"""The real model (SmolLM2-135M-Instruct, fetched by ``python -m mrtpo_viz get-model smollm2-135m-instruct``): the
replay's separately tokenized pieces give exactly the ids of the model's own chat template, for both information
positions, with the response ids the same in every branch; plus load, generation and replay smoke tests.

Without the model these skip with the command that fetches it; with ``MRTPO_REQUIRE_REAL_MODEL=1`` (CI) they fail.
"""

from __future__ import annotations

import pytest
import torch

from mrtpo_viz.policy import known
from mrtpo_viz.policy.loading import load_policy
from mrtpo_viz.policy.model import as_messages
from mrtpo_viz.relevance.branches import branch_logits, reference_logits, tokenize_response
from mrtpo_viz.relevance.contexts import with_info
from mrtpo_viz.relevance.engine import plan_replay, replay
from mrtpo_viz.tasks import get_verifier, load_examples

from .policy.gguf_files import skip_or_fail

pytestmark = pytest.mark.real_model

KEY = "smollm2-135m-instruct"
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


@pytest.fixture(scope="module")
def policy():
    if not known.is_downloaded(KEY):
        skip_or_fail(
            f"{KEY} is not in the models cache ({known.model_dir(KEY)}): run "
            f"`python -m mrtpo_viz get-model {KEY}` once (~35 s, 520 MB)"
        )
    torch.set_num_threads(1)
    return load_policy(KEY, device="cpu", dtype="float32")


def template_ids(tok, messages) -> list[int]:
    """The model's own chat template, tokenized by transformers itself."""
    out = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    ids = out["input_ids"] if not isinstance(out, list) else out
    return list(ids[0] if ids and isinstance(ids[0], list) else ids)


def _prompts():
    out = [
        (
            "free",
            "What is the capital of France?",
            {"ifeval.lowercase": "Use lowercase only.", "ifeval.no_comma": "No commas at all, 1 2 3."},
        )
    ]
    for task in ("instruction_following", "tool_calling", "text_to_sql"):
        out += [(ex.id, ex, None) for ex in load_examples(task, split="test")[:3]]
    system = [
        {"role": "system", "content": "You answer in one short sentence."},
        {"role": "user", "content": "Name a colour.  "},
    ]
    multi = [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Count to 5: \u0661\u0662 x\u00b2"},
    ]
    odd = {"ifeval.lowercase": "\n\nleading newlines, trailing space ", "ifeval.no_comma": ""}  # "" adds no block
    return out + [("system-msg", system, odd), ("multi-turn", multi, odd)]


PROMPTS = _prompts()
RESPONSES = [
    "The capital of France is Paris.",
    " leading space, then <|im_end|> as text\n\n",
    "\n\n12345 caf\u00e9 \U0001f600",
    '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>',
]


def _expected_messages(prompt, vs, infos, position) -> list[list[dict]]:
    """Each branch's messages as the template itself sees them: for ``user_end`` the plain messages (the template adds
    its default system prompt on its own), for ``system`` the default made explicit and the information merged in."""
    base = as_messages(prompt)
    if position == "system" and base[0]["role"] != "system":
        base = [{"role": "system", "content": DEFAULT_SYSTEM}] + base
    return [with_info(base, [], position)] + [
        with_info(base, [(v.title, i)] if i else [], position) for v, i in zip(vs, infos)
    ]


@pytest.mark.parametrize("position", ["user_end", "system"])
@pytest.mark.parametrize("case", PROMPTS, ids=[p[0] for p in PROMPTS])
def test_branch_ids_are_the_chat_template_ids(policy, case, position):
    _, prompt, infos = case
    tok = policy.tokenizer
    names = list(infos) if infos else list(prompt.verifiers)
    for response in RESPONSES + [getattr(prompt, "reference", None)]:
        if not response:
            continue
        plan = plan_replay(policy, prompt, response, names, infos=infos, info_position=position)
        br, resp_ids = plan.branches, tokenize_response(tok, response)
        assert br.response_ids == resp_ids
        msgs = _expected_messages(prompt, plan.verifiers, plan.infos, position)
        assert br.B == len(msgs) == len(names) + 1
        for b, m in enumerate(msgs):
            expected = template_ids(tok, m)
            assert plan.texts[b] == tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False)
            assert br.full_ids(b) == expected + resp_ids, f"branch {b} differs from the chat template's ids"
            assert expected == policy.chat_ids(m)  # what generate() feeds the model


@pytest.mark.parametrize("position", ["user_end", "system"])
@pytest.mark.parametrize("control", ["placebo", "corrupted"])
def test_control_branches_are_exact_too(policy, position, control):
    ex = load_examples("instruction_following", split="test")[1]
    plan = plan_replay(policy, ex, ex.reference, list(ex.verifiers), info_position=position, control=control)
    K = len(plan.verifiers)
    assert plan.branches.B == 2 * K + 1
    extra = _expected_messages(ex, plan.verifiers, plan.extra_infos, position)[1:]
    for k, m in enumerate(extra):
        assert plan.branches.full_ids(K + 1 + k) == template_ids(policy.tokenizer, m) + plan.branches.response_ids


@pytest.mark.parametrize("position", ["user_end", "system"])
def test_generated_ids_replay_exactly(policy, position):
    """The policy's own sampled ids (not re-tokenized text) follow the exact generation prompt in every branch."""
    prompt = "Write one sentence about the sea. Use only lowercase letters."
    c = policy.generate(prompt, max_new_tokens=24, temperature=0.7, seed=1)
    infos = {"ifeval.lowercase": "Only lowercase letters.", "ifeval.no_comma": "No commas."}
    plan = plan_replay(policy, prompt, c.token_ids, list(infos), infos=infos, info_position=position)
    assert plan.branches.full_ids(0) == c.prompt_ids + c.token_ids  # "without" is what the model saw
    for b in range(plan.branches.B):
        assert plan.branches.full_ids(b)[-len(c.token_ids) :] == c.token_ids


def test_the_template_default_system_prompt_is_kept_in_every_branch(policy):
    """SmolLM2's template adds its default system prompt when there is no system message; the system position now
    merges the information into it, so the branches differ by the information only and share a prefix."""
    tok = policy.tokenizer
    text = tok.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True, tokenize=False)
    assert (
        text == f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert policy.default_system == DEFAULT_SYSTEM
    ex = load_examples("instruction_following", split="test")[0]
    infos = {v: get_verifier(v).info(ex) for v in ex.verifiers}
    plan = plan_replay(policy, ex, ex.reference, list(ex.verifiers), infos=infos, info_position="system")
    assert plan.texts[0] == policy.render(ex.messages())  # "without" unchanged
    for v, info, t in zip(plan.verifiers, plan.infos, plan.texts[1:]):
        assert t == plan.texts[0].replace(DEFAULT_SYSTEM, f"{DEFAULT_SYSTEM}\n\n[Verifier: {v.title}] {info}")
    assert len(plan.branches.prefix_ids) > 10  # "<|im_start|>system\n<most of the default>" is shared


def test_special_tokens_and_the_repaired_pre_tokenizer(policy):
    tok = policy.tokenizer
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == ("<|im_start|>", "<|im_end|>", "<|im_end|>")
    assert tok("Hi")["input_ids"] == tok("Hi", add_special_tokens=False)["input_ids"]  # no BOS is added
    assert policy.stop_ids() == {2}
    assert tok.convert_ids_to_tokens(tok(" 12 \u0661\u0662", add_special_tokens=False)["input_ids"]) == [
        "\u0120",
        "1",
        "2",
        "\u0120",
        "\u00d9",
        "\u00a1",
        "\u00d9",
        "\u00a2",
    ]  # every digit alone ('smollm')


@pytest.mark.parametrize("position", ["user_end", "system"])
def test_batched_logits_match_full_forward(policy, position):
    """Prefix cache expanded to the branches + right-padded suffixes == each branch alone, no cache (30 layers,
    grouped-query attention with 3 KV heads)."""
    ex = load_examples("tool_calling", split="test")[0]
    plan = plan_replay(policy, ex, ex.reference, list(ex.verifiers), info_position=position)
    fast = branch_logits(policy.model, plan.branches, policy.pad_id, policy.device).float()
    ref = reference_logits(policy.model, plan.branches, policy.device).float()
    assert fast.shape == ref.shape
    # float32 through 30 layers in another summation order (cached prefix, padded batch): measured <= 6e-5 on an AMD
    # EPYC; 2e-3 leaves room for other CPUs' kernels while a wrong mask or position gives errors of whole logits
    assert (fast - ref).abs().max().item() < 2e-3
    assert torch.equal(fast.argmax(-1), ref.argmax(-1))


def test_load_and_the_model_card(policy):
    assert policy.n_params == 134_515_008 and policy.describe() == "134.5M params, float32, cpu"
    assert policy.model.config.model_type == "llama" and policy.model.config.tie_word_embeddings
    folder = known.model_dir(KEY)
    marker = known.read_marker(folder)
    assert marker["gguf_sha256"] == known.KNOWN_MODEL_SPECS[KEY].sha256 and marker["license"] == "Apache-2.0"
    assert "license: apache-2.0" in (folder / "README.md").read_text()


def test_greedy_generation(policy):
    c = policy.generate("What is the capital of France?", max_new_tokens=16, temperature=0)
    assert c.text == "The capital of France is Paris."
    assert c.prompt_ids == policy.chat_ids(as_messages("What is the capital of France?"))


def test_replay_smoke(policy):
    ex = load_examples("instruction_following", split="test")[0]
    rel = replay(policy, ex, ex.reference, list(ex.verifiers), info_position="user_end")
    K, T = len(ex.verifiers), len(tokenize_response(policy.tokenizer, ex.reference))
    assert rel.scores.shape == (K, T) and torch.isfinite(rel.scores).all()
    assert 0 <= rel.scores.min() and rel.scores.max() <= 1 and rel.scores.max() > 0.01
    assert set(rel.rewards) == set(ex.verifiers) and all(r == 1.0 for r in rel.rewards.values())  # the gold passes
