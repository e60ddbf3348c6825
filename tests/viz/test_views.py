"""viz renders hand-built Relevance objects: the token view's payload, figure data (token labels, hover text), tables
to 3 significant digits, and the advantage breakdown."""

import pandas as pd
import pytest
import torch

from mrtpo_viz.advantages import gdpo_advantages, mrtpo_token_advantages
from mrtpo_viz.relevance.results import Relevance
from mrtpo_viz.viz import advantages as viz_advantages
from mrtpo_viz.viz import colours, figures, numbers, summaries, text, token_view


@pytest.fixture
def rel():
    tokens = ["<b>", "x", " ", "\n", "&amp;"]
    scores = torch.tensor([[0.1, 0.5, 0.0, 0.2, 0.9], [0.3, 0.0, 0.4, 0.1, 0.05]])
    return Relevance(
        tokens=tokens,
        token_ids=[10, 11, 12, 13, 14],
        verifiers=["fmt.a", "corr.b"],
        scores=scores,
        raw_scores=scores + 0.01,
        control="others",
        response="".join(tokens),
        offsets=[(0, 3), (3, 4), (4, 5), (5, 6), (6, 11)],
        logp_without=torch.tensor([-1.5, -0.25, -2.0, -3.0, -0.5]),
        logp_with=torch.tensor([[-1.0, -0.2, -2.0, -3.0, -0.1], [-1.5, -0.3, -1.0, -2.5, -0.5]]),
        entropy=torch.tensor([1.0, 0.5, 2.0, 0.1, 0.3]),
        top_without=[[("<i>", 0.6), ("y", 0.2)]] * 5,
        top_with=[[[("z", 0.7)]] * 5, [[("w", 0.4)]] * 5],
        rewards={"fmt.a": 1.0, "corr.b": 0.5},
        reasons={"fmt.a": "ok", "corr.b": "half <right>"},
        spans={"fmt.a": [(3, 4)], "corr.b": None},
    )


def test_payload_holds_every_number_once_to_3_significant_digits(rel):
    p = token_view.relevance_payload(rel, advantages={"GDPO": 0.123456, "MRTPO": [1.23456, -2.0, 0, 3e-7, 5]})
    assert p["tokens"] == rel.tokens and p["ids"] == rel.token_ids and p["verifiers"] == ["fmt.a", "corr.b"]
    assert p["scores"] == [[0.1, 0.5, 0, 0.2, 0.9], [0.3, 0, 0.4, 0.1, 0.05]]
    assert p["vmax"] == 0.9 and p["rewards"] == [1, 0.5] and p["label"] == "js minus others control"
    assert p["lp0"] == [-1.5, -0.25, -2, -3, -0.5] and p["lp"][1] == [-1.5, -0.3, -1, -2.5, -0.5]
    assert p["ent"][1] == 0.5
    vocab = p["vocab"]
    assert [vocab[p["top0"][0][0]], p["top0"][0][1]] == ["<i>", 0.6] and vocab[p["top"][1][3][0]] == "w"
    assert len(vocab) == 4  # "<i>", "y", "z", "w": each string once, however often it is a top prediction
    assert p["span"] == [[[1, 2]], None]  # token 1 ("x", characters 3-4) lies in fmt.a's span; corr.b unknown
    assert p["adv"] == [["GDPO", 0.123], ["MRTPO", [1.23, -2, 0, 3e-07, 5]]]
    raw = token_view.relevance_payload(rel, raw=True, vmax=2.0)
    assert raw["scores"][0][0] == 0.11 and raw["vmax"] == 2 and raw["label"] == "raw js"
    with pytest.raises(ValueError, match="advantage 'MRTPO' has 1 values, expected 5"):
        token_view.relevance_payload(rel, advantages={"MRTPO": [1.0]})


def test_payload_text_is_safe_for_the_json_encoder_and_the_page():
    import json

    import orjson  # what Gradio's event stream encodes with

    tokens = ["a\udc80", "\ud83d\ude00", "</script><b>"]  # a lone surrogate, a surrogate pair (an emoji), markup
    p = token_view.token_view_payload(tokens, ["v"], [[0.1, float("nan"), 0.3]])
    assert p["tokens"][:2] == ["a\\udc80", "\U0001f600"] and p["scores"] == [[0.1, None, 0.3]]
    orjson.dumps(p)
    text = token_view.encode(p)
    assert "<" not in text and json.loads(text) == p  # "<" travels escaped: no "</script>" in the page
    assert token_view.payload_bytes(p) == len(text.encode("utf-8"))
    assert not {"lp0", "lp", "top0", "top", "span", "adv", "ids", "vocab"} & set(p)  # unknown parts left out


def test_frame_payload_reads_one_rollout_back(rel):
    p = token_view.frame_payload(rel.to_frame(), title="rollout r1")
    assert p["tokens"] == rel.tokens and p["scores"][1][2] == 0.4 and p["lp"][0][4] == -0.1
    assert p["rewards"] == [1, 0.5] and p["span"] == [[[1, 2]], None] and p["title"] == "rollout r1"
    assert "top0" not in p  # the per-token table keeps no top predictions


def test_visible_whitespace():
    assert colours.visible("a\tb\n") == "a\u21e5b\u21b5" and colours.visible("   ") == "\u00b7\u00b7\u00b7"
    assert colours.visible("\x1b[2J") == "\\x1b[2J"  # control characters shown, not sent to the terminal or page


def test_numbers_to_3_significant_digits():
    assert [numbers.round_sig(x) for x in (0.123456, 1234.5, -0.00012345, 2.0, float("nan"), None)] == [
        0.123,
        1230,
        -0.000123,
        2,
        None,
        None,
    ]
    assert numbers.fmt_sig(0.5, signed=True) == "+0.5" and numbers.fmt_sig(-1.23456) == "-1.23"
    assert numbers.fmt_sig(None) == "n/a"


def test_heatmap_z_shape_and_values(rel):
    fig = figures.relevance_heatmap(rel)
    hm = fig.data[0]
    assert len(hm.z) == 2 and len(hm.z[0]) == 5
    assert hm.z[0][4] == pytest.approx(0.9) and hm.z[1][2] == pytest.approx(0.4)
    assert list(hm.y) == ["fmt.a", "corr.b"] and list(hm.x) == [
        "0 &lt;b&gt;",
        "1 x",
        "2 \u00b7",
        "3 \u21b5",
        "4 &amp;amp;",
    ]  # tokens on the axis, escaped
    assert "%{x}" in hm.hovertemplate and "%{z:.3g}" in hm.hovertemplate  # the token and 3 significant digits
    assert fig.layout.xaxis.type == "category" and fig.layout.xaxis.showticklabels is not False
    assert hm.colorbar.title.text == "js"
    raw = figures.relevance_heatmap(rel, raw=True).data[0]
    assert raw.z[0][0] == pytest.approx(0.11)


def test_difference_heatmap_is_b_minus_a(rel):
    other = Relevance(**{**rel.__dict__, "scores": rel.scores * 2})
    fig = figures.difference_heatmap(rel, other, "corr.b")
    ab, diff = fig.data
    assert ab.z[1][2] == pytest.approx(0.8) and ab.z[0][2] == pytest.approx(0.4)
    assert diff.z[0] == pytest.approx([0.3, 0.0, 0.4, 0.1, 0.05])
    assert diff.zmid == 0.0 and diff.zmax == pytest.approx(0.4)


@pytest.mark.parametrize("alpha,gamma", [(1.0, 1.0), (0.5, 2.0), (0.0, 1.0)])
def test_advantage_bars_sum_to_mrtpo_and_mean_to_gdpo(rel, alpha, gamma):
    rewards = torch.tensor([[1.0, 0.5], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])  # (G, K)
    br = viz_advantages.advantage_breakdown(rewards, rel.scores, alpha, gamma)
    d = torch.ones(1, 4, 2, 5)
    d[0, 0] = rel.scores
    expected = mrtpo_token_advantages(rewards[None], d, torch.ones(1, 4, 5), alpha=alpha, gamma=gamma)[0, 0]
    assert torch.allclose(br.mrtpo, expected)
    assert torch.allclose(br.parts.sum(0) + br.baseline, expected, atol=1e-5)
    assert br.baseline.abs().max() < 1e-4  # one group: the batch mean of S is 0
    assert br.gdpo == pytest.approx(float(gdpo_advantages(rewards[None])[1][0, 0]))
    assert float(br.mrtpo.mean()) == pytest.approx(br.gdpo, abs=1e-4)
    fig = figures.advantage_bars(rel.tokens, rel.verifiers, br)
    bars = [t for t in fig.data if t.type == "bar"]
    stacked = torch.tensor([list(b.y) for b in bars]).sum(0)
    assert torch.allclose(stacked, expected, atol=1e-4)
    if alpha == 0.0:  # alpha = 0 is GDPO: every token gets the same advantage
        assert torch.allclose(br.mrtpo, torch.full((5,), br.gdpo), atol=1e-4)


def test_breakdown_puts_reward_advantage_on_relevant_tokens(rel):
    rewards = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])  # only reward 0 varies, row 0 is the best
    br = viz_advantages.advantage_breakdown(rewards, rel.scores)
    assert br.parts[1].abs().max() == 0  # a reward equal across the group gives nothing
    assert int(br.parts[0].argmax()) == 4  # the most relevant token to reward 0 gets most of its advantage
    assert float(br.parts[0, 2]) == 0.0  # zero relevance, zero share


def test_verdict_rows_mark_what_needs_input(rel):
    rows = summaries.verdict_rows(rel, {"sql.execution": ["database", "gold SQL"]})
    assert rows[1] == ["corr.b", 0.5, "half <right>", 0.17, 0.4]  # mean 0.17, to 3 significant digits
    assert rows[2][:3] == ["sql.execution", "needs input", "not scored or replayed: give database, gold SQL"]
    assert summaries.verdict_rows(None, {"x": ["y"]})[0][1] == "needs input"


def test_weight_markdown_and_snippets(rel):
    from mrtpo_viz.relevance.diagnostics import relevance_weight_diagnostics

    md = summaries.weight_markdown(relevance_weight_diagnostics(rel))
    lines = md.splitlines()
    assert lines[0] == "| | a | b |"  # one column per verifier, names without their family where they stay apart
    # w = 5 d / 1.7 = (0.294, 1.47, 0, 0.588, 2.65): Gini 12.9 / 25 = 0.518; Kish 25 / (5 * 9.6) = 0.521; the span
    # (token "x") holds 1.47 / 5 = 0.294 of the credit, and one of the 5 tokens (0.2); corr.b's spans are unknown
    assert lines[2].startswith("| Gini | 0.518 | ") and lines[3].startswith("| effective tokens | 0.521 | ")
    assert lines[4] == "| on spans | 0.294 | n/a |" and lines[5] == "| span tokens | 0.2 | n/a |"
    assert summaries.short_names(["tool_call.format", "sql.format"]) == ["tool_call.format", "sql.format"]
    labels = summaries.distinct_snippets(
        [
            '<tool_call>{"name": "get_weather", "city": "Paris"}',
            '<tool_call>{"name": "get_weather", "city": "Oslo"}',
            "short",
        ],
        width=16,
    )
    assert labels[0].startswith("...") and "Paris" in labels[0] and "Oslo" in labels[1] and labels[2] == "short"


def test_relevance_summary_numbers(rel):
    from mrtpo_viz.relevance.diagnostics import relevance_summary

    s = relevance_summary(rel, "fmt.a", top=2)
    total = 0.1 + 0.5 + 0.0 + 0.2 + 0.9
    assert s["span_mass"] == pytest.approx(0.5 / total)  # span (3, 4) covers token "x"
    assert s["top10_mass"] == pytest.approx(0.9 / total)
    assert s["top_tokens"] == [("&amp;", pytest.approx(0.9)), ("x", pytest.approx(0.5))]
    assert 1.0 < s["effective_tokens"] < 4.0
    assert relevance_summary(rel, "corr.b")["span_mass"] is None


@pytest.fixture
def frame(rel):
    """Two rollouts: the hand-built one, and the same tokens with every score doubled."""
    a = rel.to_frame()
    b = rel.to_frame().assign(score=lambda f: f["score"] * 2)
    return pd.concat([a.assign(id="r1"), b.assign(id="r2")], ignore_index=True)


def test_mean_relevance_bars_average_every_token(frame):
    fig = figures.mean_relevance_bars(frame)
    controlled, raw = fig.data
    assert list(controlled.x) == ["fmt.a", "corr.b"]
    assert controlled.y[0] == pytest.approx(1.5 * (0.1 + 0.5 + 0.0 + 0.2 + 0.9) / 5)  # (1x + 2x) / 2
    assert raw.y[1] == pytest.approx((0.3 + 0.0 + 0.4 + 0.1 + 0.05) / 5 + 0.01)


def test_top_tokens_rank_by_mean_relevance(frame):
    top = summaries.top_tokens(frame, n=2)
    fmt = top[top["verifier"] == "fmt.a"]
    assert fmt["token"].tolist() == ["&amp;", "x"]
    assert fmt["mean relevance"].tolist() == pytest.approx([1.35, 0.75])
    assert fmt["count"].tolist() == [2, 2]
    assert summaries.top_tokens(frame, min_count=3).empty


def test_rollout_summary_one_row_per_rollout_and_verifier(frame):
    s = summaries.rollout_summary(frame).set_index(["id", "verifier"])
    assert len(s) == 4
    assert s.loc[("r2", "fmt.a"), "max relevance"] == pytest.approx(1.8)
    assert s.loc[("r1", "fmt.a"), "top token"] == "&amp;"
    assert s.loc[("r1", "fmt.a"), "span share"] == 0.294  # token "x" holds the span: 0.5 / 1.7, 3 digits
    assert pd.isna(s.loc[("r1", "corr.b"), "span share"])  # no spans known for corr.b
    assert s.loc[("r1", "corr.b"), "reward"] == 0.5


def test_text_table_has_a_column_per_verifier_and_the_rewards(rel):
    out = text.format_table(rel)
    lines = out.splitlines()
    assert lines[0] == (
        "relevance per token and verifier: js minus the 'others' control, in brackets the raw js "
        "(with vs without the verifier's information)"
    )  # what 0.230(0.283) means
    assert lines[1].split() == ["t", "token", "a", "b"]  # a column per verifier, by the last part of its name
    assert len([x for x in lines if x.strip()[:1].isdigit()]) == rel.T
    assert "fmt.a: reward" in out and "(ok)" in out
