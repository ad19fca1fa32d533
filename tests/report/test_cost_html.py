"""The long-context vs memory-agents view in the HTML page: one figure, the cost table with
the same figures as the Markdown, every name escaped."""

from __future__ import annotations

import base64
import io
import re

import pytest
from PIL import Image
from test_cost_report import manifest, runs

from memgauge.analysis import Price, RunData, build_tables
from memgauge.report import render_html
from memgauge.report._tables_md import cost_cells

pytest.importorskip("matplotlib")

EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def page_and_tables():
    records = runs()[2].records  # the memory agent's
    evil = RunData("E8", manifest(EVIL, "8k", "openai:gpt-x"), records)
    tables = build_tables([*runs(), evil], n_resamples=20,
                          prices={"gpt-x": Price(2.0, 10.0)}, prices_file="p.json")
    return render_html(tables, title="cost"), tables


def _section(page: str) -> str:
    start = page.index('<section id="side-by-side">')
    return page[start:page.index("</section>", start)]


def test_the_view_has_one_figure_and_the_cost_table(page_and_tables):
    page, tables = page_and_tables
    section = _section(page)
    assert 'href="#side-by-side"' in page
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', section)
    assert len(images) == 1
    assert Image.open(io.BytesIO(base64.b64decode(images[0]))).size[0] > 100
    assert "long-context solid, memory agents dashed" in section
    for row in tables.cost:  # the same cells as the Markdown, escaped
        for text in cost_cells(row)[3:]:
            assert text.replace("&", "&amp;").replace("<", "&lt;") in section
    assert "$0.004200" in section and "2.000 s / 2.900 s (n=3)" in section
    assert "no price for model &#x27;local:smollm2&#x27;" in section


def test_system_names_in_the_view_are_escaped(page_and_tables):
    section = _section(page_and_tables[0])
    assert EVIL not in section
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section
