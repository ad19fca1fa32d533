"""Cross-run tables: numbers worked out by hand, and the same numbers in Markdown and JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers.report_runs import AR, IE, TR, identity, rec, three_runs, write_run, write_three
from typer.testing import CliRunner

from memgauge.analysis import RunData, build_tables, load_runs, wilson_ci
from memgauge.analysis._tables import run_labels, tier_sort_key
from memgauge.cli import app
from memgauge.errors import ConfigError, MemgaugeError
from memgauge.report import render_tables_markdown

runner = CliRunner()


@pytest.fixture(scope="module")
def tables():
    return build_tables(three_runs())


def by_run(tables, label):
    return next(r for r in tables.runs if r.run == label)


def test_leaderboard_counts_micro_macro_ci_se_and_coverage(tables):
    a = by_run(tables, "A")
    assert (a.system, a.tier, a.n_records, a.n_ok, a.n_errors, a.n) == (
        "s1 · m · image", "8k", 6, 5, 1, 5)
    assert a.error_kinds == {"timeout": 1}
    assert a.accuracy == pytest.approx(3 / 5)  # the error (q5) is not counted as wrong
    assert a.macro_accuracy == pytest.approx((2 / 3 + 1 / 2) / 2)  # differs from micro
    assert (a.ci_low, a.ci_high) == wilson_ci(3, 5)  # 5 questions: Wilson, not bootstrap
    assert a.ci_method == "wilson" and a.small_n
    assert a.ci_low < a.accuracy < a.ci_high
    # deviations from 0.6 summed per episode: e1 +0.8, e2 -0.6, e3 -0.2
    assert a.se_clustered == pytest.approx(math.sqrt(0.64 + 0.36 + 0.04) / 5)
    assert a.n_episodes == 3
    assert (a.coverage, a.n_attempted, a.n_answerable) == (pytest.approx(0.8), 4, 5)
    assert (a.per_answer_accuracy, a.n_per_answer) == (pytest.approx(0.75), 4)
    assert math.isnan(a.refusal_accuracy) and a.n_refusal == 0
    assert (a.evidence_recall, a.n_recall) == (1.0, 1)

    b = by_run(tables, "B")  # q8 has no score: counted ok, not in n
    assert (b.n_ok, b.n, b.accuracy) == (5, 4, pytest.approx(0.25))
    assert b.macro_accuracy == pytest.approx((1 / 3 + 0) / 2)
    c = by_run(tables, "C")
    assert (c.accuracy, c.refusal_accuracy, c.n_refusal, c.n_abilities) == (1.0, 1.0, 1, 3)


def test_systems_group_runs_by_identity_without_tier(tables):
    assert [(s.label, s.runs, s.tiers) for s in tables.systems] == [
        ("s1 · m · image", ["A", "B"], ["8k", "32k"]),
        ("s2 · m · image", ["C"], ["8k"])]
    assert tables.tiers == ["8k", "32k"]
    assert tables.abilities == [IE, TR, AR]
    assert tables.primary == "rule"


def test_ability_matrix_and_accuracy_vs_tier(tables):
    ie_a = tables.ability_matrix["A"][IE]
    assert (ie_a.accuracy, ie_a.n) == (pytest.approx(2 / 3), 3)
    s1 = tables.tier_curves["s1 · m · image"]
    assert (s1[IE]["8k"].accuracy, s1[IE]["8k"].n) == (pytest.approx(2 / 3), 3)
    assert (s1[IE]["32k"].accuracy, s1[IE]["32k"].n) == (pytest.approx(1 / 3), 3)
    assert (s1[TR]["8k"].accuracy, s1[TR]["32k"].accuracy) == (0.5, 0.0)
    assert AR not in s1  # s1 never asked a refusal question
    assert list(tables.tier_curves["s2 · m · image"][AR]) == ["8k"]


def test_evidence_depth_bins_by_tier(tables):
    s1 = tables.depth["s1 · m · image"]
    assert list(s1) == ["0.0–0.2", "0.2–0.4", "0.4–0.6", "0.6–0.8", "0.8–1.0"]
    # A: q1, q2 right and q3 wrong in [0, 0.2); the errored q5 there is left out
    assert (s1["0.0–0.2"]["8k"].accuracy, s1["0.0–0.2"]["8k"].n) == (pytest.approx(2 / 3), 3)
    assert (s1["0.8–1.0"]["8k"].accuracy, s1["0.8–1.0"]["8k"].n) == (1.0, 1)
    assert (s1["0.4–0.6"]["32k"].accuracy, s1["0.4–0.6"]["32k"].n) == (1.0, 1)
    assert s1["0.2–0.4"]["8k"].n == 0
    assert "s2 · m · image" not in tables.depth  # C carries no depth
    assert tables.depth_note == ""


def test_depth_table_is_empty_with_a_note_without_depths():
    t = build_tables([RunData("C", identity("s2", "8k"), three_runs()[2].records)])
    assert t.depth == {} and "evidence_depth" in t.depth_note
    assert t.xy == {}


def test_xy_matrix_only_for_runs_with_both_labels(tables):
    grid = tables.xy["A"]
    assert (grid["X1"]["Y1"].accuracy, grid["X1"]["Y1"].n) == (pytest.approx(2 / 3), 3)
    assert (grid["X2"]["Y3"].accuracy, grid["X2"]["Y3"].n) == (1.0, 1)
    assert sum(c.n for row in grid.values() for c in row.values()) == 4  # q6 has X only
    assert list(tables.xy) == ["A"]


def test_error_labels_per_run(tables):
    assert tables.error_labels["A"] == {
        "n_wrong": 2, "by_label": {"unlabelled": 1, "answerability_failure": 1},
        "by_category": {"unknown": 1, "reasoning": 1}}
    assert tables.error_labels["B"]["by_label"] == {"unlabelled": 3}
    assert tables.error_labels["C"]["n_wrong"] == 0
    assert tables.label_names == ["answerability_failure", "unlabelled"]


def test_spearman_needs_three_runs_and_follows_the_ranking(tables):
    # IE: B 1/3 < A 2/3 < C 1; TR: B 0 < A 1/2 < C 1 -> the same ranking
    (row,) = tables.spearman
    assert (row.ability_a, row.ability_b, row.n_runs, row.rho) == (IE, TR, 3, 1.0)
    omitted = {(o["ability_a"], o["ability_b"]): o for o in tables.spearman_omitted}
    assert set(omitted) == {(IE, AR), (TR, AR)}
    assert omitted[(IE, AR)]["n_runs"] == 1 and "need 3" in omitted[(IE, AR)]["reason"]


def test_spearman_reversed_ranking_is_minus_one():
    def run(label, ie, tr):
        recs = [rec(f"i{i}", v) for i, v in enumerate(ie)]
        recs += [rec(f"t{i}", v, ability=TR) for i, v in enumerate(tr)]
        return RunData(label, {}, recs)

    t = build_tables([run("r1", [1, 0, 0], [1]), run("r2", [1, 1, 0], [1, 0]),
                      run("r3", [1, 1, 1], [0])])
    (row,) = t.spearman
    assert row.rho == pytest.approx(-1.0) and row.n_runs == 3
    assert [s.label for s in t.systems] == ["r1", "r2", "r3"]  # no identity: one per run
    assert t.tiers == ["-"]


def test_question_rows(tables):
    rows = {(q.run, q.question_id): q for q in tables.questions}
    assert len(rows) == 16
    assert rows[("A", "q1")].correct == "right" and rows[("A", "q1")].error_label is None
    assert rows[("A", "q1")].retrieved == ["s1", "s2"]
    assert rows[("A", "q1")].evidence_recall == 1.0
    assert (rows[("A", "q3")].correct, rows[("A", "q3")].error_label) == ("wrong", "unlabelled")
    assert rows[("A", "q6")].error_label == "answerability_failure"
    err = rows[("A", "q5")]
    assert (err.correct, err.error_kind, err.error_message) == ("error", "timeout",
                                                                "slow <server>")
    assert rows[("B", "q8")].correct == "unscored"
    assert rows[("A", "q4")].tier == "8k" and rows[("A", "q4")].evidence_depth == 0.95


def test_primary_prefers_a_judge_that_scored_everything_and_missing_scorer_shows_no_accuracy():
    runs = three_runs()
    judged = [r.model_copy(update={"scores": {**r.scores, "judge": 1.0 - r.scores["rule"]}})
              if "rule" in r.scores else r for r in runs[0].records]
    both = [RunData("A", runs[0].manifest, judged), runs[1]]
    # run B has no judge: the judge does not score every answered question, so it is not
    # the headline unless asked for (issue 11, item 9); the rule scorer covers both runs
    assert build_tables(both).primary == "rule"
    assert build_tables([both[0]]).primary == "judge"  # it covers all of run A
    t = build_tables(both, primary="judge")
    assert t.primary == "judge" and t.scorers == ["judge", "rule"]
    a, b = t.runs
    assert a.accuracy == pytest.approx(2 / 5)
    assert math.isnan(b.accuracy) and b.n == 0 and b.scores["rule"].n == 4
    assert build_tables(runs, primary="rule").primary == "rule"
    with pytest.raises(ConfigError, match="nope"):
        build_tables(runs, primary="nope")


def test_tier_order_and_tier_from_records():
    assert sorted(["1m", "128k", "8k", "-", "32k", "huge"], key=tier_sort_key) == [
        "8k", "32k", "128k", "1m", "huge", "-"]
    run = RunData("x", {}, [rec("q1", 1.0, tier="128k")])
    assert build_tables([run]).runs[0].tier == "128k"


def test_to_dict_is_strict_json(tables):
    data = json.loads(json.dumps(tables.to_dict(), allow_nan=False))
    assert data["runs"][0]["refusal_accuracy"] is None
    assert data["depth"]["s1 · m · image"]["0.2–0.4"]["8k"] == {"accuracy": None, "n": 0}


def test_run_labels_and_loading(tmp_path):
    paths = [tmp_path / "8k" / "rag", tmp_path / "32k" / "rag", tmp_path / "32k" / "full"]
    assert run_labels(paths) == ["8k/rag", "32k/rag", "full"]
    for p in paths:
        write_run(p, identity("s", p.parent.name), [rec("q1", 1.0)])
    runs = load_runs([str(p) for p in paths])
    assert [r.label for r in runs] == ["8k/rag", "32k/rag", "full"]
    assert runs[0].records[0].question_id == "q1"
    (tmp_path / "empty").mkdir()
    with pytest.raises(MemgaugeError, match="no manifest"):
        load_runs([str(tmp_path / "empty")])


def _md_lines(text: str, first_cell: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(f"| {first_cell} |")]


def test_markdown_sections_carry_the_table_numbers(tables):
    md = render_tables_markdown(tables)
    for title in ("Leaderboard", "Accuracy by ability", "Accuracy vs tier",
                  "evidence depth × tier", "(X) × reasoning depth (Y)", "Error labels",
                  "Coverage vs per-answer", "Spearman"):
        assert title in md
    (lead, *_) = _md_lines(md, "A")
    assert "60.0% [23.1, 88.2] (small n: Wilson) (n=5)" in lead and "58.3% (2)" in lead
    assert "80.0% (4/5)" in lead and "75.0% (n=4)" in lead and "±20.4 pp (3)" in lead
    assert "| information_extraction | 66.7% (n=3) | 33.3% (n=3) |" in md  # s1 tiers
    assert "| 0.0–0.2 | 66.7% (n=3) | — |" in md
    # with its interval, Wilson's on 3 questions; † under n = 15
    assert "| X1 | 66.7% [20.8, 93.9] (small n: Wilson) (n=3) † | — | — |" in md
    assert "| information_extraction | temporal_reasoning | 3 | +1.00 |" in md
    assert "16 question rows over 3 run(s)" in md
    # leaderboard: best first
    order = [ln.split("|")[1].strip() for ln in md.split("### Leaderboard")[1]
             .split("###")[0].splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert order == ["C", "A", "B"]


def test_cli_md_json_and_errors(tmp_path):
    dirs = write_three(tmp_path)
    md = runner.invoke(app, ["report", *dirs])
    assert md.exit_code == 0, md.output
    assert "# memgauge report: A" in md.stdout and "## Across runs" in md.stdout
    js = runner.invoke(app, ["report", *dirs, "--format", "json", "--out",
                             str(tmp_path / "r.json")])
    assert js.exit_code == 0, js.output
    data = json.loads(js.stdout)
    assert data == json.loads((tmp_path / "r.json").read_text())
    assert [r["summary"]["n_records"] for r in data["runs"]] == [6, 5, 5]
    expected = build_tables(load_runs(dirs)).to_dict()
    assert data["tables"]["runs"] == expected["runs"]
    assert data["tables"]["tier_curves"] == expected["tier_curves"]
    assert data["tables"]["runs"][0]["accuracy"] == 0.6
    # the Markdown prints the same figure
    assert "60.0% [23.1, 88.2] (small n: Wilson) (n=5)" in md.stdout

    one = json.loads(runner.invoke(app, ["report", dirs[0], "--format", "json"]).stdout)
    assert one["summary"]["n_records"] == 6 and one["runs"][0]["summary"] == one["summary"]
    assert one["tables"]["runs"][0]["run"] == "A"

    bad = runner.invoke(app, ["report", dirs[0], "--format", "pdf"])
    assert bad.exit_code == 2 and "html" in bad.output
    bad = runner.invoke(app, ["report", dirs[0], "--primary", "nope"])
    assert bad.exit_code == 2 and "nope" in bad.output
    bad = runner.invoke(app, ["report", str(Path(dirs[0]).parent)])
    assert bad.exit_code == 2 and "manifest" in bad.output


def test_system_labels_stay_distinct():
    def manifest(options, seed=None):
        m = identity("rag", "8k")
        m["config"]["identity"].update(system_options=options, seed=seed)
        return m

    runs = [RunData("k5", manifest({"top_k": 5}), [rec("q1", 1.0)]),
            RunData("k9", manifest({"top_k": 9}), [rec("q1", 0.0)]),
            RunData("k9-seed", manifest({"top_k": 9}, seed=1), [rec("q1", 0.0)])]
    labels = [s.label for s in build_tables(runs).systems]
    assert labels == ['rag · m · image ({"top_k": 5})', 'rag · m · image ({"top_k": 9})',
                      'rag · m · image ({"top_k": 9}) #2']


def test_question_rows_say_why_a_judged_run_left_an_answer_unscored():
    runs = three_runs()
    first = runs[0].records[0]
    failed = first.model_copy(update={
        "scores": {"rule": first.scores["rule"]},
        "meta": {**first.meta, "judge_error": {"kind": "timeout", "message": "judge slow"}}})
    judged = [failed] + [r.model_copy(update={"scores": {**r.scores, "judge": 1.0}})
                         for r in runs[0].records[1:] if r.status == "ok"]
    t = build_tables([RunData("A", runs[0].manifest, judged)], primary="judge")
    row = next(q for q in t.questions if q.question_id == failed.question_id)
    assert t.primary == "judge"
    assert (row.correct, row.error_kind, row.error_message) == ("unscored", "judge timeout",
                                                                "judge slow")


def test_one_cluster_says_its_standard_error_is_undefined(tmp_path):
    # every question shares one episode (a timeline tier): CR0 gives 0, which is no measure
    one = RunData("T", identity("s1", "8k"), [rec(f"q{i}", float(i % 2)) for i in range(4)])
    t = build_tables([one])
    row = by_run(t, "T")
    assert math.isnan(row.se_clustered) and row.n_episodes == 1
    assert "undefined (one cluster) (1)" in _md_lines(render_tables_markdown(t), "T")[0]
    assert "±0.0 pp" not in render_tables_markdown(t)
    assert t.to_dict()["runs"][0]["se_clustered"] is None


@pytest.mark.parametrize("fmt", ["md", "json", "html"])
def test_report_of_a_run_without_records_is_a_named_error(tmp_path, fmt):
    run = write_run(tmp_path / "started", identity("s1", "8k"), [])
    r = runner.invoke(app, ["report", run, "--format", fmt, "--out",
                           str(tmp_path / "out")])
    assert r.exit_code == 2, r.output
    assert "started has a manifest but no records" in r.output
    assert "Traceback" not in r.output and not (tmp_path / "out").exists()
