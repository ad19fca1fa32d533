"""memgauge's statistics, written on numpy to keep scipy out of the core (design 0037), give
scipy's own results: the percentile bootstrap to the last bit for the same seed, the exact
McNemar p-value as scipy's two-sided binomial test, Spearman's rho with ties, and the naive
standard error as scipy's ``sem`` without Bessel's correction.

scipy comes with the ``validate`` extra (scikit-learn needs it); without it these skip."""
from __future__ import annotations

import math

import numpy as np
import pytest

from memgauge.analysis._paired import mcnemar_exact, naive_se, spearman
from memgauge.analysis._stats import bootstrap_ci, wilson_ci

stats = pytest.importorskip("scipy.stats")


def _bootstrap_params() -> set[str]:
    import inspect

    return set(inspect.signature(stats.bootstrap).parameters)


@pytest.mark.parametrize(("n", "seed", "confidence", "kind"), [
    (2, 0, 0.95, "binary"), (37, 1, 0.95, "binary"), (789, 2, 0.95, "binary"),
    (150, 3, 0.90, "scores"), (1999, 4, 0.99, "scores")])
def test_the_bootstrap_interval_is_scipy_s_percentile_bootstrap(n, seed, confidence, kind):
    rng = np.random.default_rng(100 + seed)
    values = (rng.integers(0, 2, size=n) if kind == "binary" else rng.random(n)).astype(float)
    if np.all(values == values[0]):  # a constant sample is answered without resampling
        values[0] = 1.0 - values[0]
    ours = bootstrap_ci(values, n_resamples=2000, confidence=confidence, seed=seed)
    # scipy >= 1.15 names the generator rng; older releases random_state
    seeded = ({"rng": np.random.default_rng(seed)} if "rng" in _bootstrap_params()
              else {"random_state": np.random.default_rng(seed)})
    theirs = stats.bootstrap((values,), np.mean, n_resamples=2000, method="percentile",
                             confidence_level=confidence, vectorized=True,
                             **seeded).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=1e-12)


def test_the_exact_mcnemar_p_value_is_scipy_s_two_sided_binomial_test():
    for b in range(31):
        for c in range(31):
            expected = 1.0 if b + c == 0 else stats.binomtest(b, b + c, 0.5).pvalue
            assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12), (b, c)


@pytest.mark.parametrize("seed", range(5))
def test_spearman_is_scipy_s_with_ties(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, size=60)  # many ties on both sides
    y = x + rng.integers(-2, 3, size=60)
    assert spearman(x.tolist(), y.tolist()) == pytest.approx(
        stats.spearmanr(x, y).statistic, abs=1e-12)


def test_spearman_is_nan_where_scipy_s_is_undefined():
    with np.errstate(all="ignore"), pytest.warns(stats.ConstantInputWarning):
        theirs = stats.spearmanr([1, 1, 1], [1, 2, 3]).statistic
    assert math.isnan(theirs) and math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_the_naive_standard_error_is_scipy_s_sem_without_bessel_s_correction():
    values = np.random.default_rng(7).random(101)
    n = values.size
    assert naive_se(values.tolist()) == pytest.approx(
        float(stats.sem(values)) * math.sqrt((n - 1) / n), rel=1e-12)


@pytest.mark.parametrize(("k", "n", "confidence"), [
    (0, 1, 0.95), (0, 3, 0.95), (3, 3, 0.95), (7, 20, 0.95), (11, 29, 0.90), (5, 12, 0.99)])
def test_the_wilson_interval_is_scipy_s(k, n, confidence):
    theirs = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    ours = wilson_ci(k, n, confidence=confidence)
    assert ours == pytest.approx((theirs.low, theirs.high), abs=1e-12)
