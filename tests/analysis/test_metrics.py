"""Tests for summarize(): expected numbers are worked out by hand in the comments."""

from __future__ import annotations

import json
import math

import pytest

from memgauge.analysis import Summary, bootstrap_ci, summarize, wilson_ci
from memgauge.schema import BenchmarkInfo, ErrorInfo, Record, Response

IE = "information_extraction"
TR = "temporal_reasoning"
KU = "knowledge_update"
AR = "answer_refusal"


def rec(qid, ability, scores=None, *, status="ok", subtype=None, answer_type="free_text",
        refused=None, error=None):
    return Record(
        question_id=qid,
        episode_id="ep",
        benchmark=BenchmarkInfo(name="t"),
        status=status,
        ability=ability,
        subtype=subtype,
        answer_type=answer_type,
        question="q?",
        gold="g",
        response=Response(text=None if error else "a",
                          error=ErrorInfo(kind=error[0], message=error[1]) if error else None),
        scores=scores or {},
        refused=refused,
    )


def basic_records():
    # 6 ok records, rule scores [1,0,1,1 | 0,1]: IE has 4 (3 correct), TR has 2 (1 correct).
    # 2 error records: one IE (http_429), one KU (timeout) - KU has no ok records at all.
    return [
        rec("q1", IE, {"rule": 1.0}, subtype="a"),
        rec("q2", IE, {"rule": 0.0}, subtype="a"),
        rec("q3", IE, {"rule": 1.0}, subtype="b"),
        rec("q4", IE, {"rule": 1.0}),
        rec("q5", TR, {"rule": 0.0}),
        rec("q6", TR, {"rule": 1.0}),
        rec("e1", IE, status="error", subtype="a", error=("http_429", "rate limited")),
        rec("e2", KU, status="error", error=("timeout", "took too long")),
    ]


def test_counts_and_errors_apart():
    s = summarize(basic_records())
    assert (s.n_records, s.n_ok, s.n_errors) == (8, 6, 2)
    assert [(e.question_id, e.ability, e.kind, e.message) for e in s.errors] == [
        ("e1", IE, "http_429", "rate limited"),
        ("e2", KU, "timeout", "took too long"),
    ]
    assert s.error_kinds == {"http_429": 1, "timeout": 1}


def test_overall_accuracy_excludes_errors():
    s = summarize(basic_records())
    assert s.scorers == ("rule",)
    assert s.primary == "rule"
    # 4 correct of 6 ok records; the 2 errors are not in the denominator (4/8 would be 0.5)
    st = s.overall["rule"]
    assert st.n == 6
    assert st.accuracy == pytest.approx(4 / 6)
    assert s.micro_accuracy == pytest.approx(0.6666666667)
    assert st.ci_low <= st.accuracy <= st.ci_high
    # 6 questions: below 30 the interval is Wilson's, and marked small (design 0040)
    assert (st.ci_low, st.ci_high) == wilson_ci(4, 6)
    assert st.ci_method == "wilson" and st.small_n


def test_by_ability_hand_computed():
    s = summarize(basic_records())
    # ability order follows the Ability enum: IE, TR, KU
    assert list(s.by_ability) == [IE, TR, KU]
    ie, tr, ku = s.by_ability[IE], s.by_ability[TR], s.by_ability[KU]
    # IE: [1,0,1,1] -> 3/4 = 0.75, 1 error
    assert (ie.n, ie.n_errors) == (4, 1)
    assert ie.scores["rule"].accuracy == 0.75
    # TR: [0,1] -> 1/2 = 0.5, no error
    assert (tr.n, tr.n_errors) == (2, 0)
    assert tr.scores["rule"].accuracy == 0.5
    # KU: only an error -> n 0, accuracy undefined (nan), never 0
    assert (ku.n, ku.n_errors) == (0, 1)
    assert ku.scores["rule"].n == 0
    assert math.isnan(ku.scores["rule"].accuracy)


def test_macro_vs_micro():
    s = summarize(basic_records())
    # micro: 4/6 = 0.6667; macro over abilities with scored records: (0.75 + 0.5) / 2 = 0.625
    assert s.micro_accuracy == pytest.approx(0.6666666667)
    assert s.macro_accuracy == 0.625


def test_by_subtype_hand_computed():
    s = summarize(basic_records())
    assert list(s.by_subtype) == [f"{IE}/-", f"{IE}/a", f"{IE}/b", f"{TR}/-", f"{KU}/-"]
    # IE/a: q1=1, q2=0 -> 0.5, plus error e1
    assert s.by_subtype[f"{IE}/a"].scores["rule"].accuracy == 0.5
    assert s.by_subtype[f"{IE}/a"].n_errors == 1
    # IE/b: q3=1 -> 1.0 ; IE/- : q4=1 -> 1.0 ; TR/- : [0,1] -> 0.5
    assert s.by_subtype[f"{IE}/b"].scores["rule"].accuracy == 1.0
    assert s.by_subtype[f"{IE}/-"].scores["rule"].accuracy == 1.0
    assert s.by_subtype[f"{TR}/-"].scores["rule"].accuracy == 0.5
    assert s.by_subtype[f"{KU}/-"].n == 0 and s.by_subtype[f"{KU}/-"].n_errors == 1


def coverage_records():
    # 5 answerable (free_text) IE records: 2 refused (score 0), 3 attempted with rule [1,1,0];
    # one attempted record has refused=None (unknown -> counts as attempted).
    # 2 refusal-type questions (AR): rule [1, 0] means "refused correctly" on the first.
    return [
        rec("a1", IE, {"rule": 0.0}, refused=True),
        rec("a2", IE, {"rule": 0.0}, refused=True),
        rec("a3", IE, {"rule": 1.0}, refused=False),
        rec("a4", IE, {"rule": 1.0}, refused=None),
        rec("a5", IE, {"rule": 0.0}, refused=False),
        rec("r1", AR, {"rule": 1.0}, answer_type="refusal", refused=True),
        rec("r2", AR, {"rule": 0.0}, answer_type="refusal", refused=False),
    ]


def test_coverage_and_per_answer_accuracy():
    s = summarize(coverage_records())
    cov = s.coverage
    # attempted = a3, a4, a5 -> 3 of 5 answerable -> coverage 0.6
    assert (cov.n_answerable, cov.n_attempted) == (5, 3)
    assert cov.coverage == 0.6
    # among attempted, rule [1, 1, 0] -> 2/3
    assert cov.per_answer_accuracy == pytest.approx(2 / 3)
    # refusal questions: [1, 0] -> 0.5
    assert cov.n_refusal == 2
    assert cov.refusal_accuracy == 0.5
    # per ability: IE holds all answerable ones; AR only refusal ones (coverage undefined)
    ie = s.by_ability[IE].coverage
    assert ie.coverage == 0.6 and ie.per_answer_accuracy == pytest.approx(2 / 3)
    assert math.isnan(ie.refusal_accuracy)
    ar = s.by_ability[AR].coverage
    assert math.isnan(ar.coverage) and math.isnan(ar.per_answer_accuracy)
    assert ar.refusal_accuracy == 0.5
    # overall over all 7: [0,0,1,1,0,1,0] -> 3/7; macro: IE 2/5 = 0.4, AR 1/2 = 0.5 -> 0.45
    assert s.micro_accuracy == pytest.approx(3 / 7)
    assert s.macro_accuracy == pytest.approx(0.45)


@pytest.mark.parametrize(
    ("names", "given", "expected"),
    [
        (["rule", "judge:gpt-4o"], None, "judge:gpt-4o"),
        (["rule", "em"], None, "rule"),
        (["em", "f1"], None, "em"),
        (["rule", "judge", "f1"], "f1", "f1"),
    ],
)
def test_primary_selection(names, given, expected):
    records = [rec("q1", IE, {n: 1.0 for n in names})]
    assert summarize(records, primary=given).primary == expected


def test_subem_is_never_the_primary():
    # a reply dumping the history contains most golds: containment is not a headline
    assert summarize([rec("q1", IE, {"subem": 1.0, "f1": 0.1})]).primary == "f1"
    with pytest.raises(ValueError, match="cannot be the primary"):
        summarize([rec("q1", IE, {"rule": 0.0, "subem": 1.0})], primary="subem")


def test_unknown_primary_is_an_error():
    with pytest.raises(ValueError, match="nope"):
        summarize([rec("q1", IE, {"rule": 1.0})], primary="nope")


def test_scorers_with_different_coverage():
    # judge missing on q2: rule over [1, 0, 1] = 2/3; judge over q1, q3 = [1, 0] -> 0.5
    records = [
        rec("q1", IE, {"rule": 1.0, "judge": 1.0}),
        rec("q2", IE, {"rule": 0.0}),
        rec("q3", TR, {"rule": 1.0, "judge": 0.0}),
    ]
    # A judge that scored 2 of 3 answered questions is not silently the headline
    # (issue 11, item 9): the rule scorer, which scored all 3, is, and the summary says why.
    auto = summarize(records)
    assert auto.primary == "rule" and auto.primary_covers == 3
    assert "judge scored 2 of 3" in auto.primary_note
    assert auto.micro_accuracy == pytest.approx(2 / 3)
    s = summarize(records, primary="judge")  # asked for: it is the headline, with its n
    assert s.scorers == ("judge", "rule")
    assert s.primary == "judge" and s.primary_covers == 2 and s.primary_note is None
    assert (s.overall["judge"].n, s.overall["judge"].accuracy) == (2, 0.5)
    assert s.overall["rule"].n == 3
    assert s.overall["rule"].accuracy == pytest.approx(2 / 3)
    # macro on judge: IE 1.0, TR 0.0 -> 0.5
    assert s.macro_accuracy == 0.5


def test_empty_input():
    s = summarize([])
    assert (s.n_records, s.n_ok, s.n_errors) == (0, 0, 0)
    assert s.primary is None and s.scorers == ()
    assert math.isnan(s.micro_accuracy) and math.isnan(s.macro_accuracy)
    json.dumps(s.to_dict(), allow_nan=False)


def test_to_dict_is_json_and_deterministic():
    a = summarize(basic_records(), seed=5)
    b = summarize(basic_records(), seed=5)
    assert isinstance(a, Summary)
    da = a.to_dict()
    text = json.dumps(da, allow_nan=False)  # nan -> None, so strict JSON works
    assert json.loads(text) == da
    assert da == b.to_dict()
    assert da["overall"]["rule"] == {
        "n": 6, "accuracy": pytest.approx(4 / 6),
        "ci_low": a.overall["rule"].ci_low, "ci_high": a.overall["rule"].ci_high,
        "ci_method": "wilson", "small_n": True,
    }
    assert da["by_ability"][KU]["scores"]["rule"]["accuracy"] is None
    assert da["by_ability"][IE]["n_errors"] == 1
    assert da["errors"][0] == {"question_id": "e1", "ability": IE, "kind": "http_429",
                               "message": "rate limited"}
    assert da["bootstrap"]["seed"] == 5 and da["bootstrap"]["n_resamples"] == 2000


def test_frozen():
    s = summarize(basic_records())
    with pytest.raises(AttributeError):
        s.n_ok = 3  # type: ignore[misc]


def test_accepts_a_generator():
    s = summarize(r for r in basic_records())
    assert s.n_records == 8


def test_few_questions_get_a_wilson_interval_not_a_point():
    # Three wrong answers: the bootstrap says [0, 0], as sure as a thousand would be.
    s = summarize([rec(f"q{i}", IE, {"rule": 0.0}) for i in range(3)])
    st = s.overall["rule"]
    assert bootstrap_ci([0.0] * 3) == (0.0, 0.0)
    assert (st.ci_low, st.ci_high) == wilson_ci(0, 3)
    assert st.ci_high > 0.5 and st.ci_method == "wilson" and st.small_n
    assert st.to_dict()["small_n"] is True and st.to_dict()["ci_method"] == "wilson"


def test_thirty_questions_keep_the_bootstrap():
    values = [float(i % 3 == 0) for i in range(30)]
    s = summarize([rec(f"q{i}", IE, {"rule": v}) for i, v in enumerate(values)], seed=2)
    st = s.overall["rule"]
    assert (st.ci_low, st.ci_high) == bootstrap_ci(values, seed=2)
    assert st.ci_method == "bootstrap" and not st.small_n
