"""The oracle's masks (``span_masks``) follow the decision spans: the end-of-sequence token of a completion that
stopped on its own is marked where ending decides, and a completion cut at ``max_new_tokens`` has none to mark."""

from mrtpo_viz.tasks import load_examples
from mrtpo_viz.training.rollouts import Rollouts, span_masks


def _ends_with_example():
    return next(e for e in load_examples("instruction_following") if e.id == "instruction_following-test-0302")


def _ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_the_eos_token_is_marked_for_an_ends_with_span(tiny_policy):
    tok = tiny_policy.tokenizer
    ex = _ends_with_example()  # ends with "That is all."; also asks for at least one "songs"
    text = ex.reference
    ids = _ids(tok, text) + [tok.eos_token_id]
    ro = Rollouts([ex], [[text]], [[1]], [[ids]], truncated=[[False]])
    masks = span_masks(ro, ["ifeval.ends_with", "ifeval.keyword"], tok)
    assert masks.shape == (1, 1, 2, len(ids))
    ends, keyword = masks[0, 0, 0].tolist(), masks[0, 0, 1].tolist()
    assert ends[-1] == 1.0  # the end-of-sequence token decides "ends with"
    assert keyword[-1] == 0.0  # ... but not "at least one songs"
    marked = tok.decode([i for i, m in zip(ids[:-1], ends[:-1]) if m])
    assert "That is all." in marked and "songs" not in marked
    assert sum(keyword) > 0


def test_a_truncated_completion_has_no_eos_token_to_mark(tiny_policy):
    tok = tiny_policy.tokenizer
    ex = _ends_with_example()
    text = ex.reference + "\n\n"  # trailing whitespace is outside the end phrase's span
    ids = _ids(tok, text)
    assert tok.decode(ids[-1:]).strip() == ""  # the last token is whitespace only
    stopped = ids + [tok.eos_token_id]
    ro = Rollouts([ex, ex], [[text], [text]], [[1], [1]], [[ids], [stopped]], truncated=[[True], [False]])
    masks = span_masks(ro, ["ifeval.ends_with"], tok)
    cut, done = masks[0, 0, 0].tolist(), masks[1, 0, 0].tolist()
    assert cut[len(ids) - 1] == 0.0  # the cut completion's last token is text, not an end-of-sequence
    assert cut[: len(ids)] == done[: len(ids)]  # the text's own tokens are marked alike
    assert done[len(ids)] == 1.0 and sum(done) == sum(cut) + 1  # only the stopped one has its EOS marked
    assert len(cut) == len(stopped) and cut[len(ids)] == 0.0  # padding of the shorter cut completion


def test_a_verifier_whose_ending_does_not_decide_leaves_the_eos_token(tiny_policy):
    tok = tiny_policy.tokenizer
    ex = next(e for e in load_examples("instruction_following") if e.id == "instruction_following-test-0310")
    ids = _ids(tok, ex.reference) + [tok.eos_token_id]  # at least 20 words: ending does not decide
    ro = Rollouts([ex], [[ex.reference]], [[1]], [[ids]], truncated=[[False]])
    words = span_masks(ro, ["ifeval.word_count"], tok)[0, 0, 0].tolist()
    assert words[-1] == 0.0 and sum(words) > 10
