"""The library API: ``memgauge.run`` and ``memgauge.score`` drive a run and its judging from
Python, return what they did, and raise a named exception (never SystemExit) for a
configuration mistake, before any request (issue 26 §3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.datasets import colour_answer, write_memlens
from helpers.stub_server import StubServer
from typer.testing import CliRunner

import memgauge
from memgauge.cli import app
from memgauge.runner import read_records

N = 4


def _run(tmp_path: Path, base_url: str, **fields) -> memgauge.RunSummary:  # type: ignore[no-untyped-def]
    data = write_memlens(tmp_path, N)
    return memgauge.run(bench="memlens", data=str(data), image_dir=str(data.parent),
                        model="openai:m", base_url=base_url, out=str(tmp_path / "run"),
                        cache=False, progress=False, **fields)


def test_run_returns_the_folder_and_its_counts_and_a_second_call_resumes(tmp_path):
    with StubServer(answer=colour_answer) as stub:
        first = _run(tmp_path, stub.base_url)
        assert (first.status, first.records, first.done, first.skipped) == ("finished", N, N, 0)
        assert first.ok + first.errors == N and first.ok_records == first.ok
        assert first.run_dir == tmp_path / "run"
        assert len(read_records(first.run_dir)) == N
        sent = len(stub.requests)
        again = _run(tmp_path, stub.base_url)
    assert (again.done, again.skipped, again.records) == (0, first.ok, N)
    assert len(stub.requests) == sent + first.errors  # only the failed ones asked again


def test_run_takes_a_run_config_too(tmp_path):
    from memgauge.benchmarks.synth import SynthConfig, generate

    generate(SynthConfig(out=str(tmp_path / "b"), questions=N, tiers=["4k"], seed=3))
    config = memgauge.RunConfig(bench="synth", data=str(tmp_path / "b"),
                                out=str(tmp_path / "run"), model="none:", system="oracle",
                                progress=False)
    assert config.dataset.bench == "synth" and config.execution.out == config.out
    summary = memgauge.run(config)
    assert summary.records == N == summary.ok


def test_a_bad_value_raises_a_config_error_naming_the_field_before_any_request(tmp_path):
    with StubServer(answer=colour_answer) as stub:
        with pytest.raises(memgauge.ConfigFieldError) as exc:
            _run(tmp_path, stub.base_url, concurrency=0)
        assert stub.requests == []
    assert exc.value.field == "concurrency"
    assert str(exc.value) == "concurrency 0: must be at least 1"  # no flag: not the CLI
    assert not (tmp_path / "run").exists()
    with pytest.raises(memgauge.ConfigError, match="not a field"):
        memgauge.run(bench="memlens", data="x", out=str(tmp_path / "r"), concurency=2)


def test_the_cli_names_its_flag_for_the_same_mistake(tmp_path):
    res = CliRunner().invoke(app, ["run", "--bench", "memlens", "--data", "x", "--model",
                                   "openai:m", "--base-url", "http://127.0.0.1:9", "--out",
                                   str(tmp_path / "r"), "--timeout", "0"])
    assert res.exit_code == 2
    assert "--timeout 0: must be more than 0" in res.output
    assert "timeout_s" not in res.output


@pytest.mark.parametrize(("options", "said"), [
    ({"top_k": "0"}, "system_options top_k=0: must be at least 1"),
    ({"topk": "3"}, "system_options topk: rag-bm25 has no such option"),
    ({"top_k": "three"}, "system_options top_k='three': rag-bm25 needs a whole number"),
])
def test_a_bad_system_option_names_the_field_and_its_key_not_the_flag(tmp_path, options,
                                                                      said):
    """The CLI's wording for the same mistakes (--system-option top_k=0: ...) is checked
    in tests/runner/test_fail_fast.py."""
    with StubServer(answer=colour_answer) as stub:
        with pytest.raises(memgauge.ConfigFieldError) as exc:
            _run(tmp_path, stub.base_url, system="rag-bm25", system_options=options)
        assert stub.requests == []
    assert exc.value.field == "system_options"
    assert str(exc.value).startswith(said) and "--" not in str(exc.value)


def test_score_judges_a_run_and_a_second_call_judges_nothing_again(tmp_path):
    with StubServer(answer=colour_answer) as model:
        run_dir = _run(tmp_path, model.base_url).run_dir
    with StubServer(answer=lambda body: '{"score": 1, "reason": "ok"}') as judge:
        summary = memgauge.score(run_dir=str(run_dir), judge="openai:j",
                                 judge_base_url=judge.base_url, label_errors=False,
                                 concurrency=1, cache=False)
        assert (summary.counts["judged"], summary.failures) == (N, 0)
        assert summary.cache_hits is None  # no cache: nothing looked up
        assert all(r.scores.get("judge") == 1.0 for r in read_records(run_dir).values())
        sent = len(judge.requests)
        again = memgauge.score(memgauge.ScoreConfig(
            run_dir=str(run_dir), judge="openai:j", judge_base_url=judge.base_url,
            label_errors=False, cache=False))
        assert (again.counts["judged"], again.counts["skipped"]) == (0, N)
        assert len(judge.requests) == sent


def test_score_configuration_mistakes_are_named_exceptions(tmp_path):
    with pytest.raises(memgauge.ConfigFieldError) as exc:
        memgauge.score(run_dir=str(tmp_path), judge="gpt-4o")
    assert exc.value.field == "judge" and "openai:<name>" in str(exc.value)
    with pytest.raises(memgauge.ConfigError, match="not a run folder"):
        memgauge.score(run_dir=str(tmp_path), judge="openai:j", cache=False)


def test_import_memgauge_stays_light():
    code = ("import sys, memgauge; heavy = [m for m in ('memgauge.runner', 'pydantic', "
            "'memgauge.api') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(Path(memgauge.__file__).parents[1])})
    assert out.stdout.strip() == "[]"
