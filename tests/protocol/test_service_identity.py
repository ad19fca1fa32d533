"""Two runs of the same served memory, reached at two ports and one with timeout=30, are one
system in the report, named by the service's /info name and version (design 0051)."""

from __future__ import annotations

from helpers.memory_service import served

from memgauge.analysis import build_tables, load_runs
from memgauge.runner import RunConfig, Runner


def test_the_same_service_at_two_ports_and_timeouts_is_one_system(synth, tmp_path) -> None:
    outs = []
    for i, options in enumerate(({}, {"timeout": 30.0})):
        with served("oracle", model="none:") as url:
            out = tmp_path / f"run{i}"
            Runner(RunConfig(bench="synth", data=str(synth), tier="4k", system=url,
                             system_options=options, model="none:", out=str(out),
                             cache=False, progress=False)).run_sync()
            outs.append(str(out))
    tables = build_tables(load_runs(outs))
    assert [s.label for s in tables.systems] == ["http:oracle test · no model"]
    assert len(tables.systems[0].runs) == 2


def test_no_cache_line_for_a_service_whose_answers_no_cache_serves(synth, tmp_path) -> None:
    from helpers.stub_server import StubServer
    from typer.testing import CliRunner

    from memgauge.cli import app

    with StubServer() as stub, served("full-context", model="openai:stub",
                                      base_url=stub.base_url) as url:
        res = CliRunner().invoke(app, ["run", "--bench", "synth", "--data", str(synth),
                                       "--tier", "4k", "--system", url, "--model", "none:",
                                       "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert "answered now" in res.output
    assert "response cache" not in res.output  # was "cache: 0 of 4 answers came from ..."
    report = CliRunner().invoke(app, ["report", str(tmp_path / "r")])
    assert report.exit_code == 0 and "response cache" not in report.output
