"""An unreadable judge reply is never cached, so "rerun to retry" asks the judge again
instead of replaying the failure; ``score --no-cache`` asks again for every verdict
(design 0043, issue 29)."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers.datasets import colour_answer, write_memlens
from helpers.stub_server import StubServer
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.runner import read_records

N = 4


def _answered_run(tmp_path: Path) -> Path:
    data = write_memlens(tmp_path, N)
    out = tmp_path / "run"
    with StubServer(answer=colour_answer) as model:
        res = CliRunner().invoke(app, [
            "run", "--bench", "memlens", "--data", str(data), "--image-dir", str(data.parent),
            "--model", "openai:m", "--base-url", model.base_url, "--out", str(out),
            "--no-cache"])
    assert res.exit_code == 0, res.output
    return out


def _score(run_dir: Path, base_url: str, *extra: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["score", str(run_dir), "--judge", "openai:j",
                                    "--judge-base-url", base_url, "--no-label-errors",
                                    "--concurrency", "1", *extra])


def test_a_rerun_asks_the_judge_again_for_what_it_could_not_read(tmp_path):
    run_dir = _answered_run(tmp_path)
    readable = {"now": False}

    def judge(body: dict) -> str:
        return '{"score": 1, "reason": "same"}' if readable["now"] else "Sure, looks right!"

    with StubServer(answer=judge) as stub:
        first = _score(run_dir, stub.base_url)
        assert first.exit_code == 3, first.output  # every verdict failed: recorded apart
        assert all(r.judge_errors() for r in read_records(run_dir).values())
        sent = len(stub.requests)
        assert sent == N * 3  # three attempts each
        readable["now"] = True  # the judge recovers: the rerun must reach it
        again = _score(run_dir, stub.base_url)
        assert again.exit_code == 0, again.output
        assert len(stub.requests) == sent + N
    assert all(r.scores.get("judge") == 1.0 for r in read_records(run_dir).values())


def test_score_no_cache_asks_again_for_every_verdict(tmp_path):
    run_dir = _answered_run(tmp_path)
    twins = [tmp_path / "twin1", tmp_path / "twin2"]
    for twin in twins:
        shutil.copytree(run_dir, twin)
    with StubServer(answer=lambda body: '{"score": 1}') as stub:
        assert _score(run_dir, stub.base_url).exit_code == 0
        assert len(stub.requests) == N
        cached = _score(twins[0], stub.base_url)  # the same calls: all from the cache
        assert cached.exit_code == 0 and len(stub.requests) == N
        fresh = _score(twins[1], stub.base_url, "--no-cache")
        assert fresh.exit_code == 0, fresh.output
        assert len(stub.requests) == 2 * N
    assert all(r.scores.get("judge") == 1.0 for r in read_records(twins[1]).values())
