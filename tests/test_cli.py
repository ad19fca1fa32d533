"""The command line as a user drives it."""

from __future__ import annotations

import json

from helpers.datasets import write_memlens
from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.runner import read_records

runner = CliRunner()


def test_demo_runs_offline_passes_its_gates_and_writes_a_report(tmp_path):
    out = tmp_path / "demo"
    result = runner.invoke(app, ["demo", "--out", str(out), "--questions", "20",
                                 "--tiers", "8k,32k", "--model", "none"])
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    assert "Overall: **PASS**" in report and "## Baselines (offline; oracle readers" in report
    assert "rag-bm25 (top 5, oracle reader) | 32k | 20 |" in report
    gates = json.loads((out / "benchmark" / "validation" / "gates.json").read_text())
    assert gates["passed"] and gates["indistinguishability"]["auc"] <= 0.60
    assert gates["caption_proof"].get("n_questions", 0) > 0  # OCR ran (the demo extra)
    assert "memgauge run --bench synth" in result.output
    from memgauge.demo import closing_commands  # printed whole, so it pastes as printed

    assert closing_commands(out / "benchmark", ("8k", "32k")) in result.output
    page = (out / "report.html").read_text()  # the same runs, browsable (six runs, 120 rows)
    assert page.count("<tr data-run=") == 120
    assert "rag-embed" in page and "http://" not in page and "https://" not in page
    js = runner.invoke(app, ["report", str(out / "runs" / "8k" / "rag-bm25"), "--format", "json"])
    summary = json.loads(js.output)["summary"]
    assert summary["n_records"] == 20 and summary["n_errors"] == 0


def test_replayed_fixture_run_and_rerun_resumes(tmp_path):
    from importlib import resources

    fixture = resources.files("memgauge") / "data" / "memlens_mini"
    args = ["run", "--bench", "memlens", "--data", str(fixture / "dataset.json"),
            "--image-dir", str(fixture), "--model", f"replay:{fixture / 'predictions.json'}",
            "--out", str(tmp_path / "r")]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "0 answered now" in again.output


def test_run_report_merge_with_replay(tmp_path):
    data = write_memlens(tmp_path, 6)
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps([{"question_id": f"q{i:03d}", "prediction": "red"}
                                 for i in range(5)]))  # q005 has no prediction: an error
    base = ["run", "--bench", "memlens", "--data", str(data), "--image-dir", str(tmp_path),
            "--model", f"replay:{preds}"]
    statuses = []
    for shard in ("0/2", "1/2"):
        r = runner.invoke(app, [*base, "--out", str(tmp_path / shard.replace("/", "of")),
                                "--shard", shard])
        statuses.append(r.exit_code)
    # the shard holding q005 exits 3 (some questions failed), naming the cause; the other 0
    assert sorted(statuses) == [0, 3], statuses
    m = runner.invoke(app, ["merge", str(tmp_path / "0of2"), str(tmp_path / "1of2"),
                            "--out", str(tmp_path / "all")])
    assert m.exit_code == 0, m.output
    rep = runner.invoke(app, ["report", str(tmp_path / "all")])
    assert rep.exit_code == 0
    assert "## Errors (1)" in rep.output and "q005" in rep.output and "replay_missing" in rep.output
    assert "| 5 |" in rep.output  # five scored questions, the error kept apart
    # every prediction is "red": the four non-red mugs are wrong, and rule-labelled
    assert "## Error labels" in rep.output and "4 wrong answers" in rep.output


def test_report_names_the_tier_read_off_the_file_name(tmp_path):
    data = write_memlens(tmp_path, 2).rename(tmp_path / "dataset_64k.json")
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps([{"question_id": f"q{i:03d}", "prediction": "red"}
                                 for i in range(2)]))
    r = runner.invoke(app, ["run", "--bench", "memlens", "--data", str(data), "--image-dir",
                            str(tmp_path), "--model", f"replay:{preds}", "--out",
                            str(tmp_path / "r")])
    assert r.exit_code == 0, r.output
    rep = runner.invoke(app, ["report", str(tmp_path / "r")])
    assert rep.exit_code == 0 and "- **tier:** 64k" in rep.output


def test_bad_input_is_a_clear_error(tmp_path):
    data = tmp_path / "d.json"
    data.write_text(json.dumps([{"question_id": "x1", "question": "?", "answer": "a",
                                 "question_type": "information_extraction",
                                 "haystack_sessions": "oops"}]))
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"question_id": "x1", "prediction": "a"}]))
    r = runner.invoke(app, ["run", "--bench", "memlens", "--data", str(data), "--model",
                            "replay:" + str(preds), "--out", str(tmp_path / "r")])
    assert r.exit_code == 2
    assert "x1" in r.output and "haystack_sessions" in r.output
    r2 = runner.invoke(app, ["run", "--bench", "nope", "--data", str(data), "--model",
                             "openai:m", "--out", str(tmp_path / "r2")])
    assert r2.exit_code == 2 and "unknown benchmark" in r2.output
    r3 = runner.invoke(app, ["run", "--bench", "memlens", "--data", str(data), "--model",
                             "openai:m", "--out", str(tmp_path / "r3"), "--shard", "3/2"])
    assert r3.exit_code == 2 and "shard" in r3.output


def test_demo_runs_a_real_local_model(tmp_path):
    """The README's main command: the demo's report opens with the answer table, full
    context, rag and the memory agent read by SmolLM2 through llama.cpp, at the tier whose
    history fits its context. Skips without the `local` extra or the model."""
    import pytest

    from memgauge.demo import MODEL_SYSTEMS
    from memgauge.models._llama_server import engine_version
    from memgauge.models._local_files import is_pulled

    if engine_version() is None or not is_pulled("smollm2"):
        pytest.skip("needs the local extra and `memgauge models pull smollm2`")
    out = tmp_path / "demo"
    result = runner.invoke(app, ["demo", "--out", str(out), "--questions", "10",
                                 "--tiers", "4k,8k", "--model-questions", "1"])
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    assert report.splitlines()[2].startswith("## The answer")
    rows = [ln.split(" | ") for ln in report.splitlines()[:20]
            if ln.startswith("| ") and " | 4k | " in ln]
    assert [r[0].lstrip("| ") for r in rows] == [label for label, _, _ in MODEL_SYSTEMS]
    assert all(r[2:5] == ["4k", "1", "0"] for r in rows), rows  # tier, n answered, errors
    [rec] = read_records(out / "runs" / "4k" / "full-context-smollm2").values()
    assert rec.status == "ok" and rec.prediction and rec.response.usage.input_tokens > 1000
    manifest = json.loads((out / "runs" / "4k" / "full-context-smollm2" / "manifest.json")
                          .read_text())
    assert manifest["model"]["provider"] == "local" and manifest["model"]["slots"] == 1
    page = (out / "report.html").read_text()
    assert "full-context-smollm2" in page or "local:smollm2" in page


def test_scores_outside_0_1_are_refused_by_every_reader_naming_the_line(tmp_path):
    """A run folder with a score of 5.0 must not report 500 % (issue 11, item 8)."""
    from importlib import resources

    fixture = resources.files("memgauge") / "data" / "memlens_mini"
    run_dir = tmp_path / "r"
    res = runner.invoke(app, ["run", "--bench", "memlens", "--data",
                              str(fixture / "dataset.json"), "--image-dir", str(fixture),
                              "--model", f"replay:{fixture / 'predictions.json'}",
                              "--out", str(run_dir)])
    assert res.exit_code == 0, res.output
    path = run_dir / "records.jsonl"
    lines = path.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["scores"]["rule"] = 5.0
    lines[1] = json.dumps(bad)
    path.write_text("\n".join(lines) + "\n")
    for args in (["report", str(run_dir)], ["compare", str(run_dir), str(run_dir)],
                 ["audit", str(run_dir)], ["merge", str(run_dir), "--out", str(tmp_path / "m")],
                 ["score", str(run_dir), "--judge", "openai:j",
                  "--judge-base-url", "http://127.0.0.1:9/v1"]):
        out = runner.invoke(app, args)
        text = " ".join(out.output.split())
        assert out.exit_code == 2, (args, out.output)
        assert "line 2" in text and "score 'rule' is 5.0, outside [0, 1]" in text, text
        assert "Traceback" not in out.output


def test_error_messages_are_not_read_as_markup(tmp_path, monkeypatch):
    """`[...]` in a path or an install hint is printed as written (issue 11: rich markup ate
    `memgauge[local]` and `bench[old]/`)."""
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["run", "--bench", "memlens", "--data", "bench[old]/x.json",
                              "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                              "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "bench[old]/x.json" in res.output, res.output
    import memgauge.models._llama_server as server

    monkeypatch.setattr(server, "engine_version", lambda: None)
    data = write_memlens(tmp_path, 1)
    res = runner.invoke(app, ["run", "--bench", "memlens", "--data", str(data),
                              "--image-dir", str(tmp_path), "--context-mode", "text",
                              "--model", "local:smollm2", "--out", str(tmp_path / "r2")])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    # without the engine: the install hint, extra included; or, if the model is not pulled
    # either, the pull hint (which comes first)
    assert "pip install 'memgauge[local]'" in text or "memgauge models pull smollm2" in text, text


def test_python_dash_m_runs_the_cli():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "memgauge", "--help"], check=False,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "generate" in out.stdout
