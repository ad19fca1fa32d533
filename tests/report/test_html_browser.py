"""The HTML report in a real (headless, offline) Chromium: plots render, no script errors,
filters narrow the question rows, and hostile text stays text.

Skips when Chromium (Debian's ``chromium`` on PATH) or Playwright is missing, or the browser
cannot start."""

from __future__ import annotations

import shutil

import pytest
from helpers.report_runs import TR, rec, three_runs

from memgauge.analysis import RunData, build_tables
from memgauge.report import render_html

pytest.importorskip("matplotlib")

EVIL = "<script>alert(1)</script>"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    exe = shutil.which("chromium")
    if exe is None:
        pytest.skip("chromium is not on PATH")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed")
    with sync_playwright() as pw:
        try:
            chromium = pw.chromium.launch(executable_path=exe, args=ARGS)
        except Exception as exc:  # noqa: BLE001 - any launch failure means "cannot test here"
            pytest.skip(f"chromium did not start: {exc}")
        yield chromium
        chromium.close()


@pytest.fixture
def opened(browser, tmp_path):
    """The report page loaded from a file:// URL, with console, page errors and dialogs
    recorded."""
    runs = [*three_runs(), RunData("D", {}, [rec("q1", 0.0, prediction=EVIL)])]
    path = tmp_path / "report.html"
    path.write_text(render_html(build_tables(runs), title="browser test"), encoding="utf-8")
    page = browser.new_page()
    events: dict[str, list[str]] = {"console": [], "pageerror": [], "dialog": []}
    page.on("console", lambda m: events["console"].append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: events["pageerror"].append(str(e)))

    def on_dialog(dialog):
        events["dialog"].append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    yield page, events
    page.close()


def visible_rows(page) -> int:
    return page.locator("#q-table tbody tr:visible").count()


def test_page_loads_without_errors_and_plots_render(opened):
    page, events = opened
    assert [m for m in events["console"] if m.startswith("error")] == []
    assert events["pageerror"] == []
    sizes = page.evaluate("Array.from(document.images).map(i => [i.complete, i.naturalWidth])")
    assert len(sizes) == 8 and all(done and width > 0 for done, width in sizes)


def test_filters_narrow_rows_and_update_the_counter(opened):
    page, _ = opened
    total = 17  # A 6, B 5, C 5, D 1
    assert visible_rows(page) == total
    assert page.inner_text("#q-count") == f"{total} of {total} match"
    page.select_option("#f-correct", "wrong")  # A: q3, q6; B: q2, q3, q4; D: q1
    assert visible_rows(page) == 6
    assert page.inner_text("#q-count") == f"6 of {total} match"
    page.select_option("#f-run", "B")
    assert visible_rows(page) == 3
    page.select_option("#f-correct", "")
    page.select_option("#f-label", "answerability_failure")
    assert visible_rows(page) == 0
    page.select_option("#f-run", "")
    assert visible_rows(page) == 1
    page.select_option("#f-label", "")
    page.select_option("#f-correct", "error")
    page.select_option("#f-tier", "8k")
    assert visible_rows(page) == 1 and page.inner_text("#q-count") == f"1 of {total} match"


def test_hostile_prediction_is_shown_as_text(opened):
    page, events = opened
    page.select_option("#f-run", "D")
    assert visible_rows(page) == 1
    assert EVIL in page.inner_text("#q-table tbody tr:visible")
    assert events["dialog"] == []
    assert page.evaluate("document.querySelectorAll('script').length") == 2


def test_search_box_matches_every_word_in_any_column(opened):
    page, _ = opened
    page.fill("#q-search", "lyon")  # A q3's prediction
    assert visible_rows(page) == 1 and page.inner_text("#q-count") == "1 of 17 match"
    page.fill("#q-search", "oslo q3")  # all words, any column: B q3
    assert visible_rows(page) == 1
    page.fill("#q-search", "temporal")
    assert visible_rows(page) == 4
    page.select_option("#f-run", "A")  # search and filters combine
    assert visible_rows(page) == 2
    page.fill("#q-search", "")
    assert visible_rows(page) == 6


@pytest.fixture
def many(browser, tmp_path):
    """120 question rows: three pages of 50."""
    runs = [RunData("P", {}, [rec(f"q{i:03d}", float(i % 2)) for i in range(120)])]
    path = tmp_path / "many.html"
    path.write_text(render_html(build_tables(runs), title="pages"), encoding="utf-8")
    page = browser.new_page()
    page.goto(path.as_uri())
    yield page
    page.close()


def first_visible_id(page) -> str:
    return page.inner_text("#q-table tbody tr:visible td:nth-child(2)").split()[0]


def test_pages_of_rows(many):
    page = many
    assert visible_rows(page) == 50 and first_visible_id(page) == "q000"
    assert page.inner_text("#q-page") == "rows 1–50, page 1 of 3"
    assert page.is_disabled("#q-prev") and not page.is_disabled("#q-next")
    page.click("#q-next")
    assert first_visible_id(page) == "q050"
    assert page.inner_text("#q-page") == "rows 51–100, page 2 of 3"
    page.click("#q-next")
    assert visible_rows(page) == 20 and page.is_disabled("#q-next")
    page.click("#q-prev")
    assert first_visible_id(page) == "q050"
    page.select_option("#q-size", "all")
    assert visible_rows(page) == 120 and page.inner_text("#q-page") == "rows 1–120, page 1 of 1"
    page.select_option("#q-size", "25")
    page.select_option("#f-correct", "right")  # a filter goes back to page 1 of what matches
    assert visible_rows(page) == 25 and first_visible_id(page) == "q001"
    assert page.inner_text("#q-count") == "60 of 120 match"
    assert page.inner_text("#q-page") == "rows 1–25, page 1 of 3"
    page.fill("#q-search", "no such words")
    assert visible_rows(page) == 0 and page.inner_text("#q-page") == "no rows"


@pytest.mark.parametrize("width", [900, 1280])
def test_leaderboard_fits_the_page(opened, width):
    page, _ = opened
    page.set_viewport_size({"width": width, "height": 800})
    board = page.evaluate("(() => { const d = document.querySelector('#leaderboard .scroll');"
                          " return [d.scrollWidth, d.clientWidth]; })()")
    assert board[0] <= board[1]  # no horizontal scrolling needed
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def _demo_like_runs() -> list[RunData]:
    """Six systems with long labels (system · model · what it sent), each at two tiers: the
    side-by-side figure's legend has six long entries."""
    runs = []
    for system in ("full-context", "rag", "fact-memory", "summary-memory", "oracle",
                   "oracle-text"):
        for tier in ("4k", "8k"):
            manifest = {"config": {"identity": {
                "system": system, "model": "local:smollm2", "context_mode": "text",
                "tier": tier, "bench": "synth", "system_options": {}}}}
            runs.append(RunData(f"{system}-{tier}", manifest,
                                [rec("q1", 1.0), rec("q2", 0.0, ability=TR)]))
    return runs


def _edges_blank(png: bytes) -> bool:
    """Whether the outermost pixel columns of a screenshot are background: a figure whose
    text runs into its edge has been cut off there."""
    import io

    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("L"))
    return bool(pixels[:, 0].min() > 240 and pixels[:, -1].min() > 240)


@pytest.mark.parametrize("width", [900, 1280])
def test_every_figure_is_whole_and_legible_at_the_page_width(browser, tmp_path, width):
    path = tmp_path / "figures.html"
    path.write_text(render_html(build_tables(_demo_like_runs()), title="figures"),
                    encoding="utf-8")
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(path.as_uri())
    images = page.locator("figure img")
    assert images.count() >= 5
    for i in range(images.count()):
        img = images.nth(i)
        alt = img.get_attribute("alt")
        shown, natural = img.evaluate("i => [i.getBoundingClientRect().width, i.naturalWidth]")
        assert shown <= width and shown >= min(natural, width - 60) * 0.95, alt  # page width
        assert _edges_blank(img.screenshot()), f"cut off at an edge: {alt}"
    page.close()
