"""Small, dependency-light statistics: means and question-level bootstrap intervals."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# Upper bound on the number of resampled values held in memory at once (indices + values,
# 8 bytes each: ~64 MiB). Resamples are drawn in chunks of whole rows below this size.
_MAX_CHUNK_ELEMENTS = 1 << 22


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
