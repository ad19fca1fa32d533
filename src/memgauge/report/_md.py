"""Markdown table helpers shared by the report renderers."""

from __future__ import annotations

from collections.abc import Sequence


def cell(value: object) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(value).split()).replace("|", "\\|")


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right_from: int = 1) -> str:
    """A Markdown table; columns from ``right_from`` on are right-aligned (numbers)."""
    sep = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
