"""A run knows how many questions it set out to answer, and says whether it got there
(design 0040): ``questions_planned`` and ``run_state`` in the manifest, for runs stopped by a
budget or by Ctrl-C too; a report says "incomplete: k of n" and ranks such runs apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.analysis import RunData, build_tables
from memgauge.cli import app
from memgauge.report import render_tables_markdown
from memgauge.report._tables_md import ranked
from memgauge.runner import RunConfig, Runner, load_manifest, merge_runs, read_records
from memgauge.runner._survey import Survey
from memgauge.schema import BenchmarkInfo, Record, Response

N = 6


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "longmemeval.json"
    path.write_text(json.dumps([{
        "question_id": f"q{i}", "question_type": "single-session-user",
        "question": f"Question {i}?", "answer": "x",
        "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/30 (Tue) 09:00"],
        "haystack_sessions": [[{"role": "user", "content": "hello"}]],
        "answer_session_ids": ["s1"]} for i in range(N)]), encoding="utf-8")
    return path


def _config(tmp_path: Path, base_url: str, **kw: Any) -> RunConfig:
    return RunConfig(bench="longmemeval", data=str(_data(tmp_path)), out=str(tmp_path / "run"),
                     model="openai:stub", base_url=base_url, cache=False, progress=False,
                     concurrency=1, **kw)


def _interrupt_after(n: int):  # type: ignore[no-untyped-def]
    """An on_progress hook that presses Ctrl-C once ``n`` records are written."""
    def hook(result: Any, record: Record | None) -> None:
        if record is not None and result.done >= n:
            raise KeyboardInterrupt
    return hook


def test_a_budget_stop_reads_on_to_count_the_plan_and_the_report_says_incomplete(tmp_path):
    with StubServer() as stub:
        result = Runner(_config(tmp_path, stub.base_url, max_tokens_total=1)).run_sync()
    assert result.budget_stop
    manifest = load_manifest(tmp_path / "run")
    k = len(read_records(tmp_path / "run"))
    assert k < N
    # the reader went on counting (nothing more was sent): the plan is the whole input
    assert manifest["questions_planned"] == N and manifest["questions_in_input"] == N
    assert manifest["run_state"] == "stopped"
    md = CliRunner().invoke(app, ["report", str(tmp_path / "run")])
    assert md.exit_code == 0, md.output
    assert f"| run (incomplete: {k} of {N}) |" in md.stdout
    assert f"- **progress:** incomplete: {k} of {N}" in md.stdout  # the run's own section
    assert f"# memgauge report: run (incomplete: {k} of {N})" in md.stdout
    js = json.loads(CliRunner().invoke(app, ["report", str(tmp_path / "run"),
                                             "--format", "json"]).stdout)
    [row] = js["tables"]["runs"]
    assert (row["incomplete"], row["n_planned"], row["run_state"]) == (True, N, "stopped")
    assert js["meta"]["progress"] == {"complete": False, "records": k, "planned": N,
                                      "state": "stopped", "text": f"incomplete: {k} of {N}"}
    shown = CliRunner().invoke(app, ["show", str(tmp_path / "run")])
    assert f"{k} questions recorded, {k} answered, 0 failed (incomplete: {k} of {N})" \
        in shown.output


def test_ctrl_c_is_counted_against_the_plan_known_before_the_first_request(tmp_path):
    with StubServer() as stub:
        config = _config(tmp_path, stub.base_url)
        with pytest.raises(KeyboardInterrupt):
            Runner(config, on_progress=_interrupt_after(1)).run_sync()
        first = load_manifest(tmp_path / "run")
        # the input was read through before the first request (design 0043): a first
        # run's Ctrl-C knows its plan
        assert (first["questions_planned"], first["run_state"]) == (N, "stopped")
        # a spent budget sends nothing, and leaves the plan as it is
        Runner(_config(tmp_path, stub.base_url, max_tokens_total=1)).run_sync()
        assert load_manifest(tmp_path / "run")["questions_planned"] == N
        with pytest.raises(KeyboardInterrupt):
            Runner(config, on_progress=_interrupt_after(1)).run_sync()
        stopped = load_manifest(tmp_path / "run")
        assert (stopped["questions_planned"], stopped["run_state"]) == (N, "stopped")
        assert len(read_records(tmp_path / "run")) == 2
        Runner(config).run_sync()
    done = load_manifest(tmp_path / "run")
    assert (done["questions_planned"], done["run_state"]) == (N, "finished")
    t = build_tables([RunData("r", done, list(read_records(tmp_path / "run").values()))])
    assert not t.runs[0].incomplete


def test_the_state_is_written_before_the_first_request(tmp_path):
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> str:
        if not seen:
            seen.append(json.loads((tmp_path / "run" / "manifest.json").read_text()))
        return "x"

    with StubServer(answer=answer) as stub:
        Runner(_config(tmp_path, stub.base_url, limit=3)).run_sync()
    assert seen[0]["run_state"] == "running"
    done = load_manifest(tmp_path / "run")
    assert (done["questions_planned"], done["run_state"]) == (3, "finished")  # --limit: 3


def _rec(qid: str, score: float) -> Record:
    return Record(question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name="t"),
                  status="ok", ability="information_extraction", answer_type="free_text",
                  question="q?", gold="g", prediction="g", response=Response(text="g"),
                  scores={"rule": score})


def test_an_incomplete_run_ranks_after_finished_ones_however_high_its_score():
    def manifest(planned: int | None, state: str | None) -> dict[str, Any]:
        return {"config": {"identity": {"system": "s", "model": "m", "tier": "8k"}},
                "questions_planned": planned, "run_state": state}
    partial = RunData("partial", manifest(6, "stopped"), [_rec("q1", 1.0)])
    finished = RunData("done", manifest(2, "finished"), [_rec("q1", 1.0), _rec("q2", 0.0)])
    running = RunData("live", manifest(None, "running"), [_rec("q1", 1.0)])
    old = RunData("old", {"config": {"identity": {"system": "o"}}}, [_rec("q1", 0.0)])
    t = build_tables([partial, finished, running, old])
    assert [r.run for r in ranked(t.runs)] == ["done", "old", "partial", "live"]
    rows = {r.run: r for r in t.runs}
    assert rows["partial"].progress == "incomplete: 1 of 6"
    assert rows["live"].progress == "incomplete: 1 of ?, running"
    assert not rows["old"].incomplete and not rows["done"].incomplete  # no manifest fields
    md = render_tables_markdown(t)
    assert "| partial (incomplete: 1 of 6) |" in md and "| done |" in md
    assert md.index("| done |") < md.index("| partial (incomplete")


def test_merged_shards_sum_their_plans_and_a_partial_merge_is_incomplete(tmp_path):
    with StubServer() as stub:
        for i in range(2):
            config = _config(tmp_path, stub.base_url).replace(shard=(i, 2),
                                         out=str(tmp_path / f"s{i}"))
            Runner(config).run_sync()
    parts = [load_manifest(tmp_path / f"s{i}") for i in range(2)]
    assert sum(p["questions_planned"] for p in parts) == N  # each shard counted its own
    merge_runs([str(tmp_path / "s0"), str(tmp_path / "s1")], str(tmp_path / "all"))
    merged = load_manifest(tmp_path / "all")
    assert (merged["questions_planned"], merged["run_state"]) == (N, "finished")
    merge_runs([str(tmp_path / "s0")], str(tmp_path / "half"), partial=True)
    half = load_manifest(tmp_path / "half")
    assert (half["questions_planned"], half["run_state"]) == (None, "stopped")
    t = build_tables([RunData("half", half, list(read_records(tmp_path / "half").values()))])
    assert t.runs[0].progress.startswith("incomplete:") and t.runs[0].progress.endswith("of ?")


@pytest.mark.parametrize("estimate", [None, N + 5])
def test_workers_finishing_set_the_plan_to_what_they_recorded(tmp_path, monkeypatch, estimate):
    # no single reader counts under --workers: a finished run's plan is its records, and
    # an estimate made before reading (a benchmark's own count) cannot leave it incomplete
    monkeypatch.setattr(Runner, "survey", lambda self, s: Survey(planned=estimate))
    with StubServer() as stub:
        config = _config(tmp_path, stub.base_url).replace(workers=2,
                                     concurrency=2)
        assert Runner(config).run_sync().workers == 2
    done = load_manifest(tmp_path / "run")
    assert (done["questions_planned"], done["run_state"]) == (N, "finished")
