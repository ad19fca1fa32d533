"""The section a report opens with (design 0050): the answer table, system x tier, and one
sentence per tier, in Markdown and in HTML. The figures come from analysis/_headline.py."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from memgauge.analysis._headline import HeadlineRow, TierVerdict
from memgauge.analysis._stats import WILSON

__all__ = ["headline_html", "headline_markdown", "open_with"]

TITLE = "The answer: long context or memory?"
COLUMNS = ("System", "Kind", "Tier", "n", "Errors", "Accuracy", "95% CI",
           "Tokens / question", "Seconds / question", "Ingest tokens / question",
           "Ingest s / question")


def _pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{100 * x:.1f}%"


def _num(x: float, digits: int = 0) -> str:
    return "—" if math.isnan(x) else f"{x:,.{digits}f}"


def _ci(row: HeadlineRow) -> str:
    if math.isnan(row.ci_low) or math.isnan(row.ci_high):
        return "—"
    small = " (small n: Wilson)" if row.ci_method == WILSON else ""
    return f"[{_pct(row.ci_low)}, {_pct(row.ci_high)}]{small}"


def _cells(row: HeadlineRow) -> list[str]:
    return [row.label, row.kind, row.tier, str(row.n), str(row.errors), _pct(row.accuracy),
            _ci(row), _num(row.tokens_per_question), _num(row.seconds_per_question, 1),
            _num(row.ingest_tokens_per_question), _num(row.ingest_s_per_question, 1)]


def headline_markdown(rows: Sequence[HeadlineRow], verdicts: Sequence[TierVerdict],
                      intro: str, notes: Sequence[str] = ()) -> list[str]:
    """The opening section's Markdown lines."""
    lines = [f"## {TITLE}", "", intro, "",
             "| " + " | ".join(COLUMNS) + " |",
             "| --- | --- | --- | " + " | ".join(["---:"] * (len(COLUMNS) - 3)) + " |"]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    lines.append("")
    lines += [f"- {v.sentence}" for v in verdicts]
    lines += [f"- {note}" for note in notes]
    return [*lines, ""]


def headline_html(rows: Sequence[HeadlineRow], verdicts: Sequence[TierVerdict], intro: str,
                  notes: Sequence[str] = ()) -> str:
    """The same section as an HTML fragment."""
    e = html.escape
    head = "".join(f"<th>{e(c)}</th>" for c in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in _cells(r)) + "</tr>"
                   for r in rows)
    items = "".join(f"<li>{e(s)}</li>" for s in [*(v.sentence for v in verdicts), *notes])
    return (f'<section id="answer"><h2>{e(TITLE)}</h2><p>{e(intro)}</p>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            f"<ul>{items}</ul></section>")


def open_with(page: str, fragment: str) -> str:
    """``page`` (a whole HTML document) with ``fragment`` first in its body."""
    at = page.find("<body>")
    if at < 0:
        raise ValueError("not an HTML page: no <body>")
    at += len("<body>")
    return page[:at] + fragment + page[at:]
