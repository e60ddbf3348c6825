"""The replay's one-pass columns equal the separate functions; the fast token display equals the prefix decoding."""

import math

import pytest
import torch

from mrtpo_viz.divergence import chunked_metric, js_distance, token_stats
from mrtpo_viz.relevance import tokens
from mrtpo_viz.relevance.branches import split_logits
from mrtpo_viz.relevance.columns import replay_columns, topk_last

torch.set_num_threads(1)


def _logits(B, T, V, seed):
    g = torch.Generator().manual_seed(seed)
    logits = 3.0 * torch.randn(B, T, V, generator=g)
    logits[0, 0, 3] = -math.inf  # a masked vocabulary entry in the reference row
    logits[1, 1, 7] = -math.inf
    return logits, torch.randint(0, V, (T,), generator=g)


@pytest.mark.parametrize(("B", "T", "V", "chunk_size"), [(4, 13, 50, None), (4, 13, 50, 5), (2, 9, 9000, None)])
def test_columns_equal_the_separate_functions(B, T, V, chunk_size):
    logits, ids = _logits(B, T, V, seed=B + T + V)
    cols = replay_columns(logits[:1], logits[1:], ids, ("js", "tvd"), topk=5, chunk_size=chunk_size)
    # float32 tolerances: one softmax here vs torch's log_softmax there differ by a few ulps of log-probs ~10
    for m in ("js", "tvd"):
        assert torch.allclose(cols.metrics[m], chunked_metric(logits[1:], logits[:1], m), atol=2e-6)
    stats = token_stats(logits, ids.expand(B, T), topk=5)
    assert torch.allclose(cols.logprob, stats.logprob, atol=1e-5)
    assert torch.allclose(cols.entropy, stats.entropy[0], atol=1e-5)
    assert torch.equal(cols.top_ids, stats.top_ids)
    assert torch.allclose(cols.top_probs, stats.top_probs, atol=1e-6)
    assert cols.metrics["js"].shape == (B - 1, T) and cols.entropy.shape == (T,)


def test_columns_are_closer_to_float64_than_the_separate_functions():
    logits, ids = _logits(4, 20, 20000, seed=3)
    exact = replay_columns(logits[:1].double(), logits[1:].double(), ids).metrics["js"]
    ours = replay_columns(logits[:1], logits[1:], ids).metrics["js"]
    theirs = chunked_metric(logits[1:], logits[:1], "js")
    assert (ours - exact).abs().max() <= (theirs - exact).abs().max() + 1e-7
    assert (ours - exact).abs().max() < 1e-6


def test_columns_equal_rows_give_exactly_zero():
    logits, ids = _logits(3, 6, 40, seed=4)
    logits[2] = logits[0]
    cols = replay_columns(logits[:1], logits[1:], ids, ("js",))
    assert torch.all(cols.metrics["js"][1] == 0.0) and torch.all(cols.metrics["js"][0] > 0.0)
    assert torch.equal(js_distance(logits[0].log_softmax(-1), logits[0].log_softmax(-1)), torch.zeros(6))


def test_columns_empty_response_and_bad_ids():
    cols = replay_columns(torch.zeros(1, 0, 10), torch.zeros(2, 0, 10), torch.zeros(0, dtype=torch.long))
    assert cols.metrics["js"].shape == (2, 0) and cols.top_ids.shape == (3, 0, 5)
    with pytest.raises(ValueError, match="token ids"):
        replay_columns(torch.zeros(1, 2, 4), torch.zeros(1, 2, 4), torch.tensor([0, 4]))


def test_split_logits_equal_the_padded_batch_and_the_full_recomputation(tiny_policy):
    """Row 0 whole in the prefix pass, the rest over its cropped cache: the logits of the padded batch."""
    from mrtpo_viz.relevance.branches import branch_logits, reference_logits, split_branches, tokenize_response

    tok = tiny_policy.tokenizer
    texts = [
        tiny_policy.render_marked([{"role": "user", "content": "Name a city." + extra}])
        for extra in ("", " Info: it is in France, the capital.", " Info: short.")
    ]
    br = split_branches(tok, texts, tokenize_response(tok, " Paris is the capital of France."))
    assert br.prefix_ids and len({len(x) for x in br.suffix_ids}) == 3  # a shared prefix, three suffix lengths
    without, others = split_logits(tiny_policy.model, br, tiny_policy.pad_id, "cpu")
    batch = branch_logits(tiny_policy.model, br, tiny_policy.pad_id, "cpu")
    # float32 logits of another batch shape and sequence length differ by rounding only (~1e-5 at logits ~10)
    assert torch.allclose(torch.cat([without, others]), batch, atol=1e-4)
    assert torch.allclose(torch.cat([without, others]), reference_logits(tiny_policy.model, br, "cpu"), atol=1e-4)


def test_topk_by_blocks_equals_torch_topk():
    g = torch.Generator().manual_seed(5)
    for V in (8192, 49152 + 17, 100):
        x = torch.randn(7, V, generator=g)
        values, ids = topk_last(x, 5)
        expected = x.topk(5, dim=-1)
        assert torch.equal(values, expected.values) and torch.equal(ids, expected.indices)


@pytest.mark.parametrize("text", [" café ☃ ok", "a <|im_end|> b\n\n  😀 日本語\t", "x" * 300])
def test_stream_display_equals_prefix_decoding(tiny_policy, text):
    tok = tiny_policy.tokenizer
    ids = tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]
    expected, joined = [], ""
    for now in tokens._decode_prefixes(tok, ids):
        piece = "" if now.endswith("\ufffd") or not now.startswith(joined) else now[len(joined) :]
        expected.append(piece)
        joined += piece
    assert tokens._stream_pieces(tok, ids) == expected
    assert tokens.display_tokens(tok, ids)[0] == expected


def test_display_falls_back_where_the_text_ends_inside_a_character(tiny_policy):
    tok = tiny_policy.tokenizer
    ids = tok("ok ☃☃", add_special_tokens=False)["input_ids"]
    cut = next(n for n in range(1, len(ids)) if tok.decode(ids[:n]).endswith("\ufffd"))  # inside a character
    assert tokens._stream_pieces(tok, ids[:cut]) is None  # the prefix decoding decides there
    shown, offsets, text = tokens.display_tokens(tok, ids[:cut])
    assert shown[-1] == "" and "".join(shown) == text and offsets[-1][1] == len(text)


def test_decode_top_rounds_like_python(tiny_policy):
    g = torch.Generator().manual_seed(6)
    probs = torch.rand(2, 50, 3, generator=g)
    ids = torch.randint(0, 100, (2, 50, 3), generator=g)
    top = tokens.decode_top(tiny_policy.tokenizer, ids, probs)
    assert [p for row in top for pos in row for _, p in pos] == [round(p, 6) for p in probs.reshape(-1).tolist()]
    assert top[1][7][2][0] == tiny_policy.tokenizer.decode([int(ids[1, 7, 2])])
    assert tokens.warm_vocab(tiny_policy.tokenizer) == len(tiny_policy.tokenizer)


def test_warm_policy_runs_once_per_policy(tiny_policy):
    from mrtpo_viz.policy import Policy
    from mrtpo_viz.relevance.warm import is_warm, warm_policy

    fresh = Policy(tiny_policy.model, tiny_policy.tokenizer, "fresh", tiny_policy.device, tiny_policy.dtype)
    assert not is_warm(fresh)
    assert warm_policy(fresh) > 0.0 and is_warm(fresh)
    assert warm_policy(fresh) == 0.0  # the second call does nothing
    assert len(tokens._vocab_text(fresh.tokenizer)) == len(fresh.tokenizer)  # every token's text is known
    assert "max_token_chars" in vars(fresh)  # the vocabulary scan is done (a cached property)
