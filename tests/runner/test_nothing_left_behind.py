"""A run that wrote no record leaves no folder behind, even when stopped by SIGTERM (Python's
default would end it at once, leaving an --out folder holding only .lock), and ``report``
skips, and names, a folder without records instead of failing on it (design 0051)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from helpers.report_runs import write_three
from typer.testing import CliRunner

from memgauge.benchmarks.synth import SynthConfig, generate
from memgauge.cli import app


def test_sigterm_before_the_first_record_leaves_no_folder(tmp_path):
    root = tmp_path / "b"
    generate(SynthConfig(out=str(root), questions=2, tiers=["4k"], seed=5))
    silent = socket.socket()  # accepts connections, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    out = tmp_path / "runs" / "r"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memgauge", "run", "--bench", "synth", "--data", str(root),
         "--tier", "4k", "--system", "full-context", "--model", "openai:x", "--timeout", "2",
         "--max-attempts", "1", "--base-url", f"http://127.0.0.1:{silent.getsockname()[1]}/v1",
         "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (out / ".lock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (out / ".lock").exists()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        silent.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err  # stopped as Ctrl-C stops it, not killed
    assert not out.exists()
    assert "Traceback" not in err


def test_report_skips_and_names_folders_without_records(tmp_path):
    dirs = write_three(tmp_path / "runs")
    (tmp_path / "runs" / "only-lock").mkdir()
    (tmp_path / "runs" / "only-lock" / ".lock").write_text("")
    empty = tmp_path / "runs" / "no-records"
    empty.mkdir()
    (empty / "manifest.json").write_text(
        (Path(dirs[0]) / "manifest.json").read_text())
    folders = sorted(str(p) for p in (tmp_path / "runs").iterdir())
    res = CliRunner().invoke(app, ["report", *folders, "--format", "json"])
    assert res.exit_code == 0, res.output
    said = " ".join(res.stderr.split())
    assert f"skipped: {tmp_path / 'runs' / 'only-lock'} is not a run folder" in said
    assert f"skipped: {empty} has a manifest but no records" in said
    assert len(json.loads(res.stdout)["tables"]["runs"]) == 3


def test_report_of_folders_without_any_records_is_still_an_error(tmp_path):
    (tmp_path / "only-lock").mkdir()
    res = CliRunner().invoke(app, ["report", str(tmp_path / "only-lock")])
    assert res.exit_code == 2 and "is not a run folder" in res.output
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "typo")])
    assert missing.exit_code == 2


def test_a_runner_that_never_prepared_unlocks_nothing(tmp_path):
    # the ray and worker paths unlock in a finally, also when preparing never ran
    from memgauge.runner import RunConfig
    from memgauge.runner._execute import Runner

    runner = Runner(RunConfig(bench="memlens", data=str(tmp_path / "none.json"),
                              out=str(tmp_path / "r"), model="none:", system="long-context",
                              progress=False))
    runner.unlock()
    runner.unlock()
    assert not (tmp_path / "r").exists()
