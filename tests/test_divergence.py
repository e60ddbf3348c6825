"""Divergences: reference values from scipy, hand-computed cases, -inf handling, chunking and the top-k bound."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy

from mrtpo_viz.divergence import METRIC_FUNCTIONS, chunked_metric, js_distance, js_topk, kl, token_stats, tvd

torch.set_num_threads(1)
NEG_INF = -math.inf


def _logp(shape, seed, holes=0.0, dtype=torch.float64):
    """Random log-probabilities; a fraction ``holes`` of the entries is -inf (masked vocabulary entries)."""
    g = torch.Generator().manual_seed(seed)
    logits = 2.0 * torch.randn(shape, generator=g, dtype=torch.float64)
    drop = torch.rand(shape, generator=g) < holes
    drop[..., 0] = False  # keep every distribution non-empty
    return torch.log_softmax(logits.masked_fill(drop, NEG_INF), -1).to(dtype)


def _probs(logp):
    return logp.double().exp().numpy()


# ------------------------------------------------------------------------------------------ js_distance


@pytest.mark.parametrize("holes", [0.0, 0.4])
def test_js_equals_scipy_base2(holes):
    lp, lq = _logp((8, 30), 1, holes), _logp((8, 30), 2, holes)
    expected = jensenshannon(_probs(lp), _probs(lq), base=2, axis=-1)
    assert np.allclose(js_distance(lp, lq).numpy(), expected, atol=1e-10)
    # float32 input: float32 inside, still close
    got32 = js_distance(lp.float(), lq.float())
    assert got32.dtype == torch.float32
    assert np.allclose(got32.numpy(), expected, atol=2e-5)


def test_js_hand_computed_value():
    # p = (1, 0), q = (1/2, 1/2), m = (3/4, 1/4):
    # KL(p||m) = log2(4/3) = 0.4150375; KL(q||m) = 0.5 log2(2/3) + 0.5 log2(2) = 0.2075187
    # JS = (0.4150375 + 0.2075187) / 2 = 0.3112781; distance = sqrt(JS) = 0.5579230
    lp = torch.tensor([0.0, NEG_INF])
    lq = torch.tensor([0.5, 0.5]).log()
    assert js_distance(lp, lq).item() == pytest.approx(0.5579230, abs=1e-6)


def test_js_symmetric_and_bounded():
    lp, lq = _logp((5, 7, 50), 3, 0.2, torch.float32), _logp((5, 7, 50), 4, 0.2, torch.float32)
    d = js_distance(lp, lq)
    assert torch.equal(d, js_distance(lq, lp))
    assert d.shape == (5, 7)
    assert float(d.min()) > 0.0 and float(d.max()) < 1.0


def test_js_exactly_zero_on_equal_inputs():
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        lp = _logp((4, 9, 1000), 5, 0.3, dtype)
        assert torch.equal(
            js_distance(lp, lp), torch.zeros(4, 9, dtype=torch.float64 if dtype == torch.float64 else torch.float32)
        )


def test_js_one_on_disjoint_supports():
    lp = torch.tensor([0.5, 0.5, 0.0, 0.0]).log()
    lq = torch.tensor([0.0, 0.0, 0.3, 0.7]).log()
    assert js_distance(lp, lq).item() == pytest.approx(1.0, abs=1e-6)


def test_js_handles_neg_inf_and_finfo_min_masks():
    """-inf on both sides at the same entry contributes nothing; a finfo.min mask acts like -inf."""
    base_p, base_q = torch.tensor([0.2, 0.8, 0.0]), torch.tensor([0.6, 0.4, 0.0])
    lp, lq = base_p.log(), base_q.log()
    expected = jensenshannon(base_p[:2].numpy(), base_q[:2].numpy(), base=2)
    assert js_distance(lp, lq).item() == pytest.approx(expected, abs=1e-6)
    tiny = torch.finfo(torch.float32).min
    masked = js_distance(lp.nan_to_num(neginf=tiny), lq.nan_to_num(neginf=tiny))
    assert masked.item() == pytest.approx(expected, abs=1e-6)
    # all mass on one token for p, that token missing from q: maximal distance
    assert js_distance(torch.tensor([0.0, NEG_INF]), torch.tensor([NEG_INF, 0.0])).item() == pytest.approx(1.0)


def test_js_half_precision_is_computed_in_float32():
    lp, lq = _logp((3, 64), 6, 0.0, torch.bfloat16), _logp((3, 64), 7, 0.0, torch.bfloat16)
    got = js_distance(lp, lq)
    assert got.dtype == torch.float32
    assert torch.allclose(got, js_distance(lp.float(), lq.float()), atol=1e-6)


def test_shape_mismatch_is_a_value_error():
    with pytest.raises(ValueError, match="vocabulary"):
        js_distance(torch.zeros(3, 4), torch.zeros(3, 5))
    with pytest.raises(ValueError, match="broadcast"):
        kl(torch.zeros(2, 4), torch.zeros(3, 4))


@settings(max_examples=60, deadline=None)
@given(V=st.integers(2, 20), rows=st.integers(1, 4), seed=st.integers(0, 10_000), holes=st.floats(0.0, 0.9))
def test_js_property_against_scipy(V, rows, seed, holes):
    lp, lq = _logp((rows, V), seed, holes), _logp((rows, V), seed + 1, holes)
    d = js_distance(lp, lq)
    assert bool(((d >= 0) & (d <= 1)).all())
    assert torch.equal(d, js_distance(lq, lp))
    assert np.allclose(d.numpy(), jensenshannon(_probs(lp), _probs(lq), base=2, axis=-1), atol=1e-7)


# ------------------------------------------------------------------------------------------ kl, tvd, registry


def test_kl_equals_scipy_entropy_in_nats():
    lp, lq = _logp((6, 25), 8, 0.3), _logp((6, 25), 9, 0.0)  # q has full support: KL finite
    expected = [entropy(p, q) for p, q in zip(_probs(lp), _probs(lq))]
    assert np.allclose(kl(lp, lq).numpy(), expected, atol=1e-10)
    assert torch.equal(kl(lp, lp), torch.zeros(6, dtype=torch.float64))


def test_kl_is_infinite_where_q_misses_mass_of_p():
    assert kl(torch.tensor([0.5, 0.5]).log(), torch.tensor([1.0, 0.0]).log()).item() == math.inf
    assert kl(torch.tensor([1.0, 0.0]).log(), torch.tensor([0.5, 0.5]).log()).item() == pytest.approx(math.log(2))


def test_tvd_hand_computed():
    # |0.5 - 0.2| + |0.5 - 0.3| + |0 - 0.5| = 1.0, halved = 0.5
    assert tvd(torch.tensor([0.5, 0.5, 0.0]).log(), torch.tensor([0.2, 0.3, 0.5]).log()).item() == pytest.approx(0.5)
    assert tvd(torch.tensor([1.0, 0.0]).log(), torch.tensor([0.0, 1.0]).log()).item() == pytest.approx(1.0)


def test_metric_registry_is_keyed_by_the_names():
    assert METRIC_FUNCTIONS["js"] is js_distance and METRIC_FUNCTIONS["kl"] is kl and METRIC_FUNCTIONS["tvd"] is tvd


# ------------------------------------------------------------------------------------------ chunked_metric


@pytest.mark.parametrize("metric", list(METRIC_FUNCTIONS))
@pytest.mark.parametrize("chunk_size", [1, 5, 16, 1000, None])
def test_chunked_equals_unchunked(metric, chunk_size):
    g = torch.Generator().manual_seed(10)
    lp, lq = torch.randn(3, 17, 40, generator=g), torch.randn(3, 17, 40, generator=g)
    expected = METRIC_FUNCTIONS[metric](lp.log_softmax(-1), lq.log_softmax(-1))
    got = chunked_metric(lp, lq, metric, chunk_size=chunk_size)
    assert got.shape == (3, 17)
    assert torch.allclose(got, expected, atol=1e-6)


def test_chunked_broadcasts_one_branch_against_many_and_takes_flat_positions():
    g = torch.Generator().manual_seed(11)
    with_info, without = torch.randn(4, 9, 30, generator=g), torch.randn(1, 9, 30, generator=g)
    got = chunked_metric(with_info, without, "js", chunk_size=8)
    assert got.shape == (4, 9)
    for k in range(4):
        assert torch.allclose(got[k], chunked_metric(with_info[k], without[0], "js", chunk_size=3), atol=1e-6)


def test_chunked_holds_at_most_one_chunk_of_rows():
    seen = []

    def spy(logp, logq):
        seen.append(torch.broadcast_shapes(logp.shape, logq.shape)[:-1].numel())
        return js_distance(logp, logq)

    g = torch.Generator().manual_seed(12)
    chunked_metric(torch.randn(2, 50, 16, generator=g), torch.randn(2, 50, 16, generator=g), spy, chunk_size=20)
    assert max(seen) <= 20 and sum(seen) == 100 and len(seen) == 5  # 10 positions x 2 rows per chunk


def test_chunked_half_precision_logits():
    g = torch.Generator().manual_seed(13)
    lp, lq = torch.randn(2, 5, 300, generator=g), torch.randn(2, 5, 300, generator=g)
    got = chunked_metric(lp.bfloat16(), lq.bfloat16(), "js", chunk_size=3)
    assert got.dtype == torch.float32
    expected = js_distance(lp.bfloat16().float().log_softmax(-1), lq.bfloat16().float().log_softmax(-1))
    assert torch.allclose(got, expected, atol=1e-6)


def test_chunked_bad_input():
    with pytest.raises(ValueError, match="unknown metric"):
        chunked_metric(torch.zeros(2, 3, 4), torch.zeros(2, 3, 4), "hellinger")
    with pytest.raises(ValueError, match="chunk_size"):
        chunked_metric(torch.zeros(2, 3, 4), torch.zeros(2, 3, 4), "js", chunk_size=0)
    with pytest.raises(ValueError, match="position"):
        chunked_metric(torch.zeros(4), torch.zeros(4))


# ------------------------------------------------------------------------------------------ token_stats


def test_token_stats_hand_computed():
    logits = torch.tensor([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]]).log()  # (T=2, V=3)
    stats = token_stats(logits, torch.tensor([2, 1]), topk=2, chunk_size=1)
    assert torch.allclose(stats.logprob, torch.tensor([math.log(0.5), math.log(0.2)]), atol=1e-6)
    expected_h = [entropy([0.2, 0.3, 0.5]), entropy([0.7, 0.2, 0.1])]  # 1.0297, 0.8018 nats
    assert torch.allclose(stats.entropy, torch.tensor(expected_h, dtype=torch.float32), atol=1e-6)
    assert stats.top_ids.tolist() == [[2, 1], [0, 1]]
    assert torch.allclose(stats.top_probs, torch.tensor([[0.5, 0.3], [0.7, 0.2]]), atol=1e-6)


def test_token_stats_chunked_equals_whole_and_keeps_shape():
    g = torch.Generator().manual_seed(14)
    logits, ids = torch.randn(3, 7, 50, generator=g), torch.randint(0, 50, (3, 7), generator=g)
    a, b = token_stats(logits, ids, topk=5, chunk_size=4), token_stats(logits, ids, topk=5)
    assert a.top_ids.shape == (3, 7, 5) and a.entropy.shape == (3, 7)
    assert torch.allclose(a.logprob, b.logprob) and torch.equal(a.top_ids, b.top_ids)
    assert torch.allclose(a.logprob, logits.log_softmax(-1).gather(-1, ids[..., None])[..., 0], atol=1e-6)


def test_token_stats_bad_ids():
    with pytest.raises(ValueError, match="token ids"):
        token_stats(torch.zeros(2, 4), torch.tensor([0, 4]))
    with pytest.raises(ValueError, match="minus its last dim"):
        token_stats(torch.zeros(2, 4), torch.tensor([0]))


# ------------------------------------------------------------------------------------------ js_topk


def test_js_topk_is_a_lower_bound_with_a_bounded_gap():
    g = torch.Generator().manual_seed(15)
    lp, lq = (
        3 * torch.randn(6, 200, generator=g, dtype=torch.float64),
        3 * torch.randn(6, 200, generator=g, dtype=torch.float64),
    )
    exact = js_distance(lp.log_softmax(-1), lq.log_softmax(-1))
    approx, tail = js_topk(lp, lq, k=5)
    assert bool((approx <= exact + 1e-12).all())
    assert bool((approx < exact - 1e-3).any())  # the bound is not trivially exact here
    assert bool((exact.square() <= approx.square() + tail + 1e-12).all())
    assert bool(((tail > 0) & (tail < 1)).all())


@pytest.mark.parametrize("k", [50, 80])
def test_js_topk_is_exact_when_k_covers_the_vocabulary(k):
    g = torch.Generator().manual_seed(16)
    lp, lq = torch.randn(4, 50, generator=g, dtype=torch.float64), torch.randn(4, 50, generator=g, dtype=torch.float64)
    approx, tail = js_topk(lp, lq, k=k)
    assert torch.allclose(approx, js_distance(lp.log_softmax(-1), lq.log_softmax(-1)), atol=1e-7)
    assert float(tail.max()) < 1e-12


def test_js_topk_overlapping_tops_are_counted_once():
    logits = torch.tensor([[4.0, 3.0, 0.0, 0.0]])
    approx, tail = js_topk(logits, logits, k=2)  # both top-2 sets are {0, 1}
    assert approx.item() == 0.0
    expected_tail = 2 / (math.exp(4) + math.exp(3) + 2)  # the two exp(0) tokens
    assert tail.item() == pytest.approx(expected_tail, abs=1e-6)  # 1 - kept mass: float32 absolute accuracy
