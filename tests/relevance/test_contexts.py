"""How verifier information enters a prompt: positions, templates, and templates that are refused."""

import pytest

from mrtpo_viz.relevance.contexts import DEFAULT_INFO_TEMPLATE, render_info, with_info

MSGS = [{"role": "user", "content": "Hi."}]


def test_user_end_appends_each_block_to_the_last_user_message():
    out = with_info(
        MSGS + [{"role": "assistant", "content": "Yes?"}, {"role": "user", "content": "Go."}],
        [("A", "one"), ("B", "two")],
    )
    assert out[-1]["content"] == "Go.\n\n[Verifier: A] one\n\n[Verifier: B] two" and out[0] == MSGS[0]


def test_system_adds_or_merges_a_system_message():
    assert with_info(MSGS, [("A", "one")], "system")[0] == {"role": "system", "content": "[Verifier: A] one"}
    merged = with_info([{"role": "system", "content": "Be kind."}] + MSGS, [("A", "one")], "system")
    assert merged[0]["content"] == "Be kind.\n\n[Verifier: A] one" and len(merged) == 2


def test_no_blocks_is_a_copy_and_the_input_is_never_changed():
    out = with_info(MSGS, [])
    assert out == MSGS and out[0] is not MSGS[0]
    with_info(MSGS, [("A", "x")])
    assert MSGS == [{"role": "user", "content": "Hi."}]


@pytest.mark.parametrize("template", ["{info.__class__}", "{info:>100000000}", "{other}", "{0}", "{info!r}"])
def test_templates_beyond_title_and_info_are_refused(template):
    with pytest.raises(ValueError, match="use only {title} and {info}"):
        render_info("A", "x", template)


def test_bad_position_and_no_user_message():
    with pytest.raises(ValueError, match="unknown info_position 'middle'"):
        with_info(MSGS, [("A", "x")], "middle")
    with pytest.raises(ValueError, match="no user message"):
        with_info([{"role": "system", "content": "s"}], [("A", "x")])
    assert render_info("T", "i") == DEFAULT_INFO_TEMPLATE.format(title="T", info="i")


@pytest.mark.parametrize("template", ["[Verifier: {title}]", "no fields at all", ""])
def test_a_template_without_info_is_refused(template):
    with pytest.raises(ValueError, match=r"it needs the field \{info\}"):
        render_info("A", "x", template)
    assert render_info("A", "x", "{info}") == "x"
