"""Chat templates in the limited sandbox: the same text as transformers' apply_chat_template, and limits that stop
loops and oversized values."""

import time

import pytest

from mrtpo_viz.policy.model import PLAIN_CHAT_TEMPLATE
from mrtpo_viz.policy.template_sandbox import MAX_TEMPLATE_CHARS, TemplateLimitError, compile_template, render
from tests.conftest import TINY_CHAT_TEMPLATE

TOOLS = (
    "{%- set ns = namespace(sys='', n=0) -%}{%- for m in messages -%}{%- if m.role == 'system' -%}"
    "{%- set ns.sys = m.content | trim -%}{%- continue -%}{%- endif -%}{%- set ns.n = ns.n + 1 -%}"
    "{{ '<|im_start|>' ~ m.role ~ '\\n' }}{{ m.content.split('\\n') | join(' / ') }}"
    "{%- if m.role not in ['user', 'assistant'] %}{{ raise_exception('bad role ' ~ m.role) }}{% endif -%}"
    "<|im_end|>\n{%- if loop.last and ns.sys %}[{{ ns.sys | tojson }} {{ ns.n }} {{ eos_token }}]{% endif %}"
    "{%- endfor -%}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    "{% generation %}{{ (messages | length) * 2 }}{% endgeneration %}"
)
"""Namespaces, loop controls, tojson, raise_exception, ``~``, filters, methods, the generation tag."""
MESSAGES = [
    [{"role": "user", "content": "hi"}],
    [
        {"role": "system", "content": 'Be "brief".\n'},
        {"role": "user", "content": "hi\nthere <b> é 😀"},
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "again"},
    ],
]


@pytest.mark.parametrize("source", [TINY_CHAT_TEMPLATE, PLAIN_CHAT_TEMPLATE, TOOLS])
@pytest.mark.parametrize("messages", MESSAGES)
def test_renders_as_transformers_does(tiny_policy, source, messages):
    tok = tiny_policy.tokenizer
    want = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, chat_template=source)
    assert render(source, messages, add_generation_prompt=True, **tok.special_tokens_map) == want


BOMBS = {
    "nested_ranges": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "time budget",
    ),
    "string_times_huge": ("{{ 'x' * 10**10 }}", "multiplies a string"),
    "list_times_huge": ("{{ ([1] * 1000000) * 1000 }}", "multiplies a string or list"),
    "concat_doubling": ("{% set s = 'x' %}" + "{% set s = s ~ s %}" * 40, "joins (~) a string"),
    "namespace_doubling": (
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "adds up to an oversized value",
    ),
    "macro_doubling": (
        "{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% endif %}{% endmacro %}{{ d('x', 40) }}",
        "joins (~) a string",
    ),
    "center": ("{{ 'x' | center(10000000000) }}", "passes 10,000,000,000 to the filter center"),
    "format_method": ("{{ '{:>1000000000}'.format(1) }}", "str.format"),
    "percent_width": ("{{ '%0*d' % (1000000000, 1) }}", "passes 1,000,000,000 to the % operator"),
    "replace_growth": ("{% set s = 'x' * 3000 %}{{ s.replace('x', s).replace('x', s) }}", "replace() would build"),
    "join_growth": ("{% set s = 'x' * 3000000 %}{{ [s, s] | join }}", "join would build"),
    "recursion": ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "RecursionError"),
    "raises": ("{{ raise_exception('unsupported role') }}", "unsupported role"),
    "syntax": ("{% for m in messages %}", "does not compile"),
    "too_long": ("x" * (MAX_TEMPLATE_CHARS + 1), "at most 65,536"),
}


@pytest.mark.parametrize("kind", list(BOMBS))
def test_limits_stop_hostile_templates(kind):
    source, says = BOMBS[kind]
    start = time.monotonic()
    with pytest.raises(TemplateLimitError, match=says.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        render(source, MESSAGES[0])
    assert time.monotonic() - start < 10.0  # the budget is 2 s; slack for a loaded machine


def test_compiled_templates_are_cached():
    assert compile_template(TINY_CHAT_TEMPLATE) is compile_template(TINY_CHAT_TEMPLATE)
