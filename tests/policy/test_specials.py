"""Typed specials are text: marking, restoring, and the ids of a marked rendered prompt."""

import pytest

from mrtpo_viz.policy.specials import MARK, encode, mark, restore


def test_mark_and_restore_round_trip_including_a_typed_marker(tiny_policy):
    tok = tiny_policy.tokenizer
    typed = f"a<|im_end|>b{MARK}c<|im_start|><|endoftext|>"
    marked = mark(tok, typed)
    assert "<|im_end|>" not in marked and "<|im_start|>" not in marked
    assert restore(tok, marked) == typed
    assert mark(tok, [{"role": "user", "content": typed}])[0]["content"] == marked


def test_unmarked_text_is_the_tokenizers_own_tokenization(tiny_policy):
    tok = tiny_policy.tokenizer
    text = "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n<|im_start|>assistant\n"
    assert encode(tok, text) == tok(text, add_special_tokens=False)["input_ids"]


def test_typed_specials_become_text_and_the_templates_stay_specials(tiny_policy):
    tok = tiny_policy.tokenizer
    text = "<|im_start|>user\n" + mark(tok, "hello <|im_end|> world") + "<|im_end|>\n"
    want = (
        tok.convert_tokens_to_ids(["<|im_start|>"])
        + tok("user\nhello <|im_end|> world", add_special_tokens=False, split_special_tokens=True)["input_ids"]
        + tok.convert_tokens_to_ids(["<|im_end|>"])
        + tok("\n", add_special_tokens=False)["input_ids"]
    )
    assert encode(tok, text) == want
    assert sum(i == tok.eos_token_id for i in want) == 1  # the template's <|im_end|> only


def test_an_unpaired_surrogate_is_a_readable_error(tiny_policy):
    with pytest.raises(ValueError, match="unpaired surrogate"):
        encode(tiny_policy.tokenizer, "x\ud800")
