from __future__ import annotations

import dataclasses

import pytest

from memgauge.analysis import ErrorLabel, error_breakdown, label_error
from memgauge.schema import (
    BenchmarkInfo,
    ErrorInfo,
    Labels,
    Record,
    Response,
    Score,
)


def rec(
    prediction: str | None,
    *,
    qid: str = "q1",
    answer_type: str = "free_text",
    ability: str = "information_extraction",
    gold: str | list[str] = "Paris",
    score: float | None = 0.0,
    refused: bool | None = False,
    dep: str | None = None,
    details: dict | None = None,
    status: str = "ok",
    error: ErrorInfo | None = None,
    meta: dict | None = None,
) -> Record:
    scores = {} if score is None else {"rule": score}
    score_details = {}
    if details is not None and score is not None:
        score_details["rule"] = Score(value=score, scorer="rule", version="1", details=details)
    return Record(
        question_id=qid,
        episode_id="e1",
        benchmark=BenchmarkInfo(name="t"),
        status=status,
        ability=ability,
        answer_type=answer_type,
        question="What?",
        gold=gold,
        response=Response(text=prediction, error=error),
        prediction=prediction,
        scores=scores,
        score_details=score_details,
        refused=refused,
        labels=Labels(image_dependency=dep),
        meta=meta or {},
    )


# ------------------------------------------------------------------- not labelled at all


def test_correct_record_is_none():
    assert label_error(rec("Paris", score=1.0)) is None


def test_errored_record_is_none():
    r = rec(None, status="error", score=None, error=ErrorInfo(kind="timeout", message="x"))
    assert label_error(r) is None


def test_unscored_record_is_none():
    assert label_error(rec("London", score=None)) is None


def test_other_scorer_used():
    r = rec("London").model_copy(update={"scores": {"rule": 0.0, "f1": 1.0}})
    assert label_error(r, scorer="f1") is None
    assert label_error(r).label == "unlabelled"


# ------------------------------------------------------------------- one per label


@pytest.mark.parametrize("pred", ["", "   \n ", None])
def test_non_answer_empty(pred):
    err = label_error(rec(pred))
    assert err.label == "non_answer"
    assert err.category == "output"


def test_non_answer_too_long():
    pred = " ".join(f"w{i}" for i in range(501))
    assert label_error(rec(pred)).label == "non_answer"
    assert label_error(rec(pred), max_words=1000).label == "unlabelled"


def test_non_answer_degenerate_repetition():
    pred = "the cat sat on the mat " * 40  # ~920 chars, few unique 5-grams
    assert len(pred) >= 500
    err = label_error(rec(pred))
    assert err.label == "non_answer"
    assert "degenerate" in err.detail


def test_short_repetition_is_not_degenerate():
    pred = "no no no no no no no no"
    assert label_error(rec(pred)).label == "unlabelled"


def test_answerability_answered_refusal_question():
    r = rec("It was in Rome.", answer_type="refusal", ability="answer_refusal",
            gold="The information is not available.")
    err = label_error(r)
    assert err.label == "answerability_failure"
    assert err.category == "reasoning"


def test_answerability_refused_answerable_question():
    r = rec("I don't know.", refused=True, dep="essential")
    err = label_error(r)
    assert err.label == "answerability_failure"
    assert err.category == "reasoning"


def test_stale_answer_via_mapping():
    r = rec("You live in Berlin.", ability="knowledge_update", gold="Munich")
    assert label_error(r).label == "unlabelled"
    err = label_error(r, old_answers={"q1": ["Berlin"]})
    assert err.label == "stale_answer"
    assert err.category == "reasoning"


def test_stale_answer_via_meta_and_f1():
    r = rec("red sports car", gold="blue bicycle",
            meta={"old_answers": ["a red sports car"]})
    assert label_error(r).label == "stale_answer"


def test_stale_answer_other_question_ignored():
    r = rec("Berlin", gold="Munich")
    assert label_error(r, old_answers={"q2": ["Berlin"]}).label == "unlabelled"


def test_computation_slip_relative():
    r = rec("It cost $270.", answer_type="currency", gold="$260")
    err = label_error(r)
    assert err.label == "computation_slip"
    assert err.category == "reasoning"


def test_computation_slip_integer_off_by_one():
    r = rec("3", answer_type="integer", gold="4")  # 25 % off but only 1 away
    assert label_error(r).label == "computation_slip"


def test_number_far_off_is_not_slip():
    r = rec("100", answer_type="number", gold="4", dep="text")
    err = label_error(r)
    assert err.label == "unlabelled"
    assert err.category == "textual"


def test_computation_slip_uses_parsed_detail():
    r = rec("first 50, then finally 11", answer_type="integer", gold="12",
            details={"refused": False, "candidates": ["50", "11"], "parsed": "11"})
    assert label_error(r).label == "computation_slip"


def test_closed_set_selection():
    r = rec("B", answer_type="choice", gold="A", dep="essential",
            details={"refused": False, "candidates": ["B"], "parsed": "B"})
    err = label_error(r)
    assert err.label == "closed_set_selection"
    assert err.category == "visual"
    assert "B" in err.detail


def test_closed_set_without_candidate_is_unlabelled():
    r = rec("hmm, hard to say", answer_type="yes_no", gold="yes",
            details={"refused": False, "candidates": [], "parsed": None})
    assert label_error(r).label == "unlabelled"


def test_unlabelled():
    err = label_error(rec("London"))
    assert err == ErrorLabel(label="unlabelled", category="unknown", detail="")


# ------------------------------------------------------------------- precedence


def test_empty_on_refusal_question_is_non_answer():
    r = rec("", answer_type="refusal", ability="answer_refusal", gold="unanswerable")
    assert label_error(r).label == "non_answer"


def test_refusal_on_ku_question_beats_stale():
    r = rec("I don't know, maybe Berlin", ability="knowledge_update", gold="Munich",
            refused=True)
    assert label_error(r, old_answers={"q1": ["Berlin"]}).label == "answerability_failure"


def test_stale_beats_computation_slip():
    r = rec("9", answer_type="integer", ability="knowledge_update", gold="10")
    assert label_error(r).label == "computation_slip"
    assert label_error(r, old_answers={"q1": ["9"]}).label == "stale_answer"


def test_stale_beats_closed_set():
    r = rec("B", answer_type="mcq", gold="A",
            details={"refused": False, "candidates": ["B"], "parsed": "B"})
    assert label_error(r, old_answers={"q1": ["B"]}).label == "stale_answer"


# ------------------------------------------------------------------- folding


@pytest.mark.parametrize(
    ("dep", "category"),
    [("essential", "visual"), ("mixed", "mixed"), ("supportive", "mixed"), ("text", "textual"),
     (None, "unknown")],
)
def test_category_folding(dep, category):
    assert label_error(rec("London", dep=dep)).category == category
    closed = rec("B", answer_type="choice", gold="A", dep=dep,
                 details={"candidates": ["B"], "parsed": "B"})
    assert label_error(closed).category == category
    # fixed categories do not depend on image_dependency
    assert label_error(rec("", dep=dep)).category == "output"
    assert label_error(rec("x", dep=dep, refused=True)).category == "reasoning"


def test_error_label_is_frozen():
    err = label_error(rec("London"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        err.label = "x"  # type: ignore[misc]


# ------------------------------------------------------------------- breakdown


def test_error_breakdown_counts():
    records = [
        rec("Paris", qid="a", score=1.0),
        rec("", qid="b"),
        rec("London", qid="c", dep="essential"),
        rec("Berlin", qid="d", ability="knowledge_update", gold="Munich"),
        rec("3", qid="e", answer_type="integer", ability="temporal_reasoning", gold="4"),
        rec(None, qid="f", status="error", score=None,
            error=ErrorInfo(kind="timeout", message="x")),
        rec("I cannot tell.", qid="g", refused=True, ability="knowledge_update"),
    ]
    out = error_breakdown(records, old_answers={"d": ["Berlin"]})
    assert out["n_wrong"] == 5
    assert out["by_label"] == {
        "non_answer": 1,
        "unlabelled": 1,
        "stale_answer": 1,
        "computation_slip": 1,
        "answerability_failure": 1,
    }
    assert out["by_category"] == {"output": 1, "visual": 1, "reasoning": 3}
    assert out["by_ability"] == {
        "information_extraction": {"non_answer": 1, "unlabelled": 1},
        "knowledge_update": {"stale_answer": 1, "answerability_failure": 1},
        "temporal_reasoning": {"computation_slip": 1},
    }
    assert out["items"] == [
        ("b", "non_answer"),
        ("c", "unlabelled"),
        ("d", "stale_answer"),
        ("e", "computation_slip"),
        ("g", "answerability_failure"),
    ]


def test_error_breakdown_empty():
    out = error_breakdown([])
    assert out == {"n_wrong": 0, "by_label": {}, "by_category": {}, "by_ability": {},
                   "items": []}


def test_a_hedged_reply_is_a_non_answer() -> None:
    r = rec("It could be 3, 4 or 7.", answer_type="integer", gold="7",
            details={"label": "hedged", "candidates": ["3", "4", "7"]})
    labelled = label_error(r)
    assert labelled is not None
    assert labelled.label == "non_answer" and labelled.detail.startswith("hedged")
    # the same reply without the scorer's label is read by the other rules
    assert label_error(rec("It could be 3, 4 or 7.", answer_type="integer", gold="7",
                           details={})).label != "non_answer"
