"""A report headlined by a judge checks it against the rule scorer on closed-form items and
warns when it over-credits (design 0043, issue 29): a judge that always said {"score": 1}
raised accuracy from 5 % to 100 % and only `memgauge audit` showed it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memgauge.analysis import RunData, build_tables
from memgauge.cli import app
from memgauge.report import render_tables_markdown
from memgauge.report._html import render_html
from memgauge.schema import BenchmarkInfo, Record, Response


def _rec(qid: str, rule: float, judge: float, answer_type: str = "string") -> Record:
    return Record(question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name="t"),
                  status="ok", ability="information_extraction", answer_type=answer_type,
                  question="q?", gold="g", prediction="p", response=Response(text="p"),
                  scores={"rule": rule, "judge": judge})


def _yes_judge() -> RunData:
    """20 closed-form items, 1 right by the rule; the judge credits all of them."""
    records = [_rec(f"q{i:02d}", 1.0 if i == 0 else 0.0, 1.0) for i in range(20)]
    records.append(_rec("free", 0.0, 1.0, "free_text"))  # not closed-form: left out
    return RunData("yes-judge", {}, records)


def _fair_judge() -> RunData:
    return RunData("fair", {}, [_rec(f"q{i:02d}", float(i % 2), float(i % 2))
                                for i in range(20)])


def test_markdown_shows_the_agreement_and_warns_on_over_credit():
    md = render_tables_markdown(build_tables([_yes_judge(), _fair_judge()], primary="judge"))
    flat = " ".join(md.split())
    assert "### Judge against the rule (closed-form items)" in md
    assert "| yes-judge | `judge` | 20 | 5.0% |" in md
    assert "| 19 (95.0%) |" in md
    assert "| fair | `judge` | 20 | 100.0% |" in md
    warning = ("in yes-judge, the judge 'judge' credits 19 of 20 closed-form items that the "
               "rule scorer marks wrong (95.0% over-credit, over the 10 % bound)")
    assert flat.count(warning) == 2  # at the top and in the section
    assert "in fair" not in flat


def test_html_and_json_carry_it_too():
    tables = build_tables([_yes_judge()], primary="judge")
    page = render_html(tables, title="t")
    assert 'id="judge-check"' in page and "credits 19 of 20 closed-form items" in page
    check = tables.to_dict()["judge_checks"]["yes-judge"]
    assert (check["n"], check["over_credit"], check["warn"]) == (20, 19, True)


def test_no_section_when_the_rule_is_the_headline():
    tables = build_tables([_yes_judge()], primary="rule")
    assert tables.judge_checks == {}
    assert "Judge against the rule" not in render_tables_markdown(tables)


def test_the_report_command_warns(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"config": {"identity": {}}}))
    (run / "records.jsonl").write_text(
        "".join(r.model_dump_json() + "\n" for r in _yes_judge().records))
    res = CliRunner().invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    assert "**Warning:** in run, the judge 'judge' credits 19 of 20" in res.stdout
