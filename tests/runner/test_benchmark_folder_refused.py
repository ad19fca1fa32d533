"""A benchmark folder where a run folder belongs (issue 29 §3): `report`, `compare`, `audit`,
`score` on it said "field 'config.identity': expected an object", and `run --out` on it
mixed a run into the benchmark. Each now says it is a benchmark folder and what to pass,
exit 2, and `run` writes nothing there and sends nothing."""

from __future__ import annotations

import json

import pytest
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app


@pytest.fixture(scope="module")
def synth_bench(tmp_path_factory):
    bench = tmp_path_factory.mktemp("synth") / "bench"
    made = CliRunner().invoke(app, ["generate", "synth", "--out", str(bench), "--questions",
                                    "2", "--tiers", "4k"])
    assert made.exit_code == 0, made.output
    return bench


@pytest.fixture
def games_bench(tmp_path):
    """A games benchmark's marker file, as `memgauge generate games` writes it (no
    manifest.json of its own)."""
    bench = tmp_path / "games-bench"
    bench.mkdir()
    (bench / "benchmark.json").write_text(json.dumps(
        {"format": "memgauge.games-bench/1", "generator_version": 1}))
    return bench


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("command", [["report"], ["audit"], ["compare", "OTHER"],
                                     ["score", "--judge", "openai:m", "--judge-base-url",
                                      "http://127.0.0.1:9/v1"]])
@pytest.mark.parametrize("which", ["synth", "games"])
def test_reading_a_benchmark_as_a_run_names_it_and_what_to_pass(
        command, which, synth_bench, games_bench):
    bench = synth_bench if which == "synth" else games_bench
    args = [command[0], str(bench)] + [str(bench) if a == "OTHER" else a for a in command[1:]]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    out = _flat(res.output)
    assert f"{bench} is a benchmark folder (written by `memgauge generate`), not a run " \
           f"folder: evaluate it with `memgauge run --data {bench} ... --out RUN_DIR`" in out
    assert "config.identity" not in out and "Traceback" not in out


@pytest.mark.parametrize("which", ["synth", "games"])
def test_run_out_on_a_benchmark_is_refused_before_anything_is_written_or_sent(
        tmp_path, which, synth_bench, games_bench):
    bench = synth_bench if which == "synth" else games_bench
    before = sorted(p.name for p in bench.iterdir())
    with StubServer() as stub:
        res = CliRunner().invoke(app, [
            "run", "--bench", "synth", "--data", str(synth_bench), "--tier", "4k",
            "--system", "full-context", "--model", "openai:m", "--base-url", stub.base_url,
            "--no-cache", "--out", str(bench)])
        assert stub.requests == []
    assert res.exit_code == 2, res.output
    assert f"--out {bench} is a benchmark folder" in _flat(res.output)
    assert f"pass the benchmark as --data {bench} and a new folder as --out" in _flat(res.output)
    assert sorted(p.name for p in bench.iterdir()) == before  # no .lock, no records
