"""Issue 29 §1: a memory agent with an empty memory is not a memory agent scoring 0 %.

Against an endpoint that never returns JSON, every session fails at ingest: each question
needing them is an ``ingest_failed`` error (never a score), the run's summary line, its
manifest and every report say so per system, and the run exits 3 (design 0042)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app

AGENTS = [("fact-memory", []), ("summary-memory", []), ("state-memory", []),
          ("recurrent-memory", ["--system-option", "variant=blind"])]


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ingest-failed") / "bench"
    made = CliRunner().invoke(app, ["generate", "synth", "--out", str(out), "--questions", "2",
                                    "--tiers", "4k"])
    assert made.exit_code == 0, made.output
    return out


def _never_json(body: dict[str, Any]) -> str:
    return "Sure! Here is what I remember about the user."


def _run(bench: Path, out: Path, system: str, options: list[str], url: str) -> Any:
    return CliRunner().invoke(app, [
        "run", "--bench", "synth", "--data", str(bench), "--tier", "4k", "--system", system,
        *options, "--model", "openai:stub", "--base-url", url, "--no-cache", "--out", str(out)])


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("system, options", AGENTS)
def test_an_agent_that_ingests_nothing_has_ingest_failed_errors_and_exits_3(
        bench: Path, tmp_path: Path, system: str, options: list[str]) -> None:
    with StubServer(answer=_never_json) as stub:
        stub.models = [{"id": "stub"}]
        done = _run(bench, tmp_path / "run", system, options, stub.base_url)
        asked = [r for r in stub.requests
                 if "Insufficient information" in json.dumps(r["messages"][0])]
    assert done.exit_code == 3, done.output
    records = _records(tmp_path / "run")
    assert len(records) == 2
    for record in records:
        assert record["status"] == "error" and record["scores"] == {}
        assert record["response"]["error"]["kind"] == "ingest_failed"
        assert record["response"]["meta"]["ingest_failures"]
    assert asked == []  # no answer was asked of an empty memory
    # every ingest request asked for structured output
    assert all("response_format" in r for r in stub.requests)
    said = " ".join(done.output.split())
    assert "ingest failed: 2 questions need sessions that could not be read" in said
    assert "Rerun the same command" not in said  # a rerun reads the same replies
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == {"records": 2, "ok": 0, "errors": 2, "ingest_failed": 2}


def test_every_report_shows_ingest_failures_per_system(bench: Path, tmp_path: Path) -> None:
    runs = []
    with StubServer(answer=_never_json) as stub:
        stub.models = [{"id": "stub"}]
        for system, options in AGENTS[:2]:
            runs.append(str(tmp_path / system))
            assert _run(bench, tmp_path / system, system, options, stub.base_url).exit_code == 3
    runner = CliRunner()
    md = runner.invoke(app, ["report", runs[0]])
    assert "**Ingest failures:** 2 questions whose sessions could not be read" in md.output
    js = json.loads(runner.invoke(app, ["report", runs[0], "--format", "json"]).output)
    assert js["summary"]["ingest_failed"] == 2
    assert js["summary"]["error_kinds"] == {"ingest_failed": 2}
    board = runner.invoke(app, ["report", *runs])
    rows = [line for line in board.output.splitlines() if "2 (2 ingest failed)" in line]
    assert {("fact-memory" in r, "summary-memory" in r) for r in rows} >= {(True, False),
                                                                           (False, True)}
    page = tmp_path / "board.html"
    html = runner.invoke(app, ["report", *runs, "--format", "html", "--out", str(page)])
    assert html.exit_code == 0, html.output
    assert page.read_text().count("ingest_failed: 2") >= 2
