"""Statistics of the credit study: paired intervals over seeds, the oracle share (Fieller), steps to a threshold,
power, and the corrections for a second, data-dependent look (Pocock's two-look level, the inverse-normal
combination test).

Pure functions of numbers (numpy, scipy). Definitions:

- *paired difference* of a method against GDPO: per seed, method minus GDPO; its mean with a Student t interval and a
  95% percentile bootstrap beside it. With few seeds the percentile bootstrap is too narrow (on normal differences it
  covers 85% at 5 seeds, 89% at 8, 90% at 10), so a difference counts as *detected* only where both exclude 0.
- *oracle share*: ``(method - GDPO) / (oracle - GDPO)``, a ratio of paired means, with Fieller's interval (exact for
  normal differences; a percentile bootstrap of the ratio covered about 93% at 14 seeds in simulations at the
  credit study's means and covariance). Defined only where the oracle's gain is detected.
- *two looks*: where a study looked once and then extended its seeds because of what it saw, a 95% interval at the
  end is too narrow. :data:`POCOCK_TWO_LOOKS` is the per-look two-sided level that keeps two looks at 5%;
  :func:`inverse_normal_p` combines the two stages' one-sided p values, valid however the second stage's size was
  chosen from the first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

N_BOOT = 10_000
LEVEL = 0.95

POCOCK_TWO_LOOKS = 0.0294
"""Per-look two-sided alpha of Pocock's boundary for two equally spaced looks at overall 0.05 (tabulated); one-sided
per look: 0.0147."""


# --- per run -------------------------------------------------------------------------------------------------------


def trailing_means(values: Sequence[float], window: int) -> np.ndarray:
    """Means of every full window: ``out[i] = mean(values[i : i + window])``; length ``n - window + 1``."""
    x = np.asarray(values, dtype=float)
    if len(x) < window:
        return np.empty(0)
    c = np.concatenate([[0.0], np.cumsum(x)])
    return (c[window:] - c[:-window]) / window


def steps_to_threshold(curve: Sequence[float], threshold: float, window: int) -> tuple[int, bool]:
    """``(steps, reached)``: steps until the full-window trailing mean first reaches ``threshold`` (the step count
    at the end of that window), or ``(len(curve) + 1, False)`` when it never does (censored)."""
    hits = np.nonzero(trailing_means(curve, window) >= threshold - 1e-12)[0]
    return (int(hits[0]) + window, True) if len(hits) else (len(curve) + 1, False)


# --- paired intervals ----------------------------------------------------------------------------------------------


def t_quantile(p: float, df: int) -> float:
    return float(stats.t.ppf(p, df))


def bootstrap_ci(d: Sequence[float], n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``d`` (resampling its entries, i.e. the seeds)."""
    d = np.asarray(d, dtype=float)
    if len(d) < 2:
        return math.nan, math.nan
    means = d[np.random.default_rng(seed).integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    q = (1 - level) / 2
    return float(np.quantile(means, q)), float(np.quantile(means, 1 - q))


def t_ci(d: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    """Student t interval of the mean of ``d`` (df ``n - 1``)."""
    d = np.asarray(d, dtype=float)
    if len(d) < 2:
        return math.nan, math.nan
    half = t_quantile(1 - (1 - level) / 2, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return float(d.mean() - half), float(d.mean() + half)


def p_greater(d: Sequence[float]) -> float:
    """One-sided p value of the paired t test that the mean of ``d`` is above 0."""
    d = np.asarray(d, dtype=float)
    if len(d) < 2:
        return math.nan
    sd = d.std(ddof=1)
    if sd == 0:
        return 0.0 if d.mean() > 0 else 1.0
    return float(stats.t.sf(d.mean() / (sd / math.sqrt(len(d))), len(d) - 1))


def paired(d: Sequence[float], seed: int = 0) -> dict:
    """Mean paired difference with its bootstrap and t intervals, the one-sided p (above 0), the sd and n."""
    d = np.asarray(d, dtype=float)
    lo, hi = bootstrap_ci(d, seed=seed)
    t_lo, t_hi = t_ci(d)
    return {
        "mean": float(d.mean()) if len(d) else math.nan,
        "lo": lo,
        "hi": hi,
        "t_lo": t_lo,
        "t_hi": t_hi,
        "p_greater": p_greater(d),
        "sd": float(d.std(ddof=1)) if len(d) > 1 else math.nan,
        "n": int(len(d)),
        "per_seed": [float(x) for x in d],
    }


def detected(p: dict) -> bool:
    """A paired difference whose bootstrap and t intervals both exclude 0 (on the same side)."""
    lows, highs = (p["lo"], p["t_lo"]), (p["hi"], p["t_hi"])
    return all(x > 0 for x in lows) or all(x < 0 for x in highs)


# --- the oracle share ----------------------------------------------------------------------------------------------


def fieller(d_num: Sequence[float], d_den: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    """Fieller's interval for ``mean(d_num) / mean(d_den)`` from paired samples (t with ``n - 1`` df): the ratios
    ``r`` with ``(a - r b)^2 <= t^2 var(a - r b)``. ``(nan, nan)`` where the denominator's own interval includes 0 (the
    set is then unbounded)."""
    x, y = np.asarray(d_num, dtype=float), np.asarray(d_den, dtype=float)
    n = len(x)
    if n < 2 or len(y) != n:
        return math.nan, math.nan
    a, b = x.mean(), y.mean()
    c = np.cov(x, y, ddof=1) / n  # covariance of the two means
    t2 = t_quantile(1 - (1 - level) / 2, n - 1) ** 2
    qa, qb, qc = b * b - t2 * c[1, 1], -2 * (a * b - t2 * c[0, 1]), a * a - t2 * c[0, 0]
    disc = qb * qb - 4 * qa * qc
    if qa <= 0 or disc < 0:
        return math.nan, math.nan
    r = math.sqrt(disc)
    return float((-qb - r) / (2 * qa)), float((-qb + r) / (2 * qa))


def oracle_share(d_method: Sequence[float], d_oracle: Sequence[float], level: float = LEVEL) -> dict:
    """Share of the oracle's gain over GDPO that a method recovers: ``mean(d_method) / mean(d_oracle)`` with Fieller's
    interval. Args: per-seed paired differences, method - GDPO and oracle - GDPO, on the same seeds in the same order.

    ``defined`` is False (and the share NaN) unless the oracle's gain is detected (both intervals above 0)."""
    dv, do = np.asarray(d_method, dtype=float), np.asarray(d_oracle, dtype=float)
    gain = paired(do)
    out = {"share": math.nan, "lo": math.nan, "hi": math.nan, "defined": False, "level": level}
    out.update(oracle_gain=gain["mean"], oracle_lo=gain["t_lo"], oracle_hi=gain["t_hi"], n=int(len(do)))
    if not detected(gain) or gain["mean"] < 0:
        out["why"] = "no headroom: the oracle does not beat GDPO beyond its interval"
        return out
    lo, hi = fieller(dv, do, level)
    out.update(share=float(dv.mean() / do.mean()), lo=lo, hi=hi, defined=True, why="")
    return out


# --- a second look -------------------------------------------------------------------------------------------------


def inverse_normal_p(p1: float, p2: float, n1: int, n2: int) -> float:
    """One-sided p of the inverse-normal combination of two stages' one-sided p values, weights ``sqrt(n_i / N)``:
    ``1 - Phi(w1 z1 + w2 z2)`` with ``z_i = Phi^-1(1 - p_i)``. Each stage's p is uniform under the null whatever the
    first stage made the second's size, so the test keeps its level where the extension was chosen from the data
    (the weights use the stage sizes as run: the first round planned no second stage)."""
    w1, w2 = math.sqrt(n1 / (n1 + n2)), math.sqrt(n2 / (n1 + n2))
    return float(stats.norm.sf(w1 * stats.norm.isf(p1) + w2 * stats.norm.isf(p2)))


def two_looks(first: Sequence[float], later: Sequence[float]) -> dict:
    """The planned look (``first`` seeds) and the extension (``later``) of one paired difference: each stage's mean
    and one-sided p, all seeds' 95% t interval (uncorrected), its two-look Pocock interval, the inverse-normal p and
    whether it clears the one-sided Pocock level."""
    a, b = np.asarray(first, dtype=float), np.asarray(later, dtype=float)
    allx = np.concatenate([a, b])
    p = inverse_normal_p(p_greater(a), p_greater(b), len(a), len(b))
    lo, hi = t_ci(allx, level=1 - POCOCK_TWO_LOOKS)
    t_lo, t_hi = t_ci(allx)
    return {
        "first": paired(a),
        "later": paired(b),
        "mean": float(allx.mean()),
        "n": int(len(allx)),
        "t95": (t_lo, t_hi),
        "pocock": (lo, hi),
        "p_naive": p_greater(allx),
        "p_combined": p,
        "holds": bool(p < POCOCK_TWO_LOOKS / 2 and lo > 0),
    }


# --- power of a paired two-sided t test ----------------------------------------------------------------------------


def power_paired(n: int, effect: float, sd: float, alpha: float = 0.05) -> float:
    """Power of the paired two-sided t test with ``n`` pairs for a mean difference ``effect`` (sd ``sd``):
    ``P(|T| > t_crit)``, ``T ~`` noncentral t(n - 1, effect sqrt(n)/sd)."""
    if n < 2:
        return math.nan
    if sd <= 0:
        return 1.0
    nc, df = effect * math.sqrt(n) / sd, n - 1
    crit = t_quantile(1 - alpha / 2, df)
    return float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


def seeds_for_power(effect: float, sd: float, power: float = 0.8, alpha: float = 0.05, cap: int = 100_000) -> int:
    """Smallest number of seeds (pairs, >= 2) whose paired t test reaches ``power``; ``cap`` if none below it."""
    if sd <= 0:
        return 2
    n = max(2, int(((stats.norm.isf(alpha / 2) + stats.norm.ppf(power)) * sd / effect) ** 2) - 2)
    while n < cap and power_paired(n, effect, sd, alpha) < power:
        n += 1
    return n


def detectable(n: int, sd: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """Minimum detectable difference: the effect that ``n`` seeds detect with ``power`` (bisection)."""
    if n < 2 or not sd > 0:
        return math.nan
    lo, hi = 0.0, 20 * sd
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if power_paired(n, mid, sd, alpha) < power else (lo, mid)
    return hi
