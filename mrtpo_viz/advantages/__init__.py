"""Advantages for several verifiable rewards: GRPO, GDPO and MRTPO (token level); :mod:`.core` (statistics, GRPO,
GDPO), :mod:`.mrtpo` (weights, parts, the TRL shift), :mod:`.registry` (every method, the study baselines).

Shapes: ``N`` prompts, ``G`` completions per prompt, ``K`` rewards, ``T`` response tokens.
``rewards`` ``(N, G, K)`` (NaN where a verifier does not apply), ``weights`` ``lambda_k`` ``(K,)`` default 1,
``relevance`` ``d`` ``(N, G, K, T)``, ``mask`` ``(N, G, T)`` 1 on response tokens. ``std`` is Bessel-corrected and
``eps = 1e-4``, as in TRL.

- GRPO (TRL ``sum_then_normalize``): ``r = sum_k lambda_k r_k``; ``A = (r - mean_G r) / (std_G r + eps)``.
- GDPO (TRL ``normalize_then_sum``): ``Ahat_k = (r_k - mean_G r_k) / (std_G r_k + eps)``;
  ``S = sum_k lambda_k Ahat_k``; ``A = (S - mean_batch S) / (std_batch S + eps)``.
- MRTPO: ``what[k, t] = T_i * mask * d^gamma / sum_t(mask * d^gamma)``; ``w = (1 - alpha) + alpha * what``;
  ``A[t] = (sum_k lambda_k w[k, t] Ahat_k - mean_batch S) / (std_batch S + eps)``.

Our reading of the paper (its exact weighting is not in the public abstract):

- Sum-to-length normalization of ``what`` (its mean over a response's valid tokens is 1), so ``alpha = 0`` reduces
  to GDPO exactly and, for any ``alpha`` and ``gamma``, the token mean of ``A[t]`` equals the GDPO advantage.
- The batch statistics of ``S`` are reused for the token advantages (not recomputed over tokens); that is what
  makes the token mean equal GDPO's ``A``.
- Negative relevance (a control that subtracts a baseline) counts as 0. A response whose relevance to a reward
  never exceeds ``ZERO_RELEVANCE`` gets uniform weights for that reward (plain GDPO credit).

Edge cases, all without NaN (TRL >= 1.8's semantics, checked against TRL's own code in tests/test_advantages_trl.py):

- a NaN reward is left out of its group's mean and std, as TRL leaves out ``None``, and contributes 0 for that
  sample; in GRPO a row with some rewards keeps the (weighted) sum of the others (TRL's ``nansum``);
- an *unscorable* row (every reward NaN) is left out of the group statistics (GRPO) and the batch statistics
  (GDPO, MRTPO), and gets advantage 0 on every token, as TRL does;
- a group of size 1 has std 0 and advantage 0 (torch's Bessel std of one value is NaN);
- a reward equal across its group contributes exactly 0. Here we differ from TRL on purpose: TRL's plain z-score
  leaves float32 rounding noise (~1 ulp) divided by ``eps`` (up to ~1e-3 in GRPO, and O(1) in GDPO when every
  group of the batch is constant); we return exact zeros;
- padding gets advantage exactly 0; a batch of one element has batch std 0;
- a *degenerate* batch, whose ``S`` is equal on every scorable row (batch std 0): GDPO's advantages are all 0, as
  TRL's; MRTPO's token terms are then not divided by ``eps`` alone (which gave +-15,000 for rewards
  ``[[[1, 0], [0, 1]]]``) but left unscaled, ``A[t] = sum_k lambda_k w[k, t] Ahat_k - mean_batch S``: the per-reward
  advantages are already group-normalized, the token mean stays GDPO's 0, and the size is that of a normal batch's
  token terms times its ``std_batch S + eps``.

Two baselines make MRTPO's effect readable (ours, for the convergence study):

- ``mrtpo:oracle``: MRTPO's weights from each verifier's relevant spans (a hard 0/1 mask, normalized to mean 1;
  uniform where a verifier has none). It uses labels no real run has: the upper bound of token credit on a task.
- ``mrtpo:oracle-mask``, ``mrtpo-mask``: the same weights with ``normalization="mask"`` (relevance peak-normalized
  to ``[0, 1]``, not rescaled to mean 1): each reward's group advantage on its relevant tokens at its own size, so
  credit is separated from scale (the mean-preserving form multiplies a one-token span's advantage by ``T/|S|``).
  ``mrtpo:placebo``, ``mrtpo:placebo-mask``: random spans with the oracle's sizes (:func:`placebo_spans`, seeded by
  the training loop), the control that credit in the right place, not concentration as such, is what helps.
  ``mrtpo:shuffle``: MRTPO's own relevance permuted within each response (:func:`shuffle_relevance`): MRTPO's matched
  placebo (same values, sum and normalization; only where the weight goes is random).
- ``entropy``: GTPO-style ``A_t = A * (1 + beta * (H_t / mean_t H - 1))`` with GDPO's ``A`` and the sampling
  entropy; it knows nothing of the verifiers (``alpha`` is its ``beta``). Same invariants: token mean = GDPO's ``A``.

Registry: ``ADVANTAGE_METHODS[name]`` is an ``AdvantageMethod`` with one call form for every method::

    adv = ADVANTAGE_METHODS[name](rewards, mask, relevance=None, weights=None, alpha=1.0, gamma=1.0, eps=1e-4,
                                  entropy=None)
    # adv: (N, G, T) token-level advantages, 0 on padding

GRPO and GDPO broadcast their sequence advantage over the valid tokens and ignore the per-token inputs;
``method.needs`` tells the caller which per-token input to provide (the replay's relevance, the span masks, the
entropy, the one-context branch), and ``method.replay`` which replay settings the method fixes. Every method but GRPO
is a *credit method* (:mod:`.credit`): a pure function to per-reward token weights ``(N, G, K, T)``
(``method.token_weights``) and a combination into advantages; :func:`register_credit` adds one that the training
loop, ``MRTPOTrainer(args=MRTPOConfig(credit=...))`` and the app then run by name.
"""

from .core import EPS, ZERO_RELEVANCE, gdpo_advantages, grpo_advantages, unscorable_rows
from .mrtpo import (
    NORMALIZATIONS,
    MRTPOParts,
    MRTPOShift,
    mrtpo_token_advantages,
    mrtpo_token_parts,
    mrtpo_token_shift,
    mrtpo_token_weights,
    weighted_token_parts,
)
from .credit import COMBINES, ENTROPY_TOP_Q, entropy_top_mask
from .registry import (
    ADVANTAGE_METHODS,
    NEEDS,
    AdvantageMethod,
    entropy_token_advantages,
    get_method,
    method_names,
    placebo_spans,
    register_credit,
    shuffle_relevance,
    span_relevance,
)

__all__ = [
    "ADVANTAGE_METHODS",
    "COMBINES",
    "ENTROPY_TOP_Q",
    "EPS",
    "NEEDS",
    "NORMALIZATIONS",
    "ZERO_RELEVANCE",
    "AdvantageMethod",
    "MRTPOParts",
    "MRTPOShift",
    "entropy_token_advantages",
    "entropy_top_mask",
    "gdpo_advantages",
    "get_method",
    "method_names",
    "grpo_advantages",
    "mrtpo_token_advantages",
    "mrtpo_token_parts",
    "mrtpo_token_shift",
    "mrtpo_token_weights",
    "placebo_spans",
    "register_credit",
    "shuffle_relevance",
    "span_relevance",
    "unscorable_rows",
    "weighted_token_parts",
]
