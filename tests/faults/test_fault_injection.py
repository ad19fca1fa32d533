"""Faults at 30 % on 200 questions, through the real runner, for the model and for the judge
(while running, and with ``memgauge score``): every question ends answered and scored right,
or recorded as an error whose kind is the fault's; nothing is lost, duplicated or scored when
it failed; a rerun asks again for exactly the failures, once each, and completes.

The figures (faults injected by kind, answered, errors by kind, requests) are printed; run
with ``-s`` to see them (bench/RESULTS.md has them with the command).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fault_server import ANSWERED, RETRYABLE, UNREADABLE, Fault, FaultPlan, FaultServer
from helpers.datasets import COLOURS, colour_answer, write_memlens
from helpers.stub_server import StubServer, last_text
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.runner import RunConfig, run
from memgauge.scoring import JudgeOptions

N = 200
MAX_ATTEMPTS = 3  # the run's --max-attempts: a fault on 3 attempts outlasts it
SCORE_ATTEMPTS = 6  # `memgauge score` uses the client's default
# Short, but not so short that a loaded 2-core machine times out a healthy reply.
TIMEOUT_S = 1.5
HANG_S = TIMEOUT_S + 0.5
_NUMBER = re.compile(r"Question: What colour was mug number (\d+)\?")
_STUDENT = re.compile(r"Student answer: (.*)")


def qid_of(body: dict[str, Any]) -> str:
    """The question a request is about: the answer request and the judge prompt both quote
    it."""
    m = _NUMBER.search(last_text(body))
    assert m, last_text(body)[-200:]
    return f"q{int(m.group(1)):03d}"


def gold(qid: str) -> str:
    return COLOURS[int(qid[1:]) % len(COLOURS)]


def right(qid: str) -> float:
    """The score colour_answer's answer deserves (it is wrong for every fifth mug)."""
    return 0.0 if int(qid[1:]) % 5 == 4 else 1.0


def said(qid: str) -> str:
    """colour_answer's answer to ``qid``."""
    i = int(qid[1:])
    return COLOURS[(i + (1 if i % 5 == 4 else 0)) % len(COLOURS)]


def judge_answer(body: dict[str, Any]) -> str:
    text = last_text(body)
    said = _STUDENT.search(text).group(1).strip()
    verdict = int(said == gold(qid_of(body)))
    return json.dumps({"score": verdict, "reason": "compared with the standard answer"})


def expected_error(fault: Fault | None, attempts: int, passes: int = 1) -> str | None:
    """The error kind a question must end with in its first invocation (None: answered),
    when it is tried in ``passes`` passes of ``attempts`` attempts each (an unreadable reply
    is not retried within a pass)."""
    if fault is None or fault.kind in ANSWERED:
        return None
    if fault.kind in RETRYABLE:
        return RETRYABLE[fault.kind] if fault.times >= attempts * passes else None
    return UNREADABLE[fault.kind] if fault.times >= passes else None


def _records(run_dir: Path) -> dict[str, dict[str, Any]]:
    lines = [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines()]
    ids = [r["question_id"] for r in lines]
    assert len(ids) == len(set(ids)), "a question has two records"
    assert sorted(ids) == [f"q{i:03d}" for i in range(N)], "a question is missing"
    return {r["question_id"]: r for r in lines}


def _outcome(rec: dict[str, Any], scorer: str) -> str | None:
    """None when answered and scored right by ``scorer``; else the error kind. Fails the
    test on a wrong score, or an error that was scored."""
    qid = rec["question_id"]
    if scorer == "rule":
        if rec["status"] == "ok":
            assert rec["prediction"] == said(qid), rec
            assert rec["scores"]["rule"] == right(qid), rec
            return None
        assert rec["scores"] == {} and rec["prediction"] is None, rec  # an error is not scored
        assert rec["response"]["error"]["message"], rec
        return rec["response"]["error"]["kind"]
    assert rec["status"] == "ok", rec  # the model was fine; only the judge met faults
    if scorer in rec["scores"]:
        assert rec["scores"][scorer] == right(qid), rec
        assert "judge_error" not in rec["meta"], rec
        return None
    err = rec["meta"]["judge_error"]
    assert err["message"], rec
    assert rec["scores"]["rule"] == right(qid), rec  # the rule score stays
    return err["kind"]


def _check(recs: dict[str, dict[str, Any]], plan: FaultPlan, attempts: int,
           scorer: str, passes: int = 1) -> tuple[set[str], list[str]]:
    """The failed questions, and every question that did not end as its fault says."""
    failed, wrong = set(), []
    for qid, rec in recs.items():
        fault = plan.faults.get(qid)
        got, want = _outcome(rec, scorer), expected_error(fault, attempts, passes)
        if got is not None:
            failed.add(qid)
        if got != want and not (fault and fault.kind == "gzip" and got is None):
            wrong.append(f"{qid} {fault}: expected {want or 'an answer'}, got "
                         f"{got or 'an answer'}")
    return failed, wrong


def _figures(label: str, server: FaultServer, recs: dict[str, dict[str, Any]],
             scorer: str, requests: int) -> dict[str, Any]:
    errors = Counter(k for r in recs.values() if (k := _outcome(r, scorer)) is not None)
    figures = {"suite": label, "questions": len(recs),
               "faulty_questions": len(server.plan.faults),
               "faults_injected": dict(sorted(server.injected.items())),
               "answered": len(recs) - sum(errors.values()),
               "errors": dict(sorted(errors.items())), "requests": requests}
    print(f"\nFAULT-FIGURES {json.dumps(figures)}")
    return figures


def _plan(seed: int, **kw: Any) -> FaultPlan:
    return FaultPlan.make([f"q{i:03d}" for i in range(N)], rate=0.3, seed=seed, **kw)


def _config(tmp_path: Path, data: Path, base_url: str, **kw: Any) -> RunConfig:
    return RunConfig(bench="memlens", data=str(data), image_dir=str(data.parent),
                     out=str(tmp_path / "run"), model="openai:stub", base_url=base_url,
                     progress=False, concurrency=16, max_attempts=MAX_ATTEMPTS,
                     retry_base_s=0.01, timeout_s=TIMEOUT_S, **kw)


def _assert_suite(server: FaultServer, wrong: list[str], failed: set[str],
                  rerun_requests: Counter[str]) -> None:
    assert not wrong, "\n".join(wrong)
    assert not server.early_retries, f"retried before Retry-After: {server.early_retries}"
    # the rerun asked again for exactly the failures (once each, unless a healthy reply
    # was slow enough to time out: their faults are used up)
    assert set(rerun_requests) == failed, sorted(set(rerun_requests) ^ failed)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_memlens(tmp_path_factory.mktemp("data"), N)


def test_model_faults(tmp_path, data):
    plan = _plan(seed=11)
    assert {f.kind for f in plan.faults.values()} == set(RETRYABLE) | set(UNREADABLE) | \
        set(ANSWERED)
    with FaultServer(colour_answer, qid_of, plan, HANG_S, MAX_ATTEMPTS) as server:
        config = _config(tmp_path, data, server.base_url)
        first = run(config)
        recs = _records(Path(config.out))
        failed, wrong = _check(recs, plan, MAX_ATTEMPTS, "rule")
        _figures("model, first run", server, recs, "rule", sum(server.requests.values()))
        assert first.errors == len(failed) and first.ok == N - len(failed)

        server.reset_counts()
        again = run(config)
        rerun_requests = Counter(server.requests)
        final = _records(Path(config.out))
        _figures("model, rerun", server, final, "rule", sum(rerun_requests.values()))
    assert again.skipped == N - len(failed) and again.ok == len(failed)
    assert all(_outcome(r, "rule") is None for r in final.values())
    _assert_suite(server, wrong, failed, rerun_requests)


def test_judge_faults_while_running(tmp_path, data):
    """A run judges each answer as it comes; a judge failure is not asked again in the same
    run (only answers of earlier invocations are judged at its end), so one pass of attempts
    decides, and the rerun retries exactly the failures."""
    plan = _plan(seed=12)
    with StubServer(answer=colour_answer) as model, \
            FaultServer(judge_answer, qid_of, plan, HANG_S, MAX_ATTEMPTS) as judge:
        config = _config(tmp_path, data, model.base_url, judge="openai:judge",
                         judge_base_url=judge.base_url,
                         judge_options=JudgeOptions(label_errors=False))
        run(config)
        recs = _records(Path(config.out))
        failed, wrong = _check(recs, plan, MAX_ATTEMPTS, "judge")
        _figures("judge while running, first run", judge, recs, "judge",
                 sum(judge.requests.values()))
        asked = len(model.requests)

        judge.reset_counts()
        run(config)
        rerun_requests = Counter(judge.requests)
        final = _records(Path(config.out))
        _figures("judge while running, rerun", judge, final, "judge",
                 sum(rerun_requests.values()))
        assert len(model.requests) == asked  # every answer was kept: only the judge again
    assert all(_outcome(r, "judge") is None for r in final.values())
    _assert_suite(judge, wrong, failed, rerun_requests)


def test_judge_faults_in_memgauge_score(tmp_path, data):
    plan = _plan(seed=13)
    with StubServer(answer=colour_answer) as model:
        run(_config(tmp_path, data, model.base_url))
    out = tmp_path / "run"
    args = ["score", str(out), "--judge", "openai:judge", "--timeout", str(TIMEOUT_S),
            "--concurrency", "16", "--no-label-errors"]
    with FaultServer(judge_answer, qid_of, plan, HANG_S, SCORE_ATTEMPTS) as judge:
        res = CliRunner().invoke(app, [*args, "--judge-base-url", judge.base_url])
        recs = _records(out)
        failed, wrong = _check(recs, plan, SCORE_ATTEMPTS, "judge")
        assert res.exit_code == (3 if failed else 0), res.output  # failed verdicts: exit 3
        _figures("memgauge score, first", judge, recs, "judge", sum(judge.requests.values()))
        assert f"failures {len(failed)}" in res.output

        judge.reset_counts()
        res = CliRunner().invoke(app, [*args, "--judge-base-url", judge.base_url])
        assert res.exit_code == 0, res.output
        rerun_requests = Counter(judge.requests)
        final = _records(out)
        _figures("memgauge score, rerun", judge, final, "judge", sum(rerun_requests.values()))
    assert all(_outcome(r, "judge") is None for r in final.values())
    _assert_suite(judge, wrong, failed, rerun_requests)
