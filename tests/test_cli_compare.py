"""`memgauge compare`: paired comparison of run folders, Markdown and JSON."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.schema import BenchmarkInfo, ErrorInfo, Record, Response

runner = CliRunner()


def rec(qid, scores, *, episode="e1", status="ok", answer="a"):
    error = ErrorInfo(kind="timeout", message="slow") if status == "error" else None
    return Record(
        question_id=qid, episode_id=episode, benchmark=BenchmarkInfo(name="t"), status=status,
        ability="information_extraction", answer_type="free_text", question=f"{qid} what?",
        gold="g", prediction=None if error else answer,
        response=Response(text=None if error else answer, error=error), scores=scores,
    )


def write_run(path, records):
    path.mkdir()
    (path / "manifest.json").write_text(json.dumps({"config": {"identity": {}}}))
    (path / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    return str(path)


def make_runs(tmp_path, *, judge=False):
    def s(v):
        return {"rule": v, "llm_judge": 1.0 - v} if judge else {"rule": v}
    # A right on q1..q3; B: q1 right, q2 and q3 wrong (regressions), q4 wrong->right, q5 error
    a = [rec("q1", s(1.0)), rec("q2", s(1.0)), rec("q3", s(1.0), episode="e2"),
         rec("q4", s(0.0), episode="e2"), rec("q5", s(1.0), episode="e3")]
    b = [rec("q1", s(1.0)), rec("q2", s(0.0), answer="b | c"), rec("q3", s(0.0), episode="e2"),
         rec("q4", s(1.0), episode="e2"), rec("q5", {}, episode="e3", status="error")]
    return write_run(tmp_path / "base", a), write_run(tmp_path / "new", b)


def test_compare_markdown(tmp_path):
    a, b = make_runs(tmp_path)
    r = runner.invoke(app, ["compare", a, b])
    assert r.exit_code == 0, r.output
    # paired q1..q4: A 3/4, B 2/4, flips right->wrong 2 (q2, q3), wrong->right 1 (q4);
    # McNemar n=3, min=1: 2 * (1 + 3) / 8 = 1.0
    assert "| new | 4 | 75.0% | 50.0% | -25.0 pp" in r.stdout
    assert "| 1 | 2 | 1 |" in r.stdout  # p, right->wrong, wrong->right
    assert "### new: 2" in r.stdout
    # regressions side by side: question, gold, the baseline's answer, the run's
    assert "| `q2` | information_extraction | q2 what? | g | a | b \\| c |" in r.stdout
    assert "| `q3` |" in r.stdout and "| `q4` |" not in r.stdout


def test_compare_json(tmp_path):
    a, b = make_runs(tmp_path)
    r = runner.invoke(app, ["compare", a, b, "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["baseline"] == "base"
    (cmp,) = data["comparisons"]
    assert cmp["scorer"] == "rule"
    assert (cmp["n"], cmp["a_only"], cmp["b_only"], cmp["errors_b"]) == (4, 2, 1, 1)
    assert cmp["regressions"] == ["q2", "q3"] and cmp["improvements"] == ["q4"]
    assert cmp["mcnemar_p"] == 1.0


def test_compare_prefers_judge_and_accepts_scorer(tmp_path):
    a, b = make_runs(tmp_path, judge=True)
    r = runner.invoke(app, ["compare", a, b, "--format", "json"])
    assert r.exit_code == 0, r.output
    cmp = json.loads(r.stdout)["comparisons"][0]
    # judge = 1 - rule: A right on q4 only, B right on q2, q3: one regression (q4)
    assert cmp["scorer"] == "llm_judge" and cmp["regressions"] == ["q4"]
    r = runner.invoke(app, ["compare", a, b, "--scorer", "rule", "--format", "json"])
    assert json.loads(r.stdout)["comparisons"][0]["regressions"] == ["q2", "q3"]


def test_compare_errors(tmp_path):
    a, b = make_runs(tmp_path)
    r = runner.invoke(app, ["compare", a])
    assert r.exit_code == 2 and "at least two" in r.output
    r = runner.invoke(app, ["compare", a, str(tmp_path / "nope")])
    assert r.exit_code == 2 and "not a run folder" in r.output
    r = runner.invoke(app, ["compare", a, b, "--scorer", "bleu"])
    assert r.exit_code == 2 and "'bleu' not found" in r.output
    r = runner.invoke(app, ["compare", a, b, "--format", "csv"])
    assert r.exit_code == 2 and "unknown format" in r.output


def test_compare_marks_few_pairs_and_one_cluster(tmp_path):
    a = write_run(tmp_path / "a", [rec("q1", {"rule": 1.0}), rec("q2", {"rule": 0.0})])
    b = write_run(tmp_path / "b", [rec("q1", {"rule": 1.0}), rec("q2", {"rule": 0.0})])
    r = runner.invoke(app, ["compare", a, b])
    assert r.exit_code == 0, r.output
    # two pairs, no flips: a bootstrap [+0.0, +0.0] on 2 questions is marked, and one
    # episode's clustered SE is undefined, not 0.00
    assert "+0.0 pp [+0.0, +0.0] (small n: under 30 pairs, interval too narrow)" in r.stdout
    assert "| 1 | undefined (one cluster) |" in r.stdout
    js = runner.invoke(app, ["compare", a, b, "--format", "json"])
    assert js.exit_code == 0, js.output
    [c] = json.loads(js.stdout)["comparisons"]
    assert c["se_clustered"] is None and c["n_clusters"] == 1  # undefined, not 0.0


def test_compare_of_runs_with_no_shared_question_is_an_error(tmp_path):
    # unrelated runs (other benchmarks): "n paired 0, p = 1" with exit 0 read like a tie
    a = write_run(tmp_path / "locomo", [rec("conv-1:q1", {"rule": 1.0})])
    b = write_run(tmp_path / "synth", [rec("s-q1", {"rule": 0.0}), rec("s-q2", {"rule": 1.0})])
    for fmt in ("md", "json"):
        r = runner.invoke(app, ["compare", a, b, "--format", fmt])
        assert r.exit_code == 2, r.output
        said = " ".join(r.output.split())
        assert "synth and locomo have no question to compare" in said
        assert "1 only in locomo, 2 only in synth" in said and "same benchmark" in said
