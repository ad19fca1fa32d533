"""The f1 scorer's mean is a mean token-F1, never shown as "Accuracy" (issue 12)."""

from __future__ import annotations

from pathlib import Path

from helpers.report_runs import identity, rec, write_run
from typer.testing import CliRunner

from memgauge.cli import app

runner = CliRunner()


def _run(tmp_path: Path) -> str:
    records = [rec("q1", 1.0), rec("q2", 0.0)]
    for r, f1 in zip(records, (0.8, 0.4), strict=True):
        r.scores["f1"] = f1
    return write_run(tmp_path / "a", identity("s1", "8k"), records)


def test_the_f1_row_says_what_its_mean_is(tmp_path: Path) -> None:
    got = runner.invoke(app, ["report", _run(tmp_path)])
    assert got.exit_code == 0, got.output
    assert "| f1 (mean token-F1) | 2 | 60.0 %" in got.output.replace("60.0%", "60.0 %")
    assert "| Scorer | n | Accuracy |" not in got.output


def test_f1_as_the_headline_is_named_so(tmp_path: Path) -> None:
    run = _run(tmp_path)
    got = runner.invoke(app, ["report", run, "--primary", "f1"])
    assert got.exit_code == 0, got.output
    assert "Mean token-F1 (micro)" in got.output
    assert "Accuracy (micro)" not in got.output
    html = tmp_path / "r.html"
    got = runner.invoke(app, ["report", run, "--primary", "f1", "--format", "html", "--out",
                              str(html)])
    assert got.exit_code == 0, got.output
    assert "Mean token-F1 (micro)" in html.read_text()
