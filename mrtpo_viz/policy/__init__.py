"""Policies: loading (:mod:`.loading`), the loaded model and its sampling (:mod:`.model`, :mod:`.sampling`), the KV
cache helpers of a shared prompt prefix (:mod:`.kvcache`), padding (:mod:`.padding`); ``bound_freed_memory``, the
opt-in allocator setting that bounds the replay's memory, is re-exported from :mod:`mrtpo_viz.serving.memory`."""

from .loading import DTYPES, PolicyLoadError, clear_cache, load_policy
from ..serving.memory import bound_freed_memory
from .model import PLAIN_CHAT_TEMPLATE, Completion, Policy, as_messages

__all__ = [
    "DTYPES",
    "PLAIN_CHAT_TEMPLATE",
    "Completion",
    "Policy",
    "PolicyLoadError",
    "as_messages",
    "bound_freed_memory",
    "clear_cache",
    "load_policy",
]
