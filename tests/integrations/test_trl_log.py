"""The TRL log's pieces on hand-built tensors: weight concentration, the summed metrics, the records, atomic writes."""

import math
import os

import pandas as pd
import pytest
import torch

from mrtpo_viz.integrations import trl_log


def test_top_share_is_one_tenth_for_uniform_weights_and_one_for_a_single_token():
    mask = torch.ones(2, 20)
    mask[1, 10:] = 0  # the second response has 10 tokens
    w = torch.ones(2, 2, 20)
    w[0, 1] = 0
    w[0, 1, 7] = 20.0  # reward 1 of response 0: all weight on one token
    share = trl_log.top_share(w, mask)
    assert share[0].tolist() == pytest.approx([0.1, 1.0])  # top 2 of 20 tokens
    assert share[1].tolist() == pytest.approx([0.1, 0.1])  # top 1 of 10 tokens; padding never counts
    assert math.isnan(float(trl_log.top_share(w[:1], torch.zeros(1, 20))[0, 0]))


def test_batch_sums():
    mask = torch.tensor([[1.0, 1, 1, 0], [1, 1, 0, 0]])
    rel = torch.tensor([[[0.2, 0.4, 0.6, 9.0]], [[1.0, 0.0, 9.0, 9.0]]])  # (B=2, K=1, T=4), padding = 9
    token_adv = torch.tensor([[1.0, 2.0, 3.0, 0.0], [-1.0, -1.0, 0.0, 0.0]])
    seq_adv = torch.tensor([2.0, -1.0])
    sums = trl_log.batch_sums(["r"], rel, torch.ones(2, 1, 4), mask, token_adv, seq_adv)
    assert sums["mrtpo/relevance/r/mean"] == pytest.approx((2.2, 5.0))
    std0 = math.sqrt(2 / 3)  # tokens 1, 2, 3 around 2 (population std: the spread of what the loss sees)
    assert sums["mrtpo/token_advantage/within_std"] == pytest.approx((std0, 2.0))
    assert sums["mrtpo/token_advantage/mean_minus_trl"] == pytest.approx((0.0, 1.0))
    assert sums["mrtpo/weights/r/top10_share"] == pytest.approx((1 / 3 + 1 / 2, 2.0))


def test_records_and_an_atomic_write(tmp_path):
    rows = trl_log.completion_rows(
        step=3,
        mode="train",
        first_row=4,
        num_generations=4,
        names=["r"],
        ids=[[5, 6], [7]],
        tokens=[["a", "b"], ["c"]],
        texts=["ab", "c"],
        example_ids=["x", "y"],
        prompts=["p", "q"],
        messages=["[]", "[]"],
        trained=[True, False],
        rewards=torch.tensor([[1.0], [math.nan]]),
        relevance=torch.tensor([[[0.5, 0.25]], [[0.75, 9.0]]]),
        parts=torch.zeros(2, 1, 2),
        advantage=torch.tensor([0.5, 0.0]),
        token_advantages=torch.tensor([[0.25, 0.75], [0.0, 9.0]]),
    )
    assert [r["row"] for r in rows] == [4, 5] and [r["group"] for r in rows] == [1, 1]
    assert rows[1]["relevance/r"] == [0.75] and rows[1]["token_advantages"] == [0.0]  # cut to the row's tokens
    assert math.isnan(rows[1]["reward/r"])
    path = trl_log.write_table(rows, tmp_path / "mrtpo" / trl_log.token_file(3))
    assert path.name == "tokens_00003.parquet" and os.listdir(path.parent) == [path.name]
    back = pd.read_parquet(path)
    assert list(back.columns[: len(trl_log.BASE_COLUMNS)]) == list(trl_log.BASE_COLUMNS)
    assert back["tokens"][0].tolist() == ["a", "b"]
    assert trl_log.token_file(12, "eval") == "eval_tokens_00012.parquet"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = trl_log.write_table([{"a": 1}], tmp_path / "t.parquet")

    def broken(self, *a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    with pytest.raises(OSError, match="disk full"):
        trl_log.write_table([{"a": 2}], path)
    monkeypatch.undo()
    assert pd.read_parquet(path)["a"].tolist() == [1] and os.listdir(tmp_path) == ["t.parquet"]
    trl_log.write_json({"k": 1}, tmp_path / "run.json")
    assert (tmp_path / "run.json").read_text().strip().startswith("{")
