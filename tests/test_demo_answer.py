"""`memgauge demo` answers "long context or memory?" (issue 27 §1): its reports open with
the table system x tier and one sentence per tier from a paired test, and a headline run
that fails makes the demo exit 3, naming the step and the fix, after every other run was
still tried (it stopped at the first failure and exited 0)."""

from __future__ import annotations

import socket

from helpers.stub_server import StubServer
from test_demo_closing import stub_answer
from typer.testing import CliRunner

from memgauge import demo
from memgauge.analysis._headline import headline_row, tier_verdict
from memgauge.cli import app
from memgauge.schema import BenchmarkInfo, Record, Response

DEMO = ["demo", "--questions", "3", "--tiers", "4k", "--model", "openai:stub",
        "--model-questions", "2"]


def _rec(qid: str, right: bool) -> Record:
    return Record(question_id=qid, episode_id=f"e{qid}", benchmark=BenchmarkInfo(name="synth"),
                  status="ok", ability="information_extraction", answer_type="free_text",
                  question="q?", gold="g", prediction="p", response=Response(text="p"),
                  scores={"rule": 1.0 if right else 0.0})


def _run(label: str, system: str, right: list[bool]):
    records = {f"q{i}": _rec(f"q{i}", r) for i, r in enumerate(right)}
    return headline_row(label, system, "4k", list(records.values()), "runs/x"), records


def test_equal_systems_at_n_8_read_as_no_difference_detectable():
    runs = [_run("full context", "full-context", [True, False] * 4),
            _run("rag", "rag-bm25", [False] * 8),
            _run("summary", "summary-memory", [False, True] * 4)]
    verdict = tier_verdict("4k", runs)
    assert verdict.best_memory == "summary"  # the memory system with the best accuracy
    assert "no difference detectable at n = 8" in verdict.sentence
    assert runs[0][0].ci_method is not None and runs[0][0].n == 8


def test_a_clear_difference_is_named_with_its_direction_and_test():
    runs = [_run("full context", "full-context", [True] * 8),
            _run("summary", "summary-memory", [False] * 8)]
    sentence = tier_verdict("4k", runs).sentence
    assert "summary scores 100 points below full context on the same 8 questions" in sentence
    assert "McNemar p = 0.008" in sentence


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"  # closed again: refuses


def test_a_failed_headline_run_exits_3_naming_each_step_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "_model_missing", lambda spec: None)  # any model will do here
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("OPENAI_BASE_URL", _dead_url())  # the model's server is down
    out = tmp_path / "demo"
    done = CliRunner().invoke(app, [*DEMO, "--out", str(out)])
    assert done.exit_code == 3, done.output
    text = " ".join(done.output.split())
    for label, _, _ in demo.MODEL_SYSTEMS:  # every run was tried, each failure named
        assert f"4/5 real model, {label} at 4k:" in text
    assert "--timeout" in text and "rerun" in text
    report = (out / "report.md").read_text()  # written all the same, saying what failed
    assert "Failed: 4/5 real model, full context at 4k" in report


def test_the_report_opens_with_the_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "_model_missing", lambda spec: None)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    out = tmp_path / "demo"
    with StubServer(answer=stub_answer) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        done = CliRunner().invoke(app, [*DEMO, "--out", str(out)])
    assert done.exit_code == 0, done.output
    lines = (out / "report.md").read_text().splitlines()
    assert lines[0] == "# memgauge demo" and lines[2].startswith("## The answer")
    table = [ln for ln in lines[:20] if ln.startswith("| ") and " 4k " in ln]
    assert [row.split(" | ")[0].lstrip("| ") for row in table] == [
        label for label, _, _ in demo.MODEL_SYSTEMS]
    assert all("(small n: Wilson)" in row for row in table)  # n = 2: marked
    assert any("no difference detectable at n = 2" in ln for ln in lines[:25])
    assert lines.index("## Benchmark") > lines.index(table[-1])  # the rest comes after
    page = out / "report.html"
    if page.exists():  # the `report` extra (matplotlib) is installed
        assert page.read_text().split("<body>", 1)[1].startswith('<section id="answer">')
