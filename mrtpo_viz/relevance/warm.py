"""Warm a loaded policy for the replay, so that the first replay after loading pays no one-time work.

What a first replay pays once per process and policy (``first_replay_s`` in benchmarks/results/ui_latency.md):
the first forward's page-ins of the weights and the kernels' first setup at a padded, cached batch; the chat
template's compilation; the tokenizer's vocabulary scan (``Policy.max_token_chars``) and the decoding of the top
predictions' token texts. :func:`warm_policy` does all of them with a replay of a short prompt
and response (two verifiers, so the suffix batch is padded as a real one is) and decodes the whole vocabulary once.
"""

from __future__ import annotations

import threading
import time
import weakref

from ..policy import Policy
from ..tasks.base import Verdict, Verifier
from .tokens import warm_vocab

_WARMED: dict[int, weakref.ref] = {}
_LOCK = threading.Lock()
PROMPT = "Answer in one short sentence: which city is the capital of France?"
RESPONSE = " The capital of France is Paris."
INFOS = {"warm.format": "One sentence, no list.", "warm.answer": "The expected answer names Paris, the capital city."}


def _verifier(name: str) -> Verifier:
    return Verifier(name, "custom", name, "warm-up", lambda ex: "", lambda response, ex: Verdict(1.0, ""))


def is_warm(policy: Policy) -> bool:
    ref = _WARMED.get(id(policy))
    return ref is not None and ref() is policy


def warm_policy(policy: Policy) -> float:
    """Run the replay's one-time work for ``policy`` once (later calls return at once); returns the seconds spent
    (0 when it was warm already)."""
    with _LOCK:  # two requests that load the same policy warm it once
        if is_warm(policy):
            return 0.0
        from .engine import replay

        start = time.perf_counter()
        replay(policy, PROMPT, RESPONSE, [_verifier(n) for n in INFOS], infos=INFOS)
        warm_vocab(policy.tokenizer)
        _WARMED[id(policy)] = weakref.ref(policy)
        return time.perf_counter() - start
