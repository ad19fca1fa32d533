"""Text from runs (model outputs, questions, ids, error messages, run and scorer names) is
untrusted: the Markdown reports carry no raw HTML, link or table break, and what the CLI
prints carries no terminal control sequence."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.report_runs import identity, rec, write_run
from typer.testing import CliRunner

from memgauge.analysis import RunData, build_tables, load_runs, paired_compare, summarize
from memgauge.cli import app
from memgauge.report import (
    render_compare_markdown,
    render_markdown,
    render_tables_markdown,
    show_controls,
)
from memgauge.report._md import cell, code, table
from memgauge.schema import ErrorInfo

runner = CliRunner()

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
LINK = "[click](javascript:alert(1)) ![](http://tracker.invalid/p.png)"
PIPE_ID = "q|pipe`tick"
NEWLINE_ERROR = "line one\nline two <b>bold</b>"
OSC = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
CSI_8BIT = "\x9b2J"
TAG = re.compile(r"<[A-Za-z/!?]")  # where an HTML tag, comment or declaration opens
LINK_OPEN = re.compile(r"(?<!\\)\[[^\]]*\]\(")
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def hostile_records(answer_type: str = "free_text"):
    bad_error = rec("e|1", None, status="error")
    bad_error.response.error = ErrorInfo(kind="timeout <i>", message=NEWLINE_ERROR + OSC)
    return [
        rec("q1", 1.0, prediction="Paris", answer_type=answer_type),
        rec("q2", 0.0, prediction=SCRIPT, question=LINK, gold=IMG, answer_type=answer_type),
        rec(PIPE_ID, 0.0, prediction=IMG + OSC + CLEAR + CSI_8BIT, answer_type=answer_type),
        bad_error,
    ]


def baseline_records():
    return [rec("q1", 1.0), rec("q2", 1.0), rec(PIPE_ID, 1.0)]


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def assert_safe_markdown(md: str) -> None:
    assert TAG.search(md) is None, TAG.search(md)
    assert RAW_CONTROL.search(md) is None
    assert LINK_OPEN.search(md) is None  # no link or image opens
    for block in re.split(r"\n(?!\|)", md):  # each table keeps its columns
        rows = [ln for ln in block.split("\n") if ln.startswith("|")]
        assert len({unescaped_pipes(ln) for ln in rows}) <= 1, rows


def test_cell_escapes_html_markdown_newlines_and_controls():
    assert cell(SCRIPT) == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert cell("a|b\nc\r\nd") == "a\\|b c d"
    assert cell("a\\|b") == "a\\\\\\|b"  # a backslash cannot un-escape the pipe after it
    assert cell("[x](y) `z` & <") == "\\[x](y) \\`z\\` &amp; &lt;"
    assert cell(OSC + CLEAR) == "\\x1b]0;pwned\\x07\\x1b\\[2J"
    assert code("judge-b") == "`judge-b`" and code(PIPE_ID) == "q\\|pipe\\`tick"
    assert table(["a", "b"], [[cell("x|y"), "1"]]).splitlines()[2] == "| x\\|y | 1 |"


def test_run_report_and_tables_carry_no_raw_html():
    records = hostile_records()
    md = render_markdown(summarize(records), title=f"run {SCRIPT}", meta={"model": IMG})
    md += render_tables_markdown(build_tables([
        RunData(f"run{IMG}", identity(f"sys{SCRIPT}", "8k"), records)]))
    assert_safe_markdown(md)
    assert "line one line two &lt;b&gt;bold&lt;/b&gt;" in md  # the error stays on its line
    assert "e\\|1" in md and "timeout &lt;i&gt;" in md


def test_compare_markdown_carries_no_raw_html():
    base = {r.question_id: r for r in baseline_records()}
    run = {r.question_id: r for r in hostile_records()}
    md = render_compare_markdown(["base", f"run{SCRIPT}"],
                                 [paired_compare(base, run, scorer="rule")],
                                 [base, run])
    assert_safe_markdown(md)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md  # the regression is shown, as text
    assert "q\\|pipe\\`tick" in md


@pytest.fixture
def folders(tmp_path: Path) -> tuple[str, str]:
    base = write_run(tmp_path / "base", identity("s", "8k"), baseline_records())
    records = hostile_records("integer")
    for r in records:
        if r.status == "ok":
            r.scores["judge"] = 1.0 - r.scores["rule"]
    records[0].scores.pop("judge")
    records[0].meta["judge_error"] = {"kind": "bad_reply", "message": SCRIPT + OSC}
    return base, write_run(tmp_path / "run<i>x", identity("s", "8k"), records)


def test_cli_markdown_outputs_are_safe_for_html_and_terminals(folders):
    base, run = folders
    for args in (["report", run], ["compare", base, run, "--scorer", "rule"],
                 ["audit", run]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert_safe_markdown(result.stdout)
        assert "\\x1b]0;pwned\\x07" in result.stdout, args  # shown, visibly


def test_cli_json_outputs_show_controls_and_stay_equal_json(folders):
    base, run = folders
    for args in (["report", run, "--format", "json"],
                 ["compare", base, run, "--scorer", "rule", "--format", "json"],
                 ["audit", run, "--format", "json"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert RAW_CONTROL.search(result.stdout) is None, args  # \x9b too
        json.loads(result.stdout)
    report = json.loads(runner.invoke(app, ["report", run, "--format", "json"]).stdout)
    predictions = [q["prediction"] for q in report["tables"]["questions"]]
    assert IMG + OSC + CLEAR + CSI_8BIT in predictions  # the text itself is kept


def test_cli_errors_show_controls(tmp_path):
    result = runner.invoke(app, ["report", str(tmp_path / f"missing{CLEAR}{OSC}")])
    assert result.exit_code != 0
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "missing\\x1b[2J\\x1b]0;pwned\\x07" in result.output


def test_show_controls_keeps_text_tabs_and_newlines():
    assert show_controls("héllo\tworld\n✓") == "héllo\tworld\n✓"
    assert show_controls("a\rb\x08c\x7f\x9b") == "a\\x0db\\x08c\\x7f\\x9b"
    assert show_controls('{"a": "\x9b"}', json=True) == '{"a": "\\u009b"}'
    assert json.loads(show_controls(json.dumps({"a": "\x9b\x1b"}, ensure_ascii=False),
                                    json=True)) == {"a": "\x9b\x1b"}


def test_loaded_run_labels_are_escaped(folders):
    _, run = folders
    md = render_tables_markdown(build_tables(load_runs([run])))
    assert "run&lt;i&gt;x" in md and "<i>" not in md
