"""Markdown helpers shared by the report renderers.

Every value that comes from a run (model outputs, questions, gold answers, ids, error
messages, scorer and run names) is untrusted: it goes through :func:`cell` (or :func:`code`)
and nowhere else, so no raw HTML, link or table break survives into a rendered report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memgauge.report._terminal import show_controls

__all__ = ["cell", "code", "table"]

# Backslash first, so that the backslashes added for the others are not doubled. ``&<>``
# become entities (no tag, comment or autolink can open); backticks and ``[`` are escaped
# so no code span, link or image (``[x](javascript:…)``, ``![](http://tracker)``) opens.
_MARKDOWN = str.maketrans({"\\": "\\\\", "&": "&amp;", "<": "&lt;", ">": "&gt;",
                           "|": "\\|", "`": "\\`", "[": "\\["})
_PLAIN_NAME = re.compile(r"[\w.:/@+=-]+")


def cell(value: object) -> str:
    """Untrusted text safe anywhere in a Markdown line, table cells included: one line
    (whitespace runs, newlines too, become one space), Markdown and HTML specials escaped,
    control characters shown as ``\\x1b``-style escapes."""
    flat = " ".join(str("" if value is None else value).split())
    return show_controls(flat.translate(_MARKDOWN))


def code(value: object) -> str:
    """A name as inline code when it is plain (letters, digits, ``._:/@+=-``); otherwise as
    escaped text, since nothing can be escaped inside a code span."""
    text = str("" if value is None else value)
    return f"`{text}`" if _PLAIN_NAME.fullmatch(text) else cell(text)


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right_from: int = 1) -> str:
    """A Markdown table of already-escaped cells; columns from ``right_from`` on are
    right-aligned (numbers)."""
    sep = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
