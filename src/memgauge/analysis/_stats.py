"""Small, dependency-light statistics: means, question-level bootstrap intervals, and the
Wilson interval that stands in for the bootstrap on few questions (design 0040)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

# Upper bound on the number of resampled values held in memory at once (indices + values,
# 8 bytes each: ~64 MiB). Resamples are drawn in chunks of whole rows below this size.
_MAX_CHUNK_ELEMENTS = 1 << 22

# Below this many questions a percentile bootstrap is too narrow to trust (three questions
# all wrong give [0, 0]); the interval is Wilson's instead, and marked (design 0040).
SMALL_N = 30
BOOTSTRAP = "bootstrap"
WILSON = "wilson"


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean of ``values``; ``nan`` when there are none."""
    if len(values) == 0:
        return math.nan
    return float(np.mean(np.asarray(values, dtype=np.float64)))


def bootstrap_ci(
    values: Sequence[float],
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval for the mean of ``values``.

    Method: the unit of resampling is the question. Each of ``n_resamples`` resamples draws
    ``len(values)`` values with replacement (uniformly, from
    ``numpy.random.default_rng(seed)``) and takes their mean; the interval is the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (linear interpolation)
    of those resample means. Indices are drawn as one ``(rows, n)`` integer array per chunk,
    chunked only by the size of ``values``, so the result is identical for a fixed seed and
    the same input.

    Edge cases: no values gives ``(nan, nan)``; a single value ``v`` gives ``(v, v)``.

    Raises ``ValueError`` for ``n_resamples < 1``, a ``confidence`` outside ``(0, 1)`` or a
    non-finite value.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    n = arr.size
    if n == 0:
        return (math.nan, math.nan)
    if not np.all(np.isfinite(arr)):
        raise ValueError("bootstrap_ci needs finite values")
    if n == 1:
        v = float(arr[0])
        return (v, v)
    if np.all(arr == arr[0]):  # a constant sample: every resample mean is that constant
        v = float(arr[0])
        return (v, v)

    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples, dtype=np.float64)
    rows_per_chunk = max(1, _MAX_CHUNK_ELEMENTS // n)
    for start in range(0, n_resamples, rows_per_chunk):
        rows = min(rows_per_chunk, n_resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        means[start : start + rows] = arr[idx].mean(axis=1)

    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(low), float(high))


def wilson_ci(successes: float, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion: ``successes`` out of ``n``.

    ``successes`` may be fractional (the sum of scores in [0, 1]): a score in [0, 1] with
    mean p has variance at most p(1 - p), so the interval is, if anything, wide. ``n = 0``
    gives ``(nan, nan)``. Raises ``ValueError`` for a ``confidence`` outside ``(0, 1)`` or
    ``successes`` outside ``[0, n]``.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if n == 0:
        return (math.nan, math.nan)
    if not 0.0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, {n}], got {successes}")
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    # at p = 0 or 1 the bounds equal p in exact arithmetic; rounding must not move them past
    # it (an error bar of -1e-16 is refused by matplotlib)
    return (max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half)))


def mean_ci(
    values: Sequence[float],
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, str]:
    """An interval for the mean of ``values`` and the method that gave it.

    From :data:`SMALL_N` values on: :func:`bootstrap_ci` (``"bootstrap"``). Below, when
    every value lies in [0, 1] (accuracies, judge levels, token F1): :func:`wilson_ci` over
    their sum (``"wilson"``), which never collapses to a point on a few equal values as the
    bootstrap does. Values outside [0, 1] keep the bootstrap.
    """
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if 0 < arr.size < SMALL_N and np.all((arr >= 0.0) & (arr <= 1.0)):
        low, high = wilson_ci(float(arr.sum()), int(arr.size), confidence=confidence)
        return (low, high, WILSON)
    low, high = bootstrap_ci(values, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return (low, high, BOOTSTRAP)
