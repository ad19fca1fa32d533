"""The X × Y matrix and the MCQ rotation figures, against values worked out by hand.

Run A holds four MCQ questions asked over rotations and two open questions:

- P, labels X1 × {Y1, Y2} (multi-label): rotations 1, 1, 0 (unparseable), 1 -> debiased EM
  0.75, not all correct; it counts in cells X1_Y1 and X1_Y2.
- Q, X1_Y1: 1, 1, 1, 1 -> 1.0, all correct.
- R, X4_Y3: 1, error, 1, 1 -> incomplete: left out of both figures, never scored as wrong.
- S, X1_Y1, a legacy single-rotation question (gold C): 0 -> 0.0.
- open O1 X1_Y1 scores 1, O2 X2_Y2 scores 0 (by the judge, their only measure).

So: 3 complete questions, debiased EM (0.75 + 1 + 0) / 3 = 7/12, all correct 1/3; the MCQ
grid's X1_Y1 is 7/12 (n=3), X1_Y2 0.75 (n=1), X4_Y3 empty; the open grid has X1_Y1 1 (n=1)
and X2_Y2 0 (n=1). By gold position: A 3/3, B 2/2, C 2/4, D 3/3.
"""

from __future__ import annotations

import json

import pytest
from helpers.report_runs import identity

from memgauge.analysis import RunData, build_tables
from memgauge.analysis._stats import wilson_ci
from memgauge.report import render_tables_json, render_tables_markdown
from memgauge.schema import (
    BenchmarkInfo,
    ErrorInfo,
    Labels,
    Record,
    Response,
    Score,
)


def rotation(base: str, k: int, gold: str, score: float | None, cells: list[str], *,
             unparseable: bool = False) -> Record:
    x, _, y = cells[0].partition("_")
    error = ErrorInfo(kind="timeout", message="slow") if score is None else None
    details = {"parsed": None if unparseable else gold, "label": "unparseable"} \
        if unparseable else {"parsed": gold if score else "A"}
    return Record(
        question_id=f"{base}:r{k}", episode_id="T", benchmark=BenchmarkInfo(name="memeye"),
        status="error" if error else "ok", ability="knowledge_update", answer_type="mcq",
        labels=Labels(x=x, y=y), question="?", gold=gold,
        prediction=None if error else "x", response=Response(text=None if error else "x",
                                                             error=error),
        scores={} if error else {"rule": score},
        score_details={} if error else {
            "rule": Score(value=score, scorer="rule", version="3", details=details)},
        meta={"base_question_id": base, "rotation": k, "xy_cells": cells})


def opened(qid: str, score: float, cell: str) -> Record:
    x, _, y = cell.partition("_")
    return Record(question_id=f"{qid}:open", episode_id="T",
                  benchmark=BenchmarkInfo(name="memeye"), status="ok",
                  ability="knowledge_update", answer_type="free_text", labels=Labels(x=x, y=y),
                  question="?", gold="red", prediction="x", response=Response(text="x"),
                  scores={"judge": score}, meta={"base_question_id": qid, "xy_cells": [cell]})


def run_a() -> list[Record]:
    both = ["X1_Y1", "X1_Y2"]
    return [
        *(rotation("P", k, g, s, both, unparseable=(k == 3))
          for k, (g, s) in enumerate(zip("ABCD", (1.0, 1.0, 0.0, 1.0), strict=True), start=1)),
        *(rotation("Q", k, g, 1.0, ["X1_Y1"]) for k, g in enumerate("ABCD", start=1)),
        *(rotation("R", k, g, s, ["X4_Y3"])
          for k, (g, s) in enumerate(zip("ABCD", (1.0, None, 1.0, 1.0), strict=True), start=1)),
        rotation("S", 1, "C", 0.0, ["X1_Y1"]),
        opened("O1", 1.0, "X1_Y1"), opened("O2", 0.0, "X2_Y2"),
    ]


@pytest.fixture(scope="module")
def tables():
    return build_tables([RunData("A", identity("s", "-"), run_a())])


def test_debiased_em_and_all_rotations_correct(tables):
    r = tables.rotations["A"]
    assert r["n_questions"] == 3 and r["incomplete_questions"] == 1
    assert r["n_rotations"] == 13 and r["n_ok_rotations"] == 12
    assert r["debiased_em"] == pytest.approx(7 / 12)
    assert r["all_rotations_correct"] == pytest.approx(1 / 3)
    # three questions: Wilson's interval over their sum, not a bootstrap (design 0040)
    assert r["debiased_em_ci"] == list(wilson_ci(1.75, 3)) and r["ci_method"] == "wilson"
    assert r["all_rotations_correct_ci"] == list(wilson_ci(1, 3))
    assert r["unparseable"] == 1 and r["unparseable_share"] == pytest.approx(1 / 12)
    assert {k: (v["accuracy"], v["n"]) for k, v in r["by_gold_position"].items()} == {
        "A": (1.0, 3), "B": (1.0, 2), "C": (0.5, 4), "D": (1.0, 3)}


def test_matrix_counts_a_multi_label_question_in_each_cell_and_keeps_forms_apart(tables):
    assert set(tables.xy) == {"A · MCQ (debiased EM)", "A · open"}
    mcq = tables.xy["A · MCQ (debiased EM)"]
    assert (mcq["X1"]["Y1"].accuracy, mcq["X1"]["Y1"].n) == (pytest.approx(7 / 12), 3)
    assert (mcq["X1"]["Y2"].accuracy, mcq["X1"]["Y2"].n) == (0.75, 1)  # P again
    assert mcq["X4"]["Y3"].n == 0  # R is incomplete
    c = mcq["X1"]["Y1"]
    assert (c.ci_low, c.ci_high) == wilson_ci(1.75, 3) and c.small and c.ci_method == "wilson"
    op = tables.xy["A · open"]
    assert (op["X1"]["Y1"].accuracy, op["X1"]["Y1"].n) == (1.0, 1)
    assert (op["X2"]["Y2"].accuracy, op["X2"]["Y2"].n) == (0.0, 1)
    assert sum(c.n for row in op.values() for c in row.values()) == 2


def test_a_cell_of_fifteen_questions_is_not_flagged():
    recs = [opened(f"q{i}", float(i % 3 == 0), "X3_Y2") for i in range(15)]
    recs.append(opened("few", 1.0, "X2_Y1"))
    grid = build_tables([RunData("B", identity("s", "-"), recs)]).xy["B"]  # one form: no suffix
    assert grid["X3"]["Y2"].n == 15 and not grid["X3"]["Y2"].small
    assert grid["X3"]["Y2"].accuracy == pytest.approx(5 / 15)
    assert grid["X2"]["Y1"].small


def test_every_format_carries_the_figures(tables):
    md = render_tables_markdown(tables)
    assert "| X1 | 58.3% [" in md and "(n=3) †" in md
    assert "counts in each of its cells" in md
    assert "### MCQ over rotations" in md
    row = next(line for line in md.splitlines() if line.startswith("| A | 3 |"))
    assert "58.3%" in row and "33.3%" in row and "| 1 (8.3%) | 1 |" in row
    tables_json = json.loads(render_tables_json([], tables))["tables"]
    assert tables_json["rotations"]["A"]["all_rotations_correct"] == pytest.approx(1 / 3)
    assert tables_json["xy"]["A · open"]["X2"]["Y2"]["n"] == 1
    pytest.importorskip("matplotlib")
    from memgauge.report import render_html

    page = render_html(tables, title="t")
    assert "MCQ over rotations" in page and "58.3%" in page and "(n=3) †" in page


def test_open_questions_take_the_judge_never_a_rule_score_and_the_headline_keeps_forms_apart():
    """Issue 24: rotations are valued by their letter, open questions by the judge alone.
    O3's judge call failed: it is left out (a judge error), not valued by the rule's 0; the
    rule's 0s on O1, O2 (an older run scored open questions by rule too) are never used."""
    recs = run_a()
    for r in recs:
        if r.question_id.endswith(":open"):
            r.scores["rule"] = 0.0
    failed = opened("O3", 1.0, "X1_Y1")
    failed.scores = {"rule": 0.0}
    failed.meta["judge_error"] = {"kind": "timeout", "message": "slow", "scorer": "judge"}
    t = build_tables([RunData("A", identity("s", "-"), [*recs, failed])])
    op = t.xy["A · open"]
    assert (op["X1"]["Y1"].accuracy, op["X1"]["Y1"].n) == (1.0, 1)  # O1 by the judge; O3 out
    rows = {r.run: r for r in t.runs}
    assert set(rows) == {"A · MCQ", "A · open"}
    assert (rows["A · MCQ"].form, rows["A · open"].form) == ("MCQ", "open")
    # MCQ: the 12 answered rotations by their letter (P 1,1,0,1; Q 1,1,1,1; R 1,1,1; S 0)
    assert (rows["A · MCQ"].n, rows["A · MCQ"].accuracy) == (12, pytest.approx(10 / 12))
    # open: the judge over the two it judged, O3 counted apart (3 answered, 2 judged)
    assert (rows["A · open"].n, rows["A · open"].n_ok) == (2, 3)
    assert rows["A · open"].accuracy == 0.5
    assert set(t.ability_matrix) == {"A · MCQ", "A · open"}
    md = render_tables_markdown(t)
    assert "`<run> · MCQ` and `<run> · open` are one run's two forms" in md
    assert ("| A · open | s · m · image | - | 3 | 0 | 50.0% [9.5, 90.5] (small n: Wilson) "
            "(n=2) |") in md


def test_a_judge_that_scored_every_open_question_is_the_primary_rotations_are_no_errors():
    t = build_tables([RunData("A", identity("s", "-"), run_a())])
    assert t.primary == "judge"  # the rotations are not judge errors: it covered all it may
    assert t.summaries["A"].primary_note is None
