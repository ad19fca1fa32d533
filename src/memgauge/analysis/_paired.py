"""Paired comparison of two runs on the same questions: exact McNemar test, paired bootstrap
interval of the accuracy difference, cluster-robust standard error, Spearman correlation."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memgauge.analysis._json import json_safe
from memgauge.analysis._stats import bootstrap_ci
from memgauge.schema import Record

__all__ = [
    "PairedResult",
    "clustered_se",
    "mcnemar_exact",
    "naive_se",
    "paired_compare",
    "spearman",
]


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts.

    ``b``: A right / B wrong; ``c``: A wrong / B right. Under the null each discordant pair
    is equally likely to go either way, so this is a binomial test with p = 1/2 on
    ``n = b + c``: ``min(1, 2 * sum_{k <= min(b, c)} C(n, k) / 2**n)``. ``n = 0`` gives 1.0.
    The tail sum is computed in exact integers.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def _as_array(values: Sequence[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).reshape(-1)


def naive_se(values: Sequence[float]) -> float:
    """Standard error of the mean treating every value as independent, on the same footing
    as :func:`clustered_se` (CR0, no small-sample correction): ``sqrt(sum (x - mean)^2) / n``,
    i.e. ``clustered_se`` with one cluster per value. ``nan`` when there are no values."""
    arr = _as_array(values)
    n = arr.size
    if n == 0:
        return math.nan
    dev = arr - arr.mean()
    return float(math.sqrt(float(np.sum(dev * dev))) / n)


def clustered_se(values: Sequence[float], clusters: Sequence[Any]) -> float:
    """Cluster-robust (CR0 sandwich) standard error of the mean of ``values``.

    ``sqrt(sum_g (sum_{i in g} (x_i - mean))^2) / n`` where ``g`` runs over the distinct
    labels in ``clusters`` (e.g. the episode a question belongs to: questions sharing a
    history are not independent). ``nan`` when there are no values, and when they all lie
    in one cluster: its deviations sum to zero by construction, so the formula gives 0,
    which is not a measured certainty but an undefined estimate (design 0040).
    """
    arr = _as_array(values)
    if len(clusters) != arr.size:
        raise ValueError(f"{arr.size} values but {len(clusters)} cluster labels")
    n = arr.size
    if n == 0 or len(set(clusters)) < 2:
        return math.nan
    dev = arr - arr.mean()
    sums: dict[Any, float] = {}
    for label, d in zip(clusters, dev.tolist(), strict=True):
        sums[label] = sums.get(label, 0.0) + d
    return float(math.sqrt(sum(s * s for s in sums.values())) / n)


def _average_ranks(arr: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they span."""
    order = np.argsort(arr, kind="mergesort")
    sorted_vals = arr[order]
    ranks = np.empty(arr.size, dtype=np.float64)
    i = 0
    while i < arr.size:
        j = i
        while j + 1 < arr.size and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (Pearson correlation of average ranks, so ties are handled).
    ``nan`` with fewer than two pairs or when either side is constant."""
    a, b = _as_array(x), _as_array(y)
    if a.size != b.size:
        raise ValueError(f"spearman needs equal lengths, got {a.size} and {b.size}")
    if a.size < 2:
        return math.nan
    ra, rb = _average_ranks(a), _average_ranks(b)
    da, db = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float(np.sum(da * da)) * float(np.sum(db * db)))
    if denom == 0.0:
        return math.nan
    return float(np.sum(da * db) / denom)


@dataclass(frozen=True)
class PairedResult:
    """Run A (the baseline) against run B on the questions both answered (status ok, scorer
    present). ``a_only`` questions are right in A and wrong in B (regressions when B is the
    new run); ``b_only`` the reverse (improvements)."""

    scorer: str
    threshold: float
    n: int
    both_right: int
    both_wrong: int
    a_only: int
    b_only: int
    accuracy_a: float
    accuracy_b: float
    difference: float  # accuracy_b - accuracy_a
    ci_low: float  # paired bootstrap over questions, 95 %, seed 0
    ci_high: float
    mcnemar_p: float
    se_clustered: float  # of the mean per-question difference, clustered by episode_id
    se_naive: float
    n_clusters: int
    regressions: list[str] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    only_in_a: int = 0
    only_in_b: int = 0
    errors_a: int = 0
    errors_b: int = 0
    unscored: int = 0  # in both runs, ok in both, but the scorer is missing on a side
    by_ability: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data; undefined numbers (nan) become ``None``."""
        return json_safe(asdict(self))


def _acc(k: int, n: int) -> float:
    return k / n if n else math.nan


def paired_compare(records_a: Mapping[str, Record], records_b: Mapping[str, Record], *,
                   scorer: str, threshold: float = 1.0) -> PairedResult:
    """Compare run A (baseline) with run B question by question; correct = score >= threshold.

    Only questions present in both runs, with status ok in both and ``scorer`` in both
    records' scores, are paired. ``only_in_a``/``only_in_b`` count question ids missing from
    the other run; ``errors_a``/``errors_b`` count each run's error records.
    """
    only_in_a = sum(1 for q in records_a if q not in records_b)
    only_in_b = sum(1 for q in records_b if q not in records_a)
    errors_a = sum(1 for r in records_a.values() if r.status == "error")
    errors_b = sum(1 for r in records_b.values() if r.status == "error")

    qids: list[str] = []
    right_a: list[bool] = []
    right_b: list[bool] = []
    episodes: list[str] = []
    abilities: list[str] = []
    unscored = 0
    for qid in sorted(q for q in records_a if q in records_b):
        ra, rb = records_a[qid], records_b[qid]
        if ra.status != "ok" or rb.status != "ok":
            continue
        if scorer not in ra.scores or scorer not in rb.scores:
            unscored += 1
            continue
        qids.append(qid)
        right_a.append(ra.scores[scorer] >= threshold)
        right_b.append(rb.scores[scorer] >= threshold)
        episodes.append(ra.episode_id)
        abilities.append(str(ra.ability))  # StrEnum: its value

    n = len(qids)
    both_right = sum(1 for a, b in zip(right_a, right_b, strict=True) if a and b)
    both_wrong = sum(1 for a, b in zip(right_a, right_b, strict=True) if not a and not b)
    regressions = [q for q, a, b in zip(qids, right_a, right_b, strict=True) if a and not b]
    improvements = [q for q, a, b in zip(qids, right_a, right_b, strict=True) if b and not a]
    a_only, b_only = len(regressions), len(improvements)

    diffs = [float(b) - float(a) for a, b in zip(right_a, right_b, strict=True)]
    acc_a, acc_b = _acc(sum(right_a), n), _acc(sum(right_b), n)
    low, high = bootstrap_ci(diffs, confidence=0.95, seed=0)

    by_ability: dict[str, dict[str, Any]] = {}
    for ab in sorted(set(abilities)):
        idx = [i for i, x in enumerate(abilities) if x == ab]
        m = len(idx)
        ao = sum(1 for i in idx if right_a[i] and not right_b[i])
        bo = sum(1 for i in idx if right_b[i] and not right_a[i])
        by_ability[ab] = {
            "n": m,
            "accuracy_a": _acc(sum(right_a[i] for i in idx), m),
            "accuracy_b": _acc(sum(right_b[i] for i in idx), m),
            "a_only": ao,
            "b_only": bo,
            "mcnemar_p": mcnemar_exact(ao, bo),
        }

    return PairedResult(
        scorer=scorer, threshold=threshold, n=n, both_right=both_right, both_wrong=both_wrong,
        a_only=a_only, b_only=b_only, accuracy_a=acc_a, accuracy_b=acc_b,
        difference=acc_b - acc_a if n else math.nan, ci_low=low, ci_high=high,
        mcnemar_p=mcnemar_exact(a_only, b_only), se_clustered=clustered_se(diffs, episodes),
        se_naive=naive_se(diffs), n_clusters=len(set(episodes)), regressions=regressions,
        improvements=improvements, only_in_a=only_in_a, only_in_b=only_in_b,
        errors_a=errors_a, errors_b=errors_b, unscored=unscored, by_ability=by_ability)
