"""Tests for the paired comparison: every expected number is worked out by hand."""

from __future__ import annotations

import json
import math

import pytest

from memgauge.analysis import (
    PairedResult,
    bootstrap_ci,
    clustered_se,
    mcnemar_exact,
    naive_se,
    paired_compare,
    spearman,
)
from memgauge.report import render_compare_markdown
from memgauge.schema import BenchmarkInfo, ErrorInfo, Record, Response

IE = "information_extraction"
TR = "temporal_reasoning"


def rec(qid, score, *, episode="e1", ability=IE, status="ok"):
    error = ErrorInfo(kind="timeout", message="slow") if status == "error" else None
    return Record(
        question_id=qid, episode_id=episode, benchmark=BenchmarkInfo(name="t", tier="8k"),
        status=status, ability=ability, answer_type="free_text", question="q?", gold="g",
        response=Response(text=None if error else "a", error=error),
        scores={} if score is None else {"rule": score},
    )


def runs():
    # qid  A    B     episode ability
    # q1   1    1     e1      IE   both right
    # q2   1    0     e1      IE   regression
    # q3   0    1     e2      TR   improvement
    # q4   1    0.5   e2      TR   regression at threshold 1 (right at threshold 0.5)
    # q5   0    0     e3      IE   both wrong
    # q6   1    error e3      IE   excluded (errors_b = 1)
    # q7   1    -     e4      IE   only in A
    # q8   -    1     e4      IE   only in B
    a = [rec("q1", 1.0), rec("q2", 1.0), rec("q3", 0.0, episode="e2", ability=TR),
         rec("q4", 1.0, episode="e2", ability=TR), rec("q5", 0.0, episode="e3"),
         rec("q6", 1.0, episode="e3"), rec("q7", 1.0, episode="e4")]
    b = [rec("q1", 1.0), rec("q2", 0.0), rec("q3", 1.0, episode="e2", ability=TR),
         rec("q4", 0.5, episode="e2", ability=TR), rec("q5", 0.0, episode="e3"),
         rec("q6", None, episode="e3", status="error"), rec("q8", 1.0, episode="e4")]
    return {r.question_id: r for r in a}, {r.question_id: r for r in b}


# --- McNemar -------------------------------------------------------------------------------

def test_mcnemar_exact_hand_values():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(1, 0) == 1.0  # n=1: 2 * C(1,0) / 2 = 1
    assert mcnemar_exact(5, 0) == 0.0625  # 2 * 1 / 32
    assert mcnemar_exact(0, 5) == 0.0625  # symmetric
    # n=10: C(10,0..3) = 1 + 10 + 45 + 120 = 176; 2 * 176 / 1024
    assert mcnemar_exact(3, 7) == 0.34375
    assert mcnemar_exact(7, 3) == 0.34375
    assert mcnemar_exact(2, 2) == 1.0  # capped at 1
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


# --- standard errors -----------------------------------------------------------------------

def test_clustered_and_naive_se_hand_values():
    # values [1, 0, 1, 1], mean 0.75, deviations [0.25, -0.75, 0.25, 0.25]
    # clusters a={0,1}: -0.5; b={2}: 0.25; c={3}: 0.25 -> squares 0.25 + 0.0625 + 0.0625 = 0.375
    # clustered = sqrt(0.375) / 4 = 0.612372.../4 = 0.153093...
    # naive: squares 0.0625 + 0.5625 + 0.0625 + 0.0625 = 0.75 -> sqrt(0.75)/4 = 0.216506...
    values, clusters = [1, 0, 1, 1], ["a", "a", "b", "c"]
    assert clustered_se(values, clusters) == pytest.approx(0.1530931, abs=1e-7)
    assert naive_se(values) == pytest.approx(0.2165064, abs=1e-7)
    # one cluster per value reduces to the naive formula
    assert clustered_se(values, [1, 2, 3, 4]) == pytest.approx(0.2165064, abs=1e-7)
    assert math.isnan(clustered_se([], []))
    assert math.isnan(naive_se([]))
    # one cluster: its deviations sum to 0, so the formula's 0 would read as certainty
    assert math.isnan(clustered_se(values, ["tier"] * 4))
    with pytest.raises(ValueError):
        clustered_se([1, 2], ["a"])


# --- Spearman ------------------------------------------------------------------------------

def test_spearman_hand_values():
    # d = [0, 1, -1, 0], sum d^2 = 2: 1 - 6 * 2 / (4 * 15) = 0.8
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    # ties: ranks x = [1, 2.5, 2.5, 4], y = [1, 2, 3, 4]; centred dx = [-1.5, 0, 0, 1.5],
    # dy = [-1.5, -0.5, 0.5, 1.5]; 4.5 / sqrt(4.5 * 5) = 0.9486833
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486833, abs=1e-7)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    assert math.isnan(spearman([1], [2]))
    with pytest.raises(ValueError):
        spearman([1, 2], [1, 2, 3])


# --- paired_compare ------------------------------------------------------------------------

def test_paired_compare_counts_and_stats():
    a, b = runs()
    r = paired_compare(a, b, scorer="rule")
    assert isinstance(r, PairedResult)
    assert (r.n, r.both_right, r.both_wrong, r.a_only, r.b_only) == (5, 1, 1, 2, 1)
    assert r.regressions == ["q2", "q4"]
    assert r.improvements == ["q3"]
    assert (r.only_in_a, r.only_in_b, r.errors_a, r.errors_b) == (1, 1, 0, 1)
    assert r.accuracy_a == pytest.approx(0.6)  # q1, q2, q4 of 5
    assert r.accuracy_b == pytest.approx(0.4)  # q1, q3 of 5
    assert r.difference == pytest.approx(-0.2)
    # n = 3 discordant, min = 1: 2 * (1 + 3) / 8 = 1.0
    assert r.mcnemar_p == 1.0
    # diffs [0, -1, 1, -1, 0], mean -0.2, deviations [0.2, -0.8, 1.2, -0.8, 0.2]
    # e1 = 0.2 - 0.8 = -0.6, e2 = 1.2 - 0.8 = 0.4, e3 = 0.2 -> 0.36 + 0.16 + 0.04 = 0.56
    # clustered = sqrt(0.56) / 5 = 0.1496663; naive = sqrt(2.8) / 5 = 0.3346640
    assert r.se_clustered == pytest.approx(0.1496663, abs=1e-7)
    assert r.se_naive == pytest.approx(0.3346640, abs=1e-7)
    assert r.n_clusters == 3
    assert (r.ci_low, r.ci_high) == bootstrap_ci([0, -1, 1, -1, 0], seed=0)
    assert r.ci_low <= r.difference <= r.ci_high
    # IE: q1, q2, q5 -> A 2/3, B 1/3, flips 1/0, p = 1.0
    # TR: q3, q4 -> A 1/2, B 1/2, flips 1/1, p = min(1, 2 * 3 / 4) = 1.0
    assert r.by_ability == {
        IE: {"n": 3, "accuracy_a": pytest.approx(2 / 3), "accuracy_b": pytest.approx(1 / 3),
             "a_only": 1, "b_only": 0, "mcnemar_p": 1.0},
        TR: {"n": 2, "accuracy_a": 0.5, "accuracy_b": 0.5, "a_only": 1, "b_only": 1,
             "mcnemar_p": 1.0},
    }


def test_paired_compare_threshold_and_reverse():
    a, b = runs()
    r = paired_compare(a, b, scorer="rule", threshold=0.5)  # q4 (0.5 in B) now right
    assert (r.both_right, r.both_wrong, r.a_only, r.b_only) == (2, 1, 1, 1)
    assert r.regressions == ["q2"]
    rev = paired_compare(b, a, scorer="rule")
    assert rev.regressions == ["q3"] and rev.improvements == ["q2", "q4"]
    assert (rev.only_in_a, rev.only_in_b, rev.errors_a, rev.errors_b) == (1, 1, 1, 0)


def test_paired_compare_empty_and_missing_scorer():
    a, b = runs()
    r = paired_compare(a, b, scorer="judge")
    assert r.n == 0 and r.unscored == 5
    assert math.isnan(r.accuracy_a) and math.isnan(r.difference)
    assert r.mcnemar_p == 1.0
    d = r.to_dict()
    assert d["accuracy_a"] is None and d["ci_low"] is None
    json.dumps(d, allow_nan=False)


def test_to_dict_and_markdown():
    a, b = runs()
    r = paired_compare(a, b, scorer="rule")
    d = r.to_dict()
    assert d["regressions"] == ["q2", "q4"] and d["a_only"] == 2
    json.dumps(d, allow_nan=False)
    md = render_compare_markdown(["base", "new"], [r])
    assert "| new | 5 | 60.0% | 40.0% | -20.0 pp" in md
    assert "- `q2`" in md and "- `q4`" in md
    assert "| new | temporal_reasoning | 2 | 50.0% | 50.0% | 1 | 1 | 1 |" in md
    with pytest.raises(ValueError):
        render_compare_markdown(["base"], [r])


def test_markdown_caps_regressions():
    a = {f"q{i:03d}": rec(f"q{i:03d}", 1.0) for i in range(60)}
    b = {f"q{i:03d}": rec(f"q{i:03d}", 0.0) for i in range(60)}
    md = render_compare_markdown(["a", "b"], [paired_compare(a, b, scorer="rule")])
    assert "- `q049`" in md and "- `q050`" not in md
    assert "… and 10 more" in md
