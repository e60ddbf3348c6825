"""KV cache helpers: expanded and cropped caches are new caches of views; the source cache is never changed."""

import torch

from mrtpo_viz.policy.kvcache import cache_length, cropped_cache, expand_cache, forward


def _prefix(tiny_policy, n=6):
    ids = torch.arange(3, 3 + n)[None]  # (1, n)
    return ids, forward(tiny_policy.model, ids)[1]


@torch.no_grad()
def test_expanded_cache_is_views_and_leaves_the_source_alone(tiny_policy):
    _, cache = _prefix(tiny_policy)
    before = [layer.keys.clone() for layer in cache.layers]
    wide = expand_cache(cache, 3)
    assert cache_length(wide) == cache_length(cache) == 6
    assert wide.layers[0].keys.shape[0] == 3 and wide.layers[0].keys.data_ptr() == cache.layers[0].keys.data_ptr()
    nxt = torch.full((3, 1), 9)
    forward(tiny_policy.model, nxt, cache=wide, position_ids=torch.full((3, 1), 6))
    assert cache_length(wide) == 7 and cache_length(cache) == 6  # the forward grew the new cache only
    assert all(torch.equal(b, layer.keys) for b, layer in zip(before, cache.layers))


@torch.no_grad()
def test_cropped_cache_continues_like_a_shorter_prefix(tiny_policy):
    ids, cache = _prefix(tiny_policy)
    short = cropped_cache(cache, 4)
    assert cache_length(short) == 4 and cache_length(cache) == 6
    got = forward(tiny_policy.model, ids[:, 4:5], cache=short, position_ids=torch.tensor([[4]]))[0]
    want = forward(tiny_policy.model, ids[:, :5])[0][:, -1:]
    assert torch.allclose(got, want, atol=1e-5)  # float32, same kernels, different summation order only
    assert cache_length(None) == 0


def test_cropping_past_the_end_is_refused(tiny_policy):
    import pytest

    _, cache = _prefix(tiny_policy)
    with pytest.raises(ValueError, match="holds 6 positions, fewer than 9"):
        cropped_cache(cache, 9)
