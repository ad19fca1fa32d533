"""`memgauge audit`: judge-vs-rule and judge-vs-judge agreement of a run folder."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memgauge.cli import app
from memgauge.schema import BenchmarkInfo, ErrorInfo, Record, Response

runner = CliRunner()


def rec(qid, scores, *, answer_type="integer", status="ok", meta=None):
    error = ErrorInfo(kind="timeout", message="slow") if status == "error" else None
    return Record(
        question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name="t"), status=status,
        ability="information_extraction", subtype="count", answer_type=answer_type,
        question="q?", gold="g", response=Response(text=None if error else "a", error=error),
        scores=scores, meta=meta or {},
    )


def write_run(path, records):
    path.mkdir()
    (path / "manifest.json").write_text(json.dumps({"config": {"identity": {}}}))
    (path / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    return str(path)


def make_run(tmp_path, *, judges=True):
    """Closed-form: q1 agree (1/1), q2 over-credit (judge 1, rule 0), q3 agree (0/0),
    q4 under-credit (judge 0, rule 1), q5 judge-b only 0.75 vs judge 1; q6 free text
    (judge 1, rule 0: left out); q7 error; q8 judge failure."""
    def s(rule, judge=None, judge_b=None):
        out = {"rule": rule}
        if judges and judge is not None:
            out["judge"] = judge
        if judges and judge_b is not None:
            out["judge-b"] = judge_b
        return out
    records = [
        rec("q1", s(1, 1, 1)), rec("q2", s(0, 1, 1)), rec("q3", s(0, 0, 0)),
        rec("q4", s(1, 0, 0)), rec("q5", s(1, 1, 0.75)),
        rec("q6", s(0, 1, 1), answer_type="free_text"),
        rec("q7", {}, status="error"),
        rec("q8", s(1), meta={"judge_error": {"kind": "timeout", "message": "judge slow"}}),
    ]
    return write_run(tmp_path / "run1", records)


def test_audit_markdown(tmp_path):
    run = make_run(tmp_path)
    r = runner.invoke(app, ["audit", run, "--judge", "judge"])
    assert r.exit_code == 0, r.output
    # judge on q1..q5: correct T T F F T, rule T F F T T: agree 3/5, over 1 (q2), under 1 (q4)
    # kappa: judge T3 F2, rule T3 F2: chance 9 + 4 = 13; (5*3 - 13) / (25 - 13) = 1/6
    assert "# memgauge audit: run1" in r.stdout
    assert "| judge | 5 | 60.0% | 0.167 | 1 (20.0%) | 1 (20.0%) | 60.0% | 60.0% | 1 | 0 |" \
        in r.stdout
    assert "- `q2` over-credit: judge 1, rule 0" in r.stdout
    assert "- `q4` under-credit: judge 0, rule 1" in r.stdout
    assert "- `q8` timeout: judge slow" in r.stdout
    assert "8 records: 7 ok, 1 errors" in r.stdout
    assert "judge-b" not in r.stdout.split("## Judge vs rule (closed-form items)")[1]


def test_audit_json_matches_markdown_numbers(tmp_path):
    run = make_run(tmp_path)
    out = tmp_path / "audit.json"
    r = runner.invoke(app, ["audit", run, "--format", "json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert json.loads(out.read_text()) == data
    assert data["run"] == "run1" and data["judges"] == ["judge", "judge-b"]
    assert (data["n_records"], data["n_ok"], data["n_errors"]) == (8, 7, 1)
    j = data["judge_vs_rule"]["judge"]["overall"]
    assert (j["n"], j["over_credit"], j["under_credit"]) == (5, 1, 1)
    assert j["agreement"] == 0.6 and abs(j["kappa"] - 1 / 6) < 1e-12
    assert [d["question_id"] for d in data["judge_vs_rule"]["judge"]["disagreements"]] \
        == ["q2", "q4"]
    # judge-b at 1.0: q5 (0.75) is now wrong while the rule says right
    b = data["judge_vs_rule"]["judge-b"]["overall"]
    assert (b["n"], b["over_credit"], b["under_credit"]) == (5, 1, 2)  # q1..q5
    (pair,) = data["judge_pairs"]
    assert pair["n"] == 6 and pair["disagreements"] == ["q5"]  # q6 free text counts here
    assert [f["question_id"] for f in data["failures"]["judge"]] == ["q8"]
    assert "judge-b" in data["failures"]  # the unnamed failure counts for both judges


def test_audit_threshold(tmp_path):
    run = make_run(tmp_path)
    r = runner.invoke(app, ["audit", run, "--judge", "judge-b", "--threshold", "0.5",
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["threshold"] == 0.5 and data["judges"] == ["judge-b"]
    b = data["judge_vs_rule"]["judge-b"]["overall"]
    assert (b["over_credit"], b["under_credit"]) == (1, 1)  # q5 at 0.75 now counts correct


def test_audit_errors(tmp_path):
    run = make_run(tmp_path)
    r = runner.invoke(app, ["audit", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "not a run folder" in r.output
    bare = write_run(tmp_path / "bare", [rec("q1", {"rule": 1})])
    r = runner.invoke(app, ["audit", bare])
    assert r.exit_code == 2
    assert "no judge scores in" in r.output
    assert f"memgauge score {bare} --judge openai:<name>" in r.output
    r = runner.invoke(app, ["audit", run, "--judge", "judge-x"])
    assert r.exit_code == 2
    assert "judge scorer 'judge-x' not found" in r.output
    assert "scorers there: judge, judge-b, rule" in r.output
    r = runner.invoke(app, ["audit", run, "--rule", "exact"])
    assert r.exit_code == 2 and "rule scorer 'exact' not found" in r.output
    r = runner.invoke(app, ["audit", run, "--format", "csv"])
    assert r.exit_code == 2 and "unknown format" in r.output
    r = runner.invoke(app, ["audit", run, "--threshold", "0"])
    assert r.exit_code == 2 and "threshold" in r.output


def test_audit_sees_a_judge_whose_every_call_failed(tmp_path):
    down = {"judge_errors": {"judge-b": {"kind": "http_500", "message": "judge down"}}}
    run = write_run(tmp_path / "run1", [rec("q1", {"rule": 1, "judge": 1}, meta=down),
                                        rec("q2", {"rule": 0, "judge": 0}, meta=down)])
    r = runner.invoke(app, ["audit", run])
    assert r.exit_code == 0, r.output
    failures = r.stdout.split("## Judge failures")[1]
    assert "judge-b" in failures and "- `q1` http_500: judge down" in failures
    named = runner.invoke(app, ["audit", run, "--judge", "judge-b", "--format", "json"])
    assert named.exit_code == 0, named.output
    assert len(json.loads(named.stdout)["failures"]["judge-b"]) == 2
