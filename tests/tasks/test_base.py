"""Examples and the verifier registry: round trips, validation, and clear errors."""

import pytest

from mrtpo_viz.tasks.base import VERIFIERS, Example, Verdict, Verifier, get_verifier, list_verifiers, register


def _verifier(name="test.base_dummy", task="custom"):
    return Verifier(
        name=name,
        task=task,
        title="Dummy",
        description="scores the length",
        info_fn=lambda ex: "be short",
        check_fn=lambda r, ex: Verdict(float(len(r) < 5), "length"),
    )


def test_example_round_trip_and_messages():
    ex = Example("t", "hello", {"a": 1}, id="t-1", reference="hi", verifiers=("x.y",))
    assert Example.from_dict(ex.to_dict()) == ex
    assert ex.messages() == [{"role": "user", "content": "hello"}]
    chat = Example("t", [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    assert chat.messages() == chat.prompt and chat.messages() is not chat.prompt


def test_example_needs_task_and_prompt():
    with pytest.raises(ValueError, match="needs at least the fields 'task' and 'prompt'"):
        Example.from_dict({"prompt": "p"})


def test_register_get_list_and_duplicates():
    v = register(_verifier(), replace=True)
    try:
        assert get_verifier("test.base_dummy") is v and "test.base_dummy" in list_verifiers("custom")
        assert "test.base_dummy" not in list_verifiers("tool_calling")
        with pytest.raises(ValueError, match="already registered"):
            register(_verifier())
        assert v.score("abc", Example("custom", "p")) == 1.0 and v.relevant_spans("abc", None) is None
    finally:
        VERIFIERS.pop("test.base_dummy")


def test_unknown_verifier_lists_the_known_ones():
    with pytest.raises(KeyError, match="unknown verifier 'no.such'; known verifiers: .*tool_call.format"):
        get_verifier("no.such")


@pytest.mark.parametrize("name", ["", "has space"])
def test_verifier_names_are_dotted_without_spaces(name):
    with pytest.raises(ValueError, match="non-empty dotted name without spaces"):
        _verifier(name)


def test_arguments_read_and_set_meta_and_report_what_is_missing():
    from mrtpo_viz.tasks.base import Argument

    v = Verifier(
        "test.args",
        "custom",
        "Args",
        "needs a gold value",
        lambda ex: f"gold is {ex.meta['gold']}",
        lambda r, ex: Verdict(float(r == ex.meta["gold"]), "exact"),
        arguments=(Argument("gold", "Gold answer"), Argument("note", "Note", required=False)),
    )
    free = Example("custom", "a free prompt")
    assert v.missing_args(free) == ["gold"] and v.args(free) == {}
    filled = v.with_args(free, {"gold": "42"})
    assert v.missing_args(filled) == [] and v.args(filled) == {"gold": "42"} and v.info(filled) == "gold is 42"
    assert free.meta == {}  # the original example is unchanged
    with pytest.raises(ValueError, match=r"takes no argument\(s\) \['nope'\]"):
        v.with_args(free, {"nope": 1})
    with pytest.raises(ValueError, match="unknown argument kind"):
        Argument("x", "X", kind="colour")


def test_example_from_row_reads_trl_columns_and_json_meta():
    from mrtpo_viz.tasks.base import example_from_row

    msgs = [{"role": "user", "content": "hi"}]
    ex = example_from_row({"prompt": msgs, "task": "tool_calling", "id": "x1", "meta": '{"tool": "get_weather"}'})
    assert (ex.task, ex.id, ex.meta, ex.prompt) == ("tool_calling", "x1", {"tool": "get_weather"}, msgs)
    ex = example_from_row({"prompt": "hi", "gold": 3}, task="custom")
    assert (ex.task, ex.meta) == ("custom", {"gold": 3})  # no meta column: the other columns
    with pytest.raises(ValueError, match="JSON objects"):
        example_from_row({"prompt": "hi", "meta": "[1, 2]"})


def test_a_trl_verifier_keeps_its_reward_function():
    from mrtpo_viz.tasks import Example, Verifier

    def fn(completions, **kwargs):
        return [float(len(c)) for c in completions]

    v = Verifier.from_trl(fn, name="len", info="length")
    assert v.trl_reward is fn  # MRTPOTrainer hands it to TRL as is, batched
    assert v.score("abc", Example("custom", "p")) == 3.0
