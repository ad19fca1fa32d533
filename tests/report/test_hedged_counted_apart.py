"""Hedged replies are counted apart in every report (design 0038): the run summary (and its
JSON), the run's Markdown, and the cross-run leaderboard in Markdown and HTML; records of
two rule-scorer versions in one run are flagged, never silently mixed."""

from __future__ import annotations

import json

from memgauge.analysis import RunData, build_tables, summarize
from memgauge.report import render_json, render_markdown, render_tables_markdown
from memgauge.schema import BenchmarkInfo, Question, Record, Response, Score
from memgauge.scoring import TypedRuleScorer

RULE = TypedRuleScorer()


def scored(qid: str, gold: str, reply: str) -> Record:
    question = Question(question_id=qid, text="How many?", answer=gold, answer_type="integer",
                        ability="information_extraction")
    score = RULE.score(question, reply)
    assert score is not None
    return Record(question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name="t"),
                  status="ok", ability="information_extraction", answer_type="integer",
                  question=question.text, gold=gold, prediction=reply,
                  response=Response(text=reply), scores={"rule": score.value},
                  score_details={"rule": score}, refused=False)


def records() -> list[Record]:
    return [scored("q1", "7", "7"), scored("q2", "3", "It could be 1, 2 or 3."),
            scored("q3", "5", "Maybe 4, 5 or 6."), scored("q4", "2", "9")]


def test_the_summary_counts_hedged_replies() -> None:
    summary = summarize(records())
    assert summary.reply_labels == {"hedged": 2}
    assert summary.micro_accuracy == 0.25
    assert json.loads(render_json(summary))["summary"]["reply_labels"] == {"hedged": 2}
    md = render_markdown(summary, title="run")
    assert "Hedged / unparseable replies" in md
    assert "2 hedged (2 of 4 ok, scored 0)" in md


def test_the_leaderboard_counts_hedged_replies_beside_n_ok() -> None:
    from memgauge.report import render_html

    identity = {"config": {"identity": {"system": "s", "model": "m", "context_mode": "text",
                                        "tier": "4k", "bench": "t", "system_options": {}}}}
    tables = build_tables([RunData("r", identity, records())])
    md = render_tables_markdown(tables)
    assert "| r | s · m · text | 4k | 4 (2 hedged) | 0 |" in md
    assert "were hedged (several candidates, none stated)" in md
    html = render_html(tables, title="runs")
    assert "<td class=num>4 (2 hedged)</td>" in html


def test_two_scorer_versions_in_one_run_are_flagged() -> None:
    old = records()[0].model_copy(update={
        "question_id": "q0",
        "score_details": {"rule": Score(value=1.0, scorer="rule", version="3")}})
    summary = summarize([old, *records()])
    assert summary.scorer_versions["rule"] == {"3": 1, "4": 4}
    assert "Scorer versions MIXED" in render_markdown(summary, title="run")
    assert "MIXED" not in render_markdown(summarize(records()), title="run")


def test_the_run_command_says_how_many_replies_were_hedged(tmp_path) -> None:
    from memgauge.cli._execute import reply_labels_line

    (tmp_path / "records.jsonl").write_text(
        "".join(r.model_dump_json() + "\n" for r in records()))
    assert reply_labels_line(tmp_path) == (
        "replies not read as one answer (several candidates and none stated, or no letter): "
        "2 hedged (2 of 4 ok, scored 0)")
    (tmp_path / "records.jsonl").write_text(records()[0].model_dump_json() + "\n")
    assert reply_labels_line(tmp_path) is None
