"""Tests for the Markdown and JSON reports; expected figures worked out by hand."""

from __future__ import annotations

import json

from memgauge.analysis import summarize
from memgauge.report import render_json, render_markdown
from memgauge.schema import BenchmarkInfo, ErrorInfo, Record, Response

IE = "information_extraction"
TR = "temporal_reasoning"
LONG = "upstream said: " + "x" * 300


def rec(qid, ability, scores=None, *, status="ok", subtype=None, answer_type="free_text",
        refused=None, error=None):
    return Record(
        question_id=qid,
        episode_id="ep",
        benchmark=BenchmarkInfo(name="t"),
        status=status,
        ability=ability,
        subtype=subtype,
        answer_type=answer_type,
        question="q?",
        gold="g",
        response=Response(error=ErrorInfo(kind=error[0], message=error[1]) if error else None),
        scores=scores or {},
        refused=refused,
    )


def records():
    # rule: IE [1,0,1,1] = 75.0%, TR [0,1] = 50.0%, overall 4/6 = 66.7%, macro 62.5%
    # judge: IE [1,1,1,1] = 100.0%, TR [0,0] = 0.0%, overall 4/6 = 66.7%
    # IE record q2 refused -> IE coverage 3/4 = 75.0%, per-answer (judge) [1,1,1] = 100.0%
    return [
        rec("q1", IE, {"rule": 1.0, "judge": 1.0}, subtype="a"),
        rec("q2", IE, {"rule": 0.0, "judge": 1.0}, subtype="a", refused=True),
        rec("q3", IE, {"rule": 1.0, "judge": 1.0}, subtype="b"),
        rec("q4", IE, {"rule": 1.0, "judge": 1.0}),
        rec("q5", TR, {"rule": 0.0, "judge": 0.0}),
        rec("q6", TR, {"rule": 1.0, "judge": 0.0}),
        rec("e1", IE, status="error", error=("http_429", "rate | limited")),
        rec("e2", TR, status="error", error=("timeout", LONG)),
    ]


META = {"model": "gpt-test", "benchmark": "memlens-32k", "run_id": "r1"}


def test_markdown_sections_and_rows():
    s = summarize(records(), primary="rule")
    md = render_markdown(s, title="Run r1", meta=META)
    assert md.startswith("# Run r1\n")
    assert "- **Model:** gpt-test" in md
    assert "- **Benchmark:** memlens-32k" in md
    assert "- **run_id:** r1" in md
    assert "8 (6 ok, 2 errors)" in md
    assert "http_429: 1" in md and "timeout: 1" in md
    for section in ("## Overall", "## By ability", "## By subtype", "## Errors (2)"):
        assert section in md
    # overall rows
    assert "| rule (primary) | 6 | 66.7% |" in md
    assert "| judge | 6 | 66.7% |" in md
    # macro (0.75 + 0.5) / 2 = 62.5%
    assert "62.5%" in md
    # ability rows: primary with CI, then judge, coverage, per-answer, refusal, errors
    ie_row = next(line for line in md.splitlines() if line.startswith(f"| {IE} |"))
    assert ie_row.startswith(f"| {IE} | 4 | 75.0% [")
    # judge 100.0%, coverage 75.0%, per-answer (rule over q1,q3,q4 = 3/3) 100.0%, no refusal
    assert ie_row.endswith("| 100.0% | 75.0% | 100.0% | — | 1 |")
    tr_row = next(line for line in md.splitlines() if line.startswith(f"| {TR} |"))
    assert tr_row.startswith(f"| {TR} | 2 | 50.0% [")
    assert tr_row.endswith("| 0.0% | 100.0% | 50.0% | — | 1 |")
    # subtype rows
    assert f"| {IE}/a | 2 | 50.0% [" in md
    # one question: a Wilson interval, marked, never the bootstrap's [100.0, 100.0]
    assert f"| {IE}/- | 1 | 100.0% [20.7, 100.0] (small n: Wilson) |" in md
    # the CI note
    assert ("95% CI: percentile bootstrap over questions from n = 30; Wilson score interval "
            "below n = 30 (marked small n), 2000 resamples, seed 0") in md


def test_error_rows_escaped_and_truncated():
    s = summarize(records())
    md = render_markdown(s, title="t")
    assert f"| e1 | {IE} | http_429 | rate \\| limited |" in md
    e2 = next(line for line in md.splitlines() if line.startswith("| e2 |"))
    assert "…" in e2 and LONG not in e2
    message = e2.split(" | ")[3].rstrip(" |")
    assert len(message) <= 120


def test_no_errors():
    s = summarize([r for r in records() if r.status == "ok"])
    md = render_markdown(s, title="t", meta={})
    assert "No errors." in md
    assert "## Errors (0)" in md


def test_json_round_trip_matches_markdown():
    s = summarize(records(), primary="rule", seed=3)
    text = render_json(s, META)
    data = json.loads(text)
    assert data["meta"] == META
    summ = data["summary"]
    assert summ["primary"] == "rule"
    acc = summ["overall"]["rule"]["accuracy"]
    assert abs(acc - 4 / 6) < 1e-12
    assert summ["by_ability"][IE]["scores"]["rule"]["accuracy"] == 0.75
    assert summ["macro_accuracy"] == 0.625
    assert summ["n_errors"] == 2 and len(summ["errors"]) == 2
    md = render_markdown(s, title="t", meta=META)
    assert f"{acc * 100:.1f}%" == "66.7%"
    assert f"| rule (primary) | 6 | {acc * 100:.1f}% |" in md
    lo, hi = summ["overall"]["rule"]["ci_low"], summ["overall"]["rule"]["ci_high"]
    assert f"[{lo * 100:.1f}, {hi * 100:.1f}]" in md
    # stable: same input, same text; keys sorted
    assert render_json(summarize(records(), primary="rule", seed=3), META) == text
    assert list(data) == sorted(data) and list(summ) == sorted(summ)


def test_json_is_strict_with_missing_values():
    s = summarize([rec("e1", IE, status="error", error=("timeout", "t"))])
    text = render_json(s, {"n": float("nan")})
    data = json.loads(text)
    assert "NaN" not in text
    assert data["meta"]["n"] is None
    assert data["summary"]["micro_accuracy"] is None
    md = render_markdown(s, title="t")
    assert "No scored records." in md


def test_the_headline_says_how_many_questions_its_scorer_covers_and_why_not_the_judge():
    """A judge that failed on most items is not silently the headline (issue 11, item 9)."""
    ab = "information_extraction"
    recs = [rec(f"q{i}", ab, {"rule": 1.0, **({"judge": 0.0} if i < 5 else {})})
            for i in range(20)]
    text = render_markdown(summarize(recs), title="t")
    assert "**Primary scorer:** `rule` (scores 20 of 20 answered questions)" in text
    assert "judge scored 5 of 20 answered questions" in text
    assert "**Accuracy (micro):** 100.0%" in text
    asked = render_markdown(summarize(recs, primary="judge"), title="t")
    assert "`judge` (scores 5 of 20 answered questions)" in asked
