"""A loaded policy: a causal language model with its tokenizer, and sampling from it.

``Policy.generate`` / ``Policy.generate_group`` sample with a hand-written loop (one prompt pass, the KV cache
expanded to the G rows without copying, then one token per step; :mod:`.sampling`) so that the exact generated ids
come back.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Optional, Union

import torch

from ..tasks.base import Example
from .padding import pad_id
from .default_system import default_system_prompt, with_default_system

PLAIN_CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}{{ m['content'] }}\n\n"
    "{% elif m['role'] == 'user' %}User: {{ m['content'] }}\n"
    "{% else %}Assistant: {{ m['content'] }}\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}Assistant: {% endif %}"
)
"""The fallback chat template for tokenizers that have none: ``System\\n\\nUser: ...\\nAssistant: ``."""

PromptLike = Union[Example, str, list]


@dataclass(frozen=True)
class Completion:
    """One sampled response."""

    text: str
    """Decoded response text (special tokens skipped)."""
    token_ids: list[int]
    """The exact generated ids, without the end-of-sequence token and padding."""
    prompt_ids: list[int] = field(default_factory=list)
    """The prompt ids the response continues (chat template with the generation prompt)."""


@dataclass
class Policy:
    """A loaded causal LM with its tokenizer."""

    model: Any
    tokenizer: Any
    name: str
    device: torch.device
    dtype: torch.dtype

    @functools.cached_property
    def max_token_chars(self) -> int:
        """Characters of the longest token of the vocabulary (its stored form, which is at least as long as the
        text it decodes to): a text of ``n`` characters has at least ``n / max_token_chars`` tokens."""
        vocab = self.tokenizer.get_vocab() if hasattr(self.tokenizer, "get_vocab") else {}
        return max((len(t) for t in vocab), default=1) or 1

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def pad_id(self) -> int:
        """The id that fills padded positions (see :func:`.padding.pad_id`)."""
        return pad_id(self.tokenizer)

    def describe(self) -> str:
        """E.g. ``"1.0M params, float32, cpu"``."""
        n = self.n_params
        size = f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.1f}M"
        return f"{size} params, {str(self.dtype).removeprefix('torch.')}, {self.device.type}"

    @cached_property
    def default_system(self) -> Optional[str]:
        """The system prompt the chat template adds when a conversation has none (None for most templates)."""
        return default_system_prompt(self.tokenizer)

    def messages(self, example_or_prompt: PromptLike) -> list[dict[str, str]]:
        """The chat messages of a prompt as this policy sees them: :func:`as_messages`, with the template's default
        system prompt made explicit (it renders the same; see :mod:`.default_system`). Generation and the replay both
        start from these, so verifier information in the ``system`` position adds to the default instead of
        silently replacing it."""
        return with_default_system(self.tokenizer, as_messages(example_or_prompt), self.default_system)

    def chat_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """Prompt ids of ``messages`` rendered with the chat template and the generation prompt (assistant header);
        specials typed in the messages are text (:mod:`.specials`)."""
        return self.encode(self.render_marked(messages))

    def render_marked(self, messages: list[dict[str, str]]) -> str:
        """The chat template as text, ending with the generation prompt, with typed specials marked (what
        :meth:`encode` tokenizes). Rendered in the limited sandbox of :mod:`.template_sandbox`."""
        from . import specials, template_sandbox

        source = self.tokenizer.chat_template or PLAIN_CHAT_TEMPLATE  # as load_policy sets it where none is given
        if isinstance(source, dict):  # named templates: transformers uses 'default'
            source = source.get("default", "")
        try:
            return template_sandbox.render(
                source,
                specials.mark(self.tokenizer, list(messages)),
                add_generation_prompt=True,
                **self.tokenizer.special_tokens_map,
            )
        except template_sandbox.TemplateLimitError as e:
            raise ValueError(f"{self.name}'s chat template: {e}") from None

    def render(self, messages: list[dict[str, str]]) -> str:
        """The chat template as text, ending with the generation prompt (what the user typed, unmarked)."""
        from .specials import restore

        return restore(self.tokenizer, self.render_marked(messages))

    def encode(self, text: str) -> list[int]:
        """Ids of a text from :meth:`render_marked` (typed specials as text, the template's as specials)."""
        from .specials import encode

        return encode(self.tokenizer, text)

    def generate(
        self,
        example_or_prompt: PromptLike,
        *,
        max_new_tokens: int = 128,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: Optional[int] = None,
    ) -> Completion:
        """Sample one response (``temperature=0`` is greedy)."""
        return self.generate_group(
            example_or_prompt, 1, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed
        )[0]

    def generate_group(
        self,
        example_or_prompt: PromptLike,
        G: int,
        *,
        max_new_tokens: int = 128,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: Optional[int] = None,
        return_prompt_cache: bool = False,
        stop_after_lines: int = 0,
    ):
        """Sample ``G`` responses to one prompt in one batch; each row stops at its own end-of-sequence token (or,
        with ``stop_after_lines``, at the token that completes that many lines).

        Returns ``G`` completions; with ``return_prompt_cache``, ``(completions, the prompt's KV cache)`` (see
        :func:`.sampling.sample_group`)."""
        from .sampling import sample_group

        prompt_ids = self.chat_ids(self.messages(example_or_prompt))
        rows, cache = sample_group(
            self,
            prompt_ids,
            G,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            return_prompt_cache=True,
            stop_after_lines=stop_after_lines,
        )
        group = [
            Completion(self.tokenizer.decode(ids, skip_special_tokens=True), ids, list(prompt_ids)) for ids in rows
        ]
        return (group, cache) if return_prompt_cache else group

    def stop_ids(self) -> set[int]:
        """Token ids that end a response: the tokenizer's eos and the config's eos id(s)."""
        ids = {self.tokenizer.eos_token_id}
        cfg = self.model.generation_config.eos_token_id if self.model.generation_config else None
        ids.update(cfg if isinstance(cfg, (list, tuple)) else [cfg])
        return {i for i in ids if i is not None}


def as_messages(example_or_prompt: PromptLike) -> list[dict[str, str]]:
    """An Example, a user string, or a list of chat messages -> chat messages."""
    if isinstance(example_or_prompt, Example):
        return example_or_prompt.messages()
    if isinstance(example_or_prompt, str):
        return [{"role": "user", "content": example_or_prompt}]
    if isinstance(example_or_prompt, list) and all(isinstance(m, dict) and "role" in m for m in example_or_prompt):
        return [dict(m) for m in example_or_prompt]
    raise ValueError("the prompt must be an Example, a string, or a list of {'role', 'content'} messages")
