"""Key/value cache helpers for a shared prompt prefix (transformers 5).

A ``DynamicCache``'s methods change it in place and a forward that is given a cache appends to it, so a cache is
never reused: :func:`expand_cache` builds a NEW cache whose layers hold expanded views of a prefix cache (no copy),
and each forward gets its own.
"""

from __future__ import annotations

import copy
import functools
import inspect

import torch

from ..serving.turns import model_forward


@functools.cache
def _cache_kwarg(model_cls: type) -> str:
    """transformers 5 names the forward's cache ``cache``; older models still take ``past_key_values``."""
    params = inspect.signature(model_cls.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def forward(model, input_ids: torch.Tensor, *, cache=None, **kw):
    """``model(input_ids, cache=cache, use_cache=True, **kw)`` -> (logits, the cache after this forward); in the
    app, each forward is a point where a long job lets waiting sessions take their turn (:mod:`.turns`)."""
    with model_forward():
        out = model(input_ids=input_ids, use_cache=True, **{_cache_kwarg(type(model)): cache}, **kw)
    return out.logits, getattr(out, "cache", None) or getattr(out, "past_key_values", None)


def map_cache(cache, fn):
    """A new cache whose layers hold ``fn(keys)`` and ``fn(values)`` of ``cache``'s layers (which stay as they are)."""
    from transformers import DynamicCache

    layers = []
    for layer in cache.layers:
        new = copy.copy(layer)  # same class and settings (e.g. a sliding window); tensors replaced below
        new.keys, new.values = fn(layer.keys), fn(layer.values)
        layers.append(new)
    out = DynamicCache()
    out.layers = layers
    return out


def expand_cache(cache, batch: int):
    """A new cache with every layer's ``(1, H, P, D)`` keys and values expanded to ``(batch, H, P, D)`` views.

    The source cache is left as it is; the returned one grows (by concatenation, into new tensors) in the one
    forward that it is given to.
    """
    return map_cache(cache, lambda t: t.expand(batch, -1, -1, -1))


def cropped_cache(cache, length: int):
    """A new cache holding views of the first ``length`` positions of ``cache`` (which is left as it is)."""
    if length > cache_length(cache):
        raise ValueError(f"the cache holds {cache_length(cache)} positions, fewer than {length}")
    return map_cache(cache, lambda t: t[:, :, :length])


def cache_length(cache) -> int:
    return 0 if cache is None else int(cache.get_seq_length())
