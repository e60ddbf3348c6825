"""A chat template's default system prompt made explicit: found, rendered byte-identically, and with it the
``system`` position adds information to the default instead of dropping it, in generation and in the replay alike.
The tiny test policy gets a template with a default system prompt (as SmolLM2's and Qwen2.5's have); templates
without one (the tiny ChatML one, the bundled policy's) are left alone."""

import shutil

import pytest

from mrtpo_viz.policy.loading import load_policy
from mrtpo_viz.policy.model import PLAIN_CHAT_TEMPLATE, as_messages
from mrtpo_viz.policy.default_system import default_system_prompt, with_default_system
from mrtpo_viz.relevance.contexts import with_info
from mrtpo_viz.relevance.engine import plan_replay

DEFAULT = "You are a tiny test assistant."
TEMPLATE_WITH_DEFAULT = (
    "{% for m in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "<|im_start|>system\n" + DEFAULT + "<|im_end|>\n{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
INFOS = {"ifeval.lowercase": "Use lowercase letters only.", "ifeval.no_comma": "Do not use any commas."}
PROMPT = "Write two sentences about Rome."


@pytest.fixture(scope="module")
def default_policy(tiny_policy_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("default_system") / "policy"
    shutil.copytree(tiny_policy_dir, folder)
    (folder / "chat_template.jinja").write_text(TEMPLATE_WITH_DEFAULT)
    return load_policy(folder, device="cpu", dtype="float32")


def test_the_default_is_found_only_where_the_template_has_one(default_policy, tiny_policy):
    assert default_system_prompt(default_policy.tokenizer) == DEFAULT == default_policy.default_system
    assert default_system_prompt(tiny_policy.tokenizer) is None and tiny_policy.default_system is None
    bundled = load_policy("tiny-mrtpo", device="cpu", dtype="float32")
    assert bundled.default_system is None


def test_a_template_that_refuses_system_messages_has_no_default(tiny_policy, monkeypatch):
    tok = tiny_policy.tokenizer
    refusing = (
        "{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
        + TEMPLATE_WITH_DEFAULT
    )
    monkeypatch.setattr(tok, "chat_template", refusing)
    assert default_system_prompt(tok) is None
    monkeypatch.setattr(tok, "chat_template", PLAIN_CHAT_TEMPLATE)
    assert default_system_prompt(tok) is None


def test_made_explicit_it_renders_the_same(default_policy):
    tok, msgs = default_policy.tokenizer, as_messages(PROMPT)
    explicit = with_default_system(tok, msgs, DEFAULT)
    assert explicit == [{"role": "system", "content": DEFAULT}] + msgs and msgs == as_messages(PROMPT)
    assert default_policy.render(explicit) == default_policy.render(msgs)
    own = [{"role": "system", "content": "Be brief."}] + msgs
    assert with_default_system(tok, own, DEFAULT) == own  # a system message of its own stays as it is
    assert with_default_system(tok, msgs, "Not what the template says.") == msgs  # renders differently: unchanged
    assert default_policy.messages(PROMPT) == explicit


def test_templates_without_a_default_are_left_alone(tiny_policy):
    from mrtpo_viz.tasks import load_examples

    ex = load_examples("instruction_following", split="test")[0]
    assert tiny_policy.messages(ex) == ex.messages() and tiny_policy.messages(PROMPT) == as_messages(PROMPT)
    bundled = load_policy("tiny-mrtpo", device="cpu", dtype="float32")
    assert bundled.messages(ex) == ex.messages()
    plan = plan_replay(bundled, ex, ex.reference, list(ex.verifiers), info_position="system")
    assert plan.texts[0] == bundled.render(ex.messages())  # the bundled policy's replay is unchanged


def test_system_position_adds_to_the_default_in_every_branch(default_policy):
    """The branches differ by the information block only, and share the default system prompt as their prefix."""
    plan = plan_replay(default_policy, PROMPT, "a response.", list(INFOS), infos=INFOS, info_position="system")
    without = default_policy.render(as_messages(PROMPT))
    assert plan.texts[0] == without
    for v, info, text in zip(plan.verifiers, plan.infos, plan.texts[1:]):
        assert text == without.replace(DEFAULT, f"{DEFAULT}\n\n[Verifier: {v.title}] {info}")
    # the shared prefix runs to the last safe cut inside the default (before its last word); without the explicit
    # default the texts part right after "<|im_start|>system\n" and nothing is shared
    assert default_policy.tokenizer.decode(plan.branches.prefix_ids) == "<|im_start|>system\nYou are a tiny test"
    for b, text in enumerate(plan.texts):  # still the template's own ids, piece by piece
        ids = default_policy.tokenizer(text, add_special_tokens=False)["input_ids"]
        assert plan.branches.prefix_ids + plan.branches.suffix_ids[b] == ids


def test_without_the_explicit_default_the_branches_would_differ_by_more(default_policy):
    """What the explicit default prevents: a system message of information alone replaces the default."""
    from mrtpo_viz.relevance.branches import split_branches

    msgs = as_messages(PROMPT)
    without, with_block = (default_policy.render(with_info(msgs, b, "system")) for b in ([], [("Lowercase", "x")]))
    assert DEFAULT in without and DEFAULT not in with_block
    assert split_branches(default_policy.tokenizer, [without, with_block], [5]).prefix_ids == []


def test_generation_sees_the_prompt_the_replay_uses(default_policy):
    c = default_policy.generate(PROMPT, max_new_tokens=6, seed=0)
    assert c.prompt_ids == default_policy.chat_ids(as_messages(PROMPT))  # the same ids as before the change
    plan = plan_replay(default_policy, PROMPT, c.token_ids, list(INFOS), infos=INFOS, info_position="system")
    assert plan.branches.full_ids(0) == c.prompt_ids + c.token_ids
    assert all(plan.branches.full_ids(b)[-len(c.token_ids) :] == c.token_ids for b in range(plan.branches.B))
