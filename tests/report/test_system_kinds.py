"""What each system is in the long-context vs memory-agents comparison, as declared where it
is registered (design 0051): oracles and oracle readers are baselines, not memory agents."""

from __future__ import annotations

import pytest
from helpers.report_runs import rec

from memgauge.analysis import RunData, build_tables
from memgauge.report import render_html, render_tables_markdown

pytest.importorskip("matplotlib")


def _run(label: str, system: str, options: dict | None = None) -> RunData:
    manifest = {"config": {"identity": {
        "system": system, "model": "local:smollm2", "context_mode": "text", "tier": "4k",
        "bench": "synth", "system_options": options or {}}}}
    return RunData(label, manifest, [rec("q1", 1.0), rec("q2", 0.0)])


RUNS = [("fc", "full-context", {}, "long-context"),
        ("rag", "rag", {}, "memory agent"),
        ("bm25-model", "rag-bm25", {"top_k": "5"}, "memory agent"),
        ("bm25-oracle", "rag-bm25", {"top_k": "5", "reader": "oracle"}, "baseline"),
        ("embed-oracle", "rag-embed", {"reader": "oracle"}, "baseline"),
        ("facts", "fact-memory", {}, "memory agent"),
        ("summary", "summary-memory", {}, "memory agent"),
        ("oracle", "oracle", {}, "baseline"),
        ("text-only", "oracle-text", {}, "baseline"),
        ("clues", "clue-all", {}, "baseline"),
        ("service", "http://127.0.0.1:9/mem", {}, "memory agent")]


def test_each_system_has_its_declared_kind():
    tables = build_tables([_run(label, system, opts) for label, system, opts, _ in RUNS])
    label_of = {r.run: r.system for r in tables.runs}
    assert {label: tables.system_kinds[label_of[label]] for label, *_ in RUNS} == \
        {label: kind for label, _, _, kind in RUNS}


def test_html_and_markdown_name_the_kinds_and_draw_baselines_dotted():
    tables = build_tables([_run(label, system, opts) for label, system, opts, _ in RUNS])
    page = render_html(tables, title="t")
    section = page[page.index('id="side-by-side"'):page.index('id="clues"')]
    assert "<td>baseline</td>" in section and "<td>long-context</td>" in section
    assert "baselines dotted" in section and "No long-context system" not in section
    md = render_tables_markdown(tables)
    assert "| oracle-text · local:smollm2 · text | baseline | 4k |" in md  # the cost table
    assert "| full-context · local:smollm2 · text | long-context | 4k |" in md


def test_no_long_context_system_is_said_not_hidden():
    tables = build_tables([_run("text-only", "oracle-text"), _run("facts", "fact-memory")])
    page = render_html(tables, title="t")
    section = page[page.index('id="side-by-side"'):page.index('id="clues"')]
    assert "No long-context system (full-context) is among these runs" in section
    assert "No long-context system (full-context)" in render_tables_markdown(tables)
