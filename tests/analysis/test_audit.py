"""Tests for the judge audit: κ and every count below are worked out by hand."""

from __future__ import annotations

import json
import math
import re

import pytest

from memgauge.analysis import audit, cohen_kappa, cohen_kappa_labels
from memgauge.report import render_audit_markdown
from memgauge.schema import BenchmarkInfo, ErrorInfo, Record, Response

IE = "information_extraction"
TR = "temporal_reasoning"


def rec(qid, scores, *, answer_type="integer", ability=IE, subtype="count", status="ok",
        meta=None):
    error = ErrorInfo(kind="timeout", message="slow") if status == "error" else None
    return Record(
        question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name="t"), status=status,
        ability=ability, subtype=subtype, answer_type=answer_type, question="q?", gold="g",
        response=Response(text=None if error else "a", error=error), scores=scores,
        meta=meta or {},
    )


def crafted():
    """Scores per question (rule, judge, judge-b):

    q01 integer IE/count  1 1 1       agree
    q02 integer IE/count  0 1 .75     judge over-credits
    q03 date    TR/-      1 0 .5      judge under-credits
    q04 date    TR/-      0 0 0       agree
    q05 choice  IE/count  1 1 1       agree
    q06 free    IE/desc   0 1 1       free text: not judge-vs-rule, but judge-vs-judge
    q07 error record with stale scores (rule 0, judge 1): never counted
    q08 integer IE/count  0 - .25     "judge" failed (meta judge_error)
    q09 yes_no  TR/-      0 1 .75     judge over-credits
    q10 number  TR/-      0 0 0       agree
    q11 integer IE/count  1 - -       no judge score, no failure: unpaired
    """
    return [
        rec("q01", {"rule": 1, "judge": 1, "judge-b": 1}),
        rec("q02", {"rule": 0, "judge": 1, "judge-b": 0.75}),
        rec("q03", {"rule": 1, "judge": 0, "judge-b": 0.5}, answer_type="date", ability=TR,
            subtype=None),
        rec("q04", {"rule": 0, "judge": 0, "judge-b": 0}, answer_type="date", ability=TR,
            subtype=None),
        rec("q05", {"rule": 1, "judge": 1, "judge-b": 1}, answer_type="choice"),
        rec("q06", {"rule": 0, "judge": 1, "judge-b": 1}, answer_type="free_text",
            subtype="desc"),
        rec("q07", {"rule": 0, "judge": 1}, status="error",
            meta={"judge_error": {"kind": "http_500", "message": "x"}}),
        rec("q08", {"rule": 0, "judge-b": 0.25},
            meta={"judge_error": {"kind": "unparseable", "message": "no verdict"}}),
        rec("q09", {"rule": 0, "judge": 1, "judge-b": 0.75}, answer_type="yes_no", ability=TR,
            subtype=None),
        rec("q10", {"rule": 0, "judge": 0, "judge-b": 0}, answer_type="number", ability=TR,
            subtype=None),
        rec("q11", {"rule": 1}),
    ]


# --- Cohen's kappa ---------------------------------------------------------------------


def test_kappa_two_by_two_table():
    # 20 both correct, 5 judge only, 10 rule only, 15 both wrong:
    # p_o = 35/50 = 0.7; p_e = (25*30 + 25*20) / 50^2 = 0.5; kappa = 0.2 / 0.5 = 0.4
    judge = [True] * 20 + [True] * 5 + [False] * 10 + [False] * 15
    rule = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(judge, rule) == pytest.approx(0.4, abs=1e-12)
    assert cohen_kappa(rule, judge) == pytest.approx(0.4, abs=1e-12)  # symmetric


def test_kappa_edge_cases():
    assert cohen_kappa([True, False, True], [True, False, True]) == 1.0
    # perfect disagreement on a balanced split: p_o = 0, p_e = 0.5 -> -1
    assert cohen_kappa([True, False], [False, True]) == -1.0
    # one rater constant, the other not: p_o = p_e -> 0
    assert cohen_kappa([True, True, True, True], [True, False, True, False]) == 0.0
    # both raters put everything in the same class: p_e = 1, undefined
    assert math.isnan(cohen_kappa([True, True, True], [True, True, True]))
    assert math.isnan(cohen_kappa([False, False], [False, False]))
    assert math.isnan(cohen_kappa([], []))
    with pytest.raises(ValueError):
        cohen_kappa([True], [True, False])


def test_kappa_five_level_labels():
    a = [1, 1, 0.5, 0.5, 0, 0, 0.75]
    b = [1, 0.5, 0.5, 0.5, 0, 1, 0.25]
    # agree on items 0, 2, 3, 4: p_o = 4/7. Counts a {1:2, .5:2, 0:2, .75:1},
    # b {1:2, .5:3, 0:1, .25:1}: sum n_a n_b = 4 + 6 + 2 = 12, p_e = 12/49.
    # kappa = (4/7 - 12/49) / (1 - 12/49) = (28 - 12) / (49 - 12) = 16/37
    assert cohen_kappa_labels(a, b) == pytest.approx(16 / 37, abs=1e-12)
    # the binary kappa over the same items thresholded at 1 differs
    assert cohen_kappa([x >= 1 for x in a], [y >= 1 for y in b]) == pytest.approx(
        (7 * 5 - (2 * 2 + 5 * 5)) / (49 - (2 * 2 + 5 * 5)))


# --- judge vs rule -------------------------------------------------------------------


def test_judge_vs_rule_counts_and_rates():
    result = audit(crafted())
    assert result.judges == ["judge", "judge-b"]  # discovered; "rule" is not a judge
    assert (result.n_records, result.n_ok, result.n_errors) == (11, 10, 1)
    a = result.judge_vs_rule["judge"]
    s = a.overall
    # closed-form with both scores: q01 q02 q03 q04 q05 q09 q10
    # judge correct 4 (q01 q02 q05 q09), rule correct 3 (q01 q03 q05)
    assert s.n == 7
    assert (s.over_credit, s.under_credit) == (2, 1)
    assert s.over_credit_rate == pytest.approx(2 / 7)
    assert s.under_credit_rate == pytest.approx(1 / 7)
    assert s.agreement == pytest.approx(4 / 7)
    assert s.judge_accuracy == pytest.approx(4 / 7)
    assert s.rule_accuracy == pytest.approx(3 / 7)
    # counts judge T4 F3, rule T3 F4: chance = 12 + 12 = 24; (7*4 - 24) / (49 - 24) = 4/25
    assert s.kappa == pytest.approx(0.16)
    assert a.free_text == 1 and a.unpaired == 1  # q06 left out; q11 has no judge score
    assert [(d.question_id, d.direction) for d in a.disagreements] == [
        ("q02", "over-credit"), ("q03", "under-credit"), ("q09", "over-credit")]
    d = a.disagreements[1]
    assert (d.judge_value, d.rule_value, d.subtype, d.answer_type) == (
        0.0, 1.0, "temporal_reasoning/-", "date")


def test_judge_vs_rule_per_subtype_and_answer_type():
    a = audit(crafted()).judge_vs_rule["judge"]
    assert set(a.by_subtype) == {"information_extraction/count", "temporal_reasoning/-"}
    ie = a.by_subtype["information_extraction/count"]  # q01 q02 q05 (q08 failed)
    assert (ie.n, ie.over_credit, ie.under_credit) == (3, 1, 0)
    assert ie.agreement == pytest.approx(2 / 3)
    tr = a.by_subtype["temporal_reasoning/-"]  # q03 q04 q09 q10
    assert (tr.n, tr.over_credit, tr.under_credit) == (4, 1, 1)
    assert tr.over_credit_rate == pytest.approx(0.25)
    assert tr.kappa == pytest.approx(-1 / 3)  # T1 F3 each, agree 2: (8 - 10) / (16 - 10)
    assert "information_extraction/desc" not in a.by_subtype  # free text only
    types = {k: (v.n, v.over_credit, v.under_credit) for k, v in a.by_answer_type.items()}
    assert types == {"integer": (2, 1, 0), "date": (2, 0, 1), "choice": (1, 0, 0),
                     "yes_no": (1, 1, 0), "number": (1, 0, 0)}


def test_errors_and_judge_failures_are_apart():
    result = audit(crafted())
    # q07 is an error with a stale over-crediting judge score: not in any count
    ids = {d.question_id for a in result.judge_vs_rule.values() for d in a.disagreements}
    assert "q07" not in ids
    # q08's judge call failed: a failure of "judge" only (judge-b scored it)
    assert list(result.failures) == ["judge"]
    (f,) = result.failures["judge"]
    assert (f.question_id, f.kind, f.message) == ("q08", "unparseable", "no verdict")
    assert "q08" not in {d.question_id for d in result.judge_vs_rule["judge"].disagreements}
    # judge-b did score q08: it is a normal closed-form item for it
    assert result.judge_vs_rule["judge-b"].overall.n == 8


def test_failure_named_for_one_judge():
    recs = [rec("q1", {"rule": 1}, meta={"judge_error": {"kind": "k", "message": "m",
                                                         "scorer": "judge-b"}}),
            rec("q2", {"rule": 1, "judge": 1, "judge-b": 1})]
    result = audit(recs)
    assert list(result.failures) == ["judge-b"]
    assert result.judge_vs_rule["judge"].unpaired == 1  # not a failure of "judge"


def test_threshold_changes_five_level_verdicts():
    strict = audit(crafted(), threshold=1.0).judge_vs_rule["judge-b"].overall
    lenient = audit(crafted(), threshold=0.5).judge_vs_rule["judge-b"].overall
    # judge-b on q01 q02 q03 q04 q05 q08 q09 q10: 1 .75 .5 0 1 .25 .75 0; rule 1 0 1 0 1 0 0 0
    # at 1.0: correct q01 q05 -> under-credit q03; at 0.5 also q02 q03 q09 -> over q02 q09
    assert (strict.n, strict.over_credit, strict.under_credit) == (8, 0, 1)
    assert (lenient.n, lenient.over_credit, lenient.under_credit) == (8, 2, 0)
    assert strict.judge_accuracy == pytest.approx(2 / 8)
    assert lenient.judge_accuracy == pytest.approx(5 / 8)
    # the 0/1 judge does not move
    assert audit(crafted(), threshold=0.5).judge_vs_rule["judge"].overall == audit(
        crafted()).judge_vs_rule["judge"].overall
    with pytest.raises(ValueError):
        audit(crafted(), threshold=0.0)
    with pytest.raises(ValueError):
        audit(crafted(), threshold=1.5)


# --- judge vs judge --------------------------------------------------------------------


def test_judge_pair_agreement():
    (p,) = audit(crafted()).judge_pairs
    assert (p.judge_a, p.judge_b) == ("judge", "judge-b")
    # both scored, ok: q01 q02 q03 q04 q05 q06 (free text included) q09 q10
    # judge   1 1 0 0 1 1 1 0
    # judge-b 1 .75 .5 0 1 1 .75 0
    assert p.n == 8
    assert p.disagreements == ["q02", "q09"]
    assert (p.a_only, p.b_only) == (2, 0)
    assert p.agreement == pytest.approx(6 / 8)
    # judge T5 F3, judge-b T3 F5: chance 15 + 15 = 30; (8*6 - 30) / (64 - 30) = 9/17
    assert p.kappa == pytest.approx(9 / 17)
    assert p.exact_agreement == pytest.approx(5 / 8)  # q01 q04 q05 q06 q10
    assert p.mean_abs_diff == pytest.approx((0.25 + 0.5 + 0.25) / 8)
    # values: judge {1:5, 0:3}, judge-b {1:3, .75:2, .5:1, 0:2}: chance 15 + 6 = 21;
    # (8*5 - 21) / (64 - 21) = 19/43
    assert p.kappa_values == pytest.approx(19 / 43)
    ie, tr = p.by_ability["information_extraction"], p.by_ability["temporal_reasoning"]
    assert (ie["n"], tr["n"]) == (4, 4)
    assert ie["agreement"] == pytest.approx(0.75) and tr["agreement"] == pytest.approx(0.75)
    assert ie["kappa"] == 0.0  # judge constant (all correct) on IE, judge-b not


def test_selected_judges_and_mapping_input():
    recs = crafted()
    by_id = {r.question_id: r for r in recs}
    assert audit(by_id).to_dict() == audit(recs).to_dict()
    only = audit(recs, judges=["judge-b"])
    assert only.judges == ["judge-b"] and only.judge_pairs == [] and only.failures == {}


def test_to_dict_is_strict_json():
    result = audit(crafted(), judges=["judge", "absent-judge"])
    data = result.to_dict()
    text = json.dumps(data, allow_nan=False)  # raises on nan/inf
    back = json.loads(text)
    empty = back["judge_vs_rule"]["absent-judge"]["overall"]
    assert empty["n"] == 0 and empty["kappa"] is None and empty["agreement"] is None
    assert back["judge_vs_rule"]["judge"]["overall"]["over_credit"] == 2
    assert back["failures"]["judge"][0]["question_id"] == "q08"


# --- rendering ---------------------------------------------------------------------------


def test_render_markdown_tables():
    md = render_audit_markdown(audit(crafted()), title="audit: t")
    assert md.startswith("# audit: t\n")
    assert "correct = score ≥ 1" in md and "11 records: 10 ok, 1 errors" in md
    assert "| judge | 7 | 57.1% | 0.160 | 2 (28.6%) | 1 (14.3%) | 57.1% | 42.9% | 1 | 1 |" in md
    # TR/-: judge T1 F3, rule T1 F3, agree 2: (4*2 - (1 + 9)) / (16 - 10) = -1/3
    assert ("| judge | temporal_reasoning/- | 4 | 50.0% | -0.333 | 1 (25.0%) | 1 (25.0%) "
            "| 25.0% | 25.0% |") in md
    # one choice item, both correct: kappa undefined
    assert "| judge | choice | 1 | 100.0% | — | 0 (0.0%) | 0 (0.0%) | 100.0% | 100.0% |" in md
    assert "| judge vs judge-b | 8 | 75.0% | 0.529 | 62.5% | 0.442 | 0.125 | 2 | 0 |" in md
    # every table row has as many cells as its header: no stray "|" inside a cell
    for block in md.split("\n\n"):
        rows = [line for line in block.splitlines() if line.startswith("| ")]
        assert len({len(re.findall(r"(?<!\\)\|", row)) for row in rows}) <= 1, block
    assert "- `q02` over-credit: judge 1, rule 0 (information_extraction/count, integer)" in md
    assert "### judge: 1\n\n- `q08` unparseable: no verdict" in md


def test_render_caps_disagreements_and_shows_undefined():
    recs = [rec(f"q{i:03d}", {"rule": 0, "judge": 1}) for i in range(60)]
    md = render_audit_markdown(audit(recs), title="t")
    assert "- `q049` over-credit" in md and "`q050`" not in md
    assert "- … and 10 more" in md
    # judge always correct, rule always wrong: p_o = p_e = 0, kappa 0
    assert "| judge | 60 | 0.0% | 0.000 | 60 (100.0%) | 0 (0.0%) | 100.0% | 0.0% |" in md


def test_a_judge_whose_every_call_failed_is_audited():
    # judge-b never gave a verdict: it has no score anywhere, only failures
    recs = [rec("q1", {"rule": 1, "judge": 1},
                meta={"judge_errors": {"judge-b": {"kind": "http_500", "message": "down"}}}),
            rec("q2", {"rule": 0, "judge": 0},
                meta={"judge_errors": {"judge-b": {"kind": "timeout", "message": "slow"}}})]
    result = audit(recs)
    assert result.judges == ["judge", "judge-b"]
    assert [(f.question_id, f.kind) for f in result.failures["judge-b"]] == [
        ("q1", "http_500"), ("q2", "timeout")]
    assert result.judge_vs_rule["judge-b"].overall.n == 0


def test_two_judges_failing_on_one_record_are_both_listed():
    recs = [rec("q1", {"rule": 1}, meta={"judge_errors": {
        "judge": {"kind": "timeout", "message": "a"},
        "judge-b": {"kind": "http_500", "message": "b"}}}),
        rec("q2", {"rule": 1, "judge": 1, "judge-b": 1})]
    result = audit(recs)
    assert {j: [f.kind for f in fs] for j, fs in result.failures.items()} == {
        "judge": ["timeout"], "judge-b": ["http_500"]}
