"""The example pickers: a task family's test examples, a free prompt, and the prompt box's text."""

from __future__ import annotations

import dataclasses
import functools

from ..tasks import Example, load_examples
from .input_limits import check_text, limits

FREE_PROMPT = -1
"""The example index of a free prompt: no example, the verifiers' arguments typed into their fields."""
FREE_LABEL = "free prompt: type a prompt, fill each verifier's fields"
MAX_EXAMPLES = 40
"""Examples listed per task family in the pickers."""


@functools.cache
def examples(task: str) -> tuple[Example, ...]:
    """The first test examples of a task family (read once per process)."""
    return tuple(load_examples(task, split="test")[:MAX_EXAMPLES])


def example_choices(task: str) -> list[tuple[str, int]]:
    """Dropdown choices ``(label, index)``: the test examples, then a free prompt (``FREE_PROMPT``)."""
    try:
        exs = examples(task)
    except (FileNotFoundError, ValueError):
        exs = ()
    return [(f"{i}: {prompt_text(ex)[:70]}", i) for i, ex in enumerate(exs)] + [(FREE_LABEL, FREE_PROMPT)]


def first_example(choices) -> int | None:
    """The index the pickers start at: the first real example, else the free prompt."""
    return choices[0][1] if choices else None


def free_example(task: str) -> Example:
    """A free prompt of a task family: no meta, so each verifier needs its arguments typed in."""
    return Example(task=task, prompt="", id="free prompt")


def get_example(task: str, index) -> Example:
    """The picked example, or an empty free prompt (``FREE_PROMPT``)."""
    try:
        index = int(index)
    except (TypeError, ValueError):
        raise ValueError(f"No example {index!r} in {task}: pick one from the list.") from None
    if index == FREE_PROMPT:
        check_task(task)
        return free_example(task)
    exs = examples(task)
    if not 0 <= index < len(exs):
        raise ValueError(f"No example {index} in {task}: pick one of 0..{len(exs) - 1} or the free prompt.")
    return exs[index]


def check_task(task: str) -> None:
    """A ValueError naming the known task families unless ``task`` is one of them."""
    from ..names import TASKS, check_choice

    check_choice("task family", task, TASKS)


def prompt_text(example: Example) -> str:
    """The last user message: what the prompt box shows and edits."""
    users = [m["content"] for m in example.messages() if m.get("role") == "user"]
    return users[-1] if users else ""


def with_prompt(example: Example, text: str) -> Example:
    """The example with its last user message replaced by ``text`` (a free prompt keeps the verifiers' meta)."""
    text = check_text("prompt", text, limits().max_chars)
    if text == prompt_text(example):
        return example
    msgs = example.messages()
    last = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=None)
    if last is None:
        msgs.append({"role": "user", "content": text})
    else:
        msgs[last]["content"] = text
    return dataclasses.replace(example, prompt=msgs, reference=None, id=f"{example.id} (edited)")
