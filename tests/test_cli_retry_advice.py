"""The run summary advises a rerun only for failures a rerun can mend (design 0051)."""

from __future__ import annotations

from helpers.report_runs import rec, write_run

from memgauge.cli._execute import permanent_count, retry_advice
from memgauge.schema import ErrorInfo, Response


def _failed(qid: str, kind: str, retryable: bool = False):
    r = rec(qid, None, status="error")
    return r.model_copy(update={"response": Response(
        error=ErrorInfo(kind=kind, message="m", retryable=retryable))})


def test_permanent_failures_are_not_advised_a_rerun(tmp_path):
    run = write_run(tmp_path / "r", {}, [
        _failed("q1", "not_applicable"), _failed("q2", "ingest_failed"),
        _failed("q3", "context_overflow"), _failed("q4", "timeout", retryable=True),
        _failed("q5", "bad_response"), rec("q6", 1.0)])
    assert permanent_count(run) == 3
    mixed = retry_advice(5, 3)
    assert "Rerun the same command to retry them (3 of them fail the same way" in mixed
    only_permanent = retry_advice(3, 3)
    assert "Rerun" not in only_permanent and "fail them the same way" in only_permanent
    assert retry_advice(2, 0) == " Rerun the same command to retry them."
