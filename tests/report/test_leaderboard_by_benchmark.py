"""Runs on different benchmarks are never ranked in one leaderboard (design 0043, issue 29):
the Markdown and the HTML give one table per benchmark, under its name, and the JSON names
each run's benchmark."""

from __future__ import annotations

from memgauge.analysis import RunData, build_tables
from memgauge.report import render_tables_markdown
from memgauge.report._html import render_html
from memgauge.schema import BenchmarkInfo, Record, Response


def _rec(bench: str, qid: str, score: float) -> Record:
    return Record(question_id=qid, episode_id="e1", benchmark=BenchmarkInfo(name=bench),
                  status="ok", ability="information_extraction", answer_type="free_text",
                  question="q?", gold="g", prediction="g", response=Response(text="g"),
                  scores={"rule": score})


def _run(label: str, bench: str, scores: list[float]) -> RunData:
    manifest = {"config": {"identity": {"bench": bench, "system": label, "model": "m"}}}
    return RunData(label, manifest, [_rec(bench, f"q{i}", s) for i, s in enumerate(scores)])


def _runs() -> list[RunData]:
    return [_run("loco-a", "locomo", [0.0, 0.0, 1.0]), _run("synth-a", "synth", [1.0, 1.0]),
            _run("loco-b", "locomo", [1.0, 1.0, 1.0])]


def test_the_markdown_leaderboard_has_one_table_per_benchmark():
    md = render_tables_markdown(build_tables(_runs()))
    board = md[md.index("### Leaderboard"):]
    loco, synth = board.index("#### Benchmark: locomo"), board.index("#### Benchmark: synth")
    assert loco < board.index("| loco-b |") < board.index("| loco-a |") < synth
    assert synth < board.index("| synth-a |")


def test_the_html_leaderboard_has_one_table_per_benchmark():
    page = render_html(build_tables(_runs()), title="t")
    start = page.index('<section id="leaderboard">')
    page = page[start:page.index("</section>", start)]
    loco, synth = page.index("Benchmark: locomo"), page.index("Benchmark: synth")
    assert loco < page.index(">loco-b<") < page.index(">loco-a<") < synth < page.index(">synth-a<")


def test_one_benchmark_keeps_one_table_and_the_json_names_it():
    tables = build_tables(_runs()[:1])
    assert "#### Benchmark" not in render_tables_markdown(tables)
    assert tables.to_dict()["runs"][0]["benchmark"] == "locomo"
