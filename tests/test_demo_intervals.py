"""The demo report's intervals: a model run's few questions get a Wilson interval, marked,
as in every other report (design 0040). The whole demo runs in tests/test_cli.py."""

from __future__ import annotations

from memgauge.analysis import summarize, wilson_ci
from memgauge.demo import _ci_of, _ci_text
from memgauge.schema import BenchmarkInfo, Record, Response


def _rec(qid: str, score: float) -> Record:
    return Record(question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name="synth"),
                  status="ok", ability="information_extraction", answer_type="free_text",
                  question="q?", gold="g", prediction="p", response=Response(text="p"),
                  scores={"rule": score})


def test_a_model_run_of_five_questions_shows_a_marked_wilson_interval():
    summary = summarize([_rec(f"q{i}", 0.0) for i in range(5)])
    ci = _ci_of(summary.overall["rule"])
    assert ci[:2] == wilson_ci(0, 5)
    assert _ci_text(ci) == "[0.0%, 43.4%] (small n: Wilson)"  # not [0.0%, 0.0%]
    assert _ci_text(_ci_of(None)) == "—"
