"""One rule for the pad id and one right-padding function for every batch of id rows."""

from types import SimpleNamespace

import torch

from mrtpo_viz.policy.padding import pad_id, right_pad


def test_pad_id_falls_back_to_eos_then_zero():
    assert pad_id(SimpleNamespace(pad_token_id=3, eos_token_id=7)) == 3
    assert pad_id(SimpleNamespace(pad_token_id=None, eos_token_id=7)) == 7
    assert pad_id(SimpleNamespace(pad_token_id=None, eos_token_id=None)) == 0
    assert pad_id(SimpleNamespace(pad_token_id=0, eos_token_id=7)) == 0  # 0 is a real id, not "missing"


def test_right_pad_ids_and_mask():
    ids, mask = right_pad([[5, 6, 7], [8], []], pad=1)
    assert ids.tolist() == [[5, 6, 7], [8, 1, 1], [1, 1, 1]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0], [0, 0, 0]]
    assert ids.dtype == mask.dtype == torch.long


def test_right_pad_to_a_fixed_length_cuts_longer_rows():
    ids, mask = right_pad([[5, 6, 7], [8]], pad=0, length=2)
    assert ids.tolist() == [[5, 6], [8, 0]] and mask.tolist() == [[1, 1], [1, 0]]
    assert right_pad([], pad=0)[0].shape == (0, 0)
