"""The HTML report: self-contained, escaped, embedded plots, the same numbers as the tables."""

from __future__ import annotations

import base64
import io
import json
import re
import sys
from html.parser import HTMLParser

import pytest
from helpers.report_runs import IE, identity, rec, three_runs, write_three
from PIL import Image
from typer.testing import CliRunner

from memgauge.analysis import RunData, build_tables
from memgauge.cli import app
from memgauge.errors import ConfigError
from memgauge.report import render_html, render_tables_markdown
from memgauge.report._html import script_json

pytest.importorskip("matplotlib")

runner = CliRunner()
EVIL = "<script>alert(1)</script>"


def evil_runs() -> list[RunData]:
    runs = three_runs()
    evil = [rec("q9", 0.0, prediction=EVIL, question="<img src=x onerror=alert(2)>",
                gold='"quoted" & <b>bold</b>', x="X4", y="Y2")]
    manifest = identity("<svg onload=alert(3)>", "8k")
    return [*runs, RunData('run"<u>', manifest, evil)]


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(build_tables(evil_runs()), title="report <title>")


def test_untrusted_text_is_escaped(page):
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "<svg onload" not in page and "<u>" not in page
    assert "&quot;quoted&quot; &amp; &lt;b&gt;bold&lt;/b&gt;" in page
    assert 'data-run="run&quot;&lt;u&gt;"' in page
    assert "<title>report &lt;title&gt;</title>" in page
    # the only scripts: the JSON data island and the browser code
    assert len(re.findall(r"<script\b", page)) == 2


class _LinkParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.values: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.values += [v or "" for k, v in attrs if k in ("src", "href", "action")]


def _links(page: str) -> list[str]:
    """Every src/href/action of a real tag (escaped text does not count)."""
    parser = _LinkParser()
    parser.feed(page)
    return parser.values


def test_page_is_self_contained(page):
    assert "http://" not in page and "https://" not in page
    links = _links(page)
    assert links and all(v.startswith(("data:image/png;base64,", "#")) for v in links)
    assert page.startswith("<!DOCTYPE html>")


def test_plots_are_embedded_pngs(page):
    uris = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    # leaderboard, tiers, long-context vs memory agents, abilities, depth, X×Y, error
    # categories, coverage
    assert len(uris) == 8
    for uri in uris:
        img = Image.open(io.BytesIO(base64.b64decode(uri)))
        assert img.format == "PNG" and 100 < img.width < 2000 and img.height > 100
    assert len(page) < 1_000_000


def test_data_island_holds_the_tables(page):
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page,
                  re.DOTALL)
    assert m and "<" not in m.group(1)
    data = json.loads(m.group(1))
    expected = build_tables(evil_runs()).to_dict()
    expected.pop("questions")
    assert data == json.loads(json.dumps(expected))
    assert data["runs"][0]["accuracy"] == 0.6


def test_script_json_cannot_close_the_element():
    value = {"a": "</script><!-- & >"}
    text = script_json(value)
    assert not set("<>&") & set(text)
    assert json.loads(text) == value


def test_tables_and_question_rows(page):
    assert "60.0% [23.1, 88.2] (small n: Wilson) (n=5)" in page  # run A, as in the Markdown
    assert "66.7% (n=3)" in page
    rows = re.findall(r"<tr data-run=", page)
    assert len(rows) == 17
    assert len(re.findall(r'data-correct="wrong"', page)) == 6  # A: 2, B: 3, evil run: 1
    assert len(re.findall(r'data-label="answerability_failure"', page)) == 1
    assert 'id="q-count">17 of 17 match<' in page
    for key in ("run", "ability", "tier", "correct", "label"):
        assert f'<select id="f-{key}" data-key="{key}">' in page
    assert f'<option value="{IE}">' in page
    assert "timeout: slow &lt;server&gt;" in page


def test_sections_without_data_say_so():
    page = render_html(build_tables([RunData("solo", {}, [rec("q1", 1.0)])]), title="t")
    assert "No record carries meta.evidence_depth." in page
    assert "No record carries both X and Y labels." in page
    assert "No pair of abilities is shared by 3 or more runs." in page


def test_missing_matplotlib_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ConfigError, match=r"memgauge\[report\]"):
        render_html(build_tables(three_runs()), title="t")


def test_cli_html_writes_the_page(tmp_path, monkeypatch):
    dirs = write_three(tmp_path / "runs")
    out = tmp_path / "page.html"
    r = runner.invoke(app, ["report", *dirs, "--format", "html", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert str(out) in r.output and "<html" not in r.stdout
    assert "memgauge report: 3 runs" in out.read_text()
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["report", dirs[0], "--format", "html"])
    assert r.exit_code == 0, r.output
    assert "<title>memgauge report: A</title>" in (tmp_path / "report.html").read_text()


_ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3",
                 "nav", "a", "ul", "li", "b", "i", "code", "section", "p", "figure", "img",
                 "div", "table", "thead", "tbody", "tr", "th", "td", "br", "small", "span",
                 "details", "summary", "label", "select", "option", "input", "button", "dl",
                 "dt", "dd", "script"}


class _TagParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_hostile_text_in_every_field_makes_no_tag_or_handler():
    bad = rec("q<b>1", 0.0, prediction="<img src=x onerror=alert(1)>", question=EVIL,
              gold="<iframe src=javascript:alert(2)>", retrieved=("<svg onload=alert(3)>",),
              x="X1", y="Y1")
    bad.subtype = "<marquee>sub"
    bad.scores["<i onmouseover=alert(4)>judge"] = 1.0
    err = rec("q2", None, status="error")
    err.response.error.message = "<script>alert(5)</script>\nsecond line"
    page = render_html(build_tables([RunData("<u>run", identity("<s>sys", "<em>8k"),
                                             [bad, err])]), title=EVIL)
    parser = _TagParser()
    parser.feed(page)
    assert {tag for tag, _ in parser.tags} <= _ALLOWED_TAGS
    assert not [(tag, k) for tag, attrs in parser.tags for k in attrs if k.startswith("on")]
    assert all(attrs["src"].startswith("data:image/png;base64,")
               for tag, attrs in parser.tags if tag == "img")
    assert [tag for tag, _ in parser.tags].count("script") == 2
    assert "&lt;script&gt;alert(5)&lt;/script&gt;" in page


def test_heatmaps_have_a_colour_scale():
    from matplotlib.figure import Figure

    from memgauge.analysis import Cell
    from memgauge.report._plots import Plots, heatmap

    fig = Figure()
    grid = {"A": {"x": Cell(0.5, 2), "y": Cell(float("nan"), 0)}}
    heatmap(Plots(), fig.add_subplot(), grid, ["A"], ["x", "y"], "t")
    assert len(fig.axes) == 2  # the map and its colour bar
    scale = fig.axes[1]
    assert scale.get_ylabel() == "accuracy" and scale.get_ylim() == (0.0, 1.0)
    assert [t.get_text() for t in scale.get_yticklabels()] == ["0%", "25%", "50%", "75%",
                                                               "100%"]
    assert "scale beside each map" in render_html(build_tables(three_runs()), title="t")


def test_a_single_tier_is_drawn_as_bars_not_a_one_point_line():
    from matplotlib.figure import Figure

    from memgauge.report._plots import Plots, colors_for, tier_bars

    tables = build_tables([RunData("A", identity("s1", "8k"), three_runs()[0].records)])
    system = tables.systems[0]
    assert system.tiers == ["8k"]
    ax = Figure().add_subplot()
    tier_bars(ax, tables.tier_curves[system.label], system, colors_for(Plots(), tables.abilities))
    assert len(ax.patches) == 2 and not ax.lines  # IE and TR bars, no curve
    assert {t.get_text() for t in ax.texts} == {"66.7% (n=3)", "50.0% (n=2)"}
    assert ax.get_xlabel() == "accuracy at tier 8k"
    page = render_html(tables, title="t")
    assert 'alt="Accuracy per ability at the one tier run, as bars"' in page
    assert "a curve needs two tiers or more" in page
    mixed = render_html(build_tables(three_runs()), title="t")  # s1 two tiers, s2 one
    assert "one line per ability; systems with one tier as bars" in mixed


def test_x_and_y_levels_are_explained(page):
    for level, name in (("X1", "scene"), ("X2", "region"), ("X3", "instance"),
                        ("X4", "pixel"), ("Y1", "atomic"), ("Y2", "relational"),
                        ("Y3", "evolutionary")):
        assert f"<dt>{level} {name}</dt><dd>" in page
    assert "how fine the visual evidence is" in page
    md = render_tables_markdown(build_tables(three_runs()))
    assert "- **X4 pixel:** fine detail: colour, texture, small text, subtle shape" in md
    assert "- **Y3 evolutionary:**" in md


def test_question_browser_has_search_and_pages(page):
    assert '<input type="search" id="q-search"' in page
    assert '<option value="50" selected>50</option>' in page
    assert '<option value="all">all</option>' in page
    assert 'id="q-prev"' in page and 'id="q-next"' in page


def test_one_cluster_and_small_n_are_marked_on_the_page():
    one = RunData("T", identity("s1", "8k"), [rec(f"q{i}", 0.0) for i in range(3)])
    html = render_html(build_tables([one]), title="t")
    # three wrong answers in one episode: neither [0.0, 0.0] nor ±0.0 pp
    assert "0.0% [0.0, 56.1] (small n: Wilson) (n=3)" in html
    assert "undefined (one cluster) (1)" in html and "±0.0 pp" not in html
