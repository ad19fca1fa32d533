"""The HTML report's question browser with many rows: page size, render time, and, where
Chromium and Playwright are installed, how long the page takes to load, to search, and to
show every row at once (what the browser did before it had pages).

    python3 bench/report_pages.py [--questions 5000]

Prints one JSON object. Offline: the page is written to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from memgauge.analysis import RunData, build_tables
from memgauge.report import render_html
from memgauge.schema import BenchmarkInfo, Record, Response


def _records(n: int) -> list[Record]:
    return [Record(question_id=f"q{i:05d}", episode_id=f"e{i // 10}",
                   benchmark=BenchmarkInfo(name="bench"), status="ok",
                   ability="information_extraction", answer_type="free_text",
                   question=f"What was said in session {i}?", gold="Paris",
                   prediction="an answer of a few words " * 4,
                   response=Response(text="an answer"), scores={"rule": float(i % 2)})
            for i in range(n)]


def _browser(page_file: Path, n: int) -> dict[str, float] | str:
    exe = shutil.which("chromium")
    if exe is None:
        return "chromium is not on PATH"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "playwright is not installed"
    last = f"q{n - 1:05d}"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe,
                                     args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        t0 = time.perf_counter()
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        page.fill("#q-search", last)
        page.wait_for_function("document.getElementById('q-count').textContent"
                               ".startsWith('1 of')")
        search = time.perf_counter() - t0
        page.fill("#q-search", "")
        t0 = time.perf_counter()
        page.select_option("#q-size", "all")
        page.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")
        show_all = time.perf_counter() - t0
        browser.close()
    return {"load_s": round(load, 2), "search_one_id_s": round(search, 2),
            "show_all_rows_s": round(show_all, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=5000)
    args = parser.parse_args()
    tables = build_tables([RunData("bench", {}, _records(args.questions))], n_resamples=200)
    t0 = time.perf_counter()
    html = render_html(tables, title="bench")
    render = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "report.html"
        page_file.write_text(html, encoding="utf-8")
        browser = _browser(page_file, args.questions)
    json.dump({"questions": args.questions, "page_bytes": len(html.encode()),
               "render_s": round(render, 2), "browser": browser}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
