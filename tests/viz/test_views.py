"""viz renders hand-built Relevance objects: escaping, tooltips, figure data, and the advantage breakdown."""
import re

import pandas as pd
import pytest
import torch
from plotly.colors import sample_colorscale

from mrtpo_viz.advantages import gdpo_advantages, mrtpo_token_advantages
from mrtpo_viz.relevance.results import Relevance
from mrtpo_viz import viz
from mrtpo_viz.viz import advantages as viz_advantages
from mrtpo_viz.viz import colours, figures, summaries, text, tokens


@pytest.fixture
def rel():
    tokens = ["<b>", "x", " ", "\n", "&amp;"]
    scores = torch.tensor([[0.1, 0.5, 0.0, 0.2, 0.9],
                           [0.3, 0.0, 0.4, 0.1, 0.05]])
    return Relevance(tokens=tokens, token_ids=[10, 11, 12, 13, 14], verifiers=["fmt.a", "corr.b"], scores=scores,
                     raw_scores=scores + 0.01, control="others", response="".join(tokens),
                     offsets=[(0, 3), (3, 4), (4, 5), (5, 6), (6, 11)],
                     logp_without=torch.tensor([-1.5, -0.25, -2.0, -3.0, -0.5]),
                     logp_with=torch.tensor([[-1.0, -0.2, -2.0, -3.0, -0.1], [-1.5, -0.3, -1.0, -2.5, -0.5]]),
                     entropy=torch.tensor([1.0, 0.5, 2.0, 0.1, 0.3]),
                     top_without=[[("<i>", 0.6), ("y", 0.2)]] * 5,
                     top_with=[[[("z", 0.7)]] * 5, [[("w", 0.4)]] * 5],
                     rewards={"fmt.a": 1.0, "corr.b": 0.5}, reasons={"fmt.a": "ok", "corr.b": "half <right>"},
                     spans={"fmt.a": [(3, 4)], "corr.b": None})


def test_token_html_escapes_markup_and_shows_whitespace(rel):
    out = tokens.token_rows_html(rel)
    assert "<b>" not in out  # the token "<b>" never appears as a tag
    assert "&lt;b&gt;" in out
    assert "&amp;amp;" in out  # "&amp;" as text is escaped, not interpreted
    assert "\u21b5" in out and "<br>" in out  # newline shown as an arrow and breaks the line
    assert "\u00b7" in out  # an all-space token shows as a middle dot
    spans = re.findall(r'<span class="mrtpo-tok" data-score="([0-9.]+)"', out)
    assert len(spans) == rel.K * rel.T
    assert [float(s) for s in spans[:5]] == pytest.approx([0.1, 0.5, 0.0, 0.2, 0.9], abs=1e-4)


def test_tooltip_has_every_verifier_logprobs_and_top_predictions(rel):
    tip = tokens.tooltip(rel, 1)
    assert "fmt.a: 0.5000" in tip and "corr.b: 0.0000" in tip
    assert "without information: -0.250" in tip
    assert "with fmt.a: -0.200" in tip and "with corr.b: -0.300" in tip
    assert "'<i>' 0.60" in tip and "top with fmt.a: 'z' 0.70" in tip
    out = tokens.token_rows_html(rel)
    assert "&#x27;&lt;i&gt;&#x27; 0.60" in out  # tooltip text escaped inside the title attribute
    assert "raw fmt" not in tokens.tooltip(rel, 1) and "raw js relevance" in tokens.tooltip(rel, 1, raw=True)


def test_each_rows_tooltip_has_every_relevance_but_only_its_verifiers_predictions(rel):
    import html as html_lib

    out = tokens.token_rows_html(rel)
    titles = [html_lib.unescape(t) for t in re.findall(r'title="([^"]*)"', out)]
    row_fmt, row_corr = titles[1], titles[rel.T + 1]  # token 1 in the first and the second verifier's row
    for tip in (row_fmt, row_corr):
        assert "fmt.a: 0.5000" in tip and "corr.b: 0.0000" in tip and "without information: -0.250" in tip
    assert "with fmt.a: -0.200" in row_fmt and "with corr.b" not in row_fmt
    assert "with corr.b: -0.300" in row_corr and "with fmt.a" not in row_corr
    assert row_fmt == tokens.tooltip(rel, 1, verifier=0) and row_corr == tokens.tooltip(rel, 1, verifier=1)
    assert "\n\n" not in row_fmt


def test_colours_follow_scores(rel):
    out = tokens.token_rows_html(rel, vmax=0.9)
    bgs = re.findall(r"background:(rgb\([^)]*\))", out)
    assert bgs[4] == sample_colorscale(colours.SCALE, [1.0])[0]  # the 0.9 token is the brightest
    assert bgs[2] == sample_colorscale(colours.SCALE, [0.0])[0]


def test_heatmap_z_shape_and_values(rel):
    fig = figures.relevance_heatmap(rel)
    hm = fig.data[0]
    assert len(hm.z) == 2 and len(hm.z[0]) == 5
    assert hm.z[0][4] == pytest.approx(0.9) and hm.z[1][2] == pytest.approx(0.4)
    assert list(hm.y) == ["fmt.a", "corr.b"] and hm.x[0] == "0: <b>"
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


def test_summary_numbers(rel):
    s = summaries.relevance_summary(rel, "fmt.a", top=2)
    total = 0.1 + 0.5 + 0.0 + 0.2 + 0.9
    assert s["span_mass"] == pytest.approx(0.5 / total)  # span (3, 4) covers token "x"
    assert s["top10_mass"] == pytest.approx(0.9 / total)
    assert s["top_tokens"] == [("&amp;", pytest.approx(0.9)), ("x", pytest.approx(0.5))]
    assert 1.0 < s["effective_tokens"] < 4.0
    assert summaries.relevance_summary(rel, "corr.b")["span_mass"] is None
    rows = summaries.verdict_rows(rel)
    assert rows[1][:3] == ["corr.b", 0.5, "half <right>"]


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
    assert s.loc[("r1", "fmt.a"), "span share"] == pytest.approx(0.5 / 1.7)  # token "x" holds the span
    assert pd.isna(s.loc[("r1", "corr.b"), "span share"])  # no spans known for corr.b
    assert s.loc[("r1", "corr.b"), "reward"] == 0.5


def test_text_table_has_a_column_per_verifier_and_the_rewards(rel):
    out = text.format_table(rel)
    lines = out.splitlines()
    assert lines[0].split() == ["t", "token", "a", "b"]  # a column per verifier, by the last part of its name
    assert len([x for x in lines if x.strip()[:1].isdigit()]) == rel.T
    assert "fmt.a: reward" in out and "(ok)" in out
