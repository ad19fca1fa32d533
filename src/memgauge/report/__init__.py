"""Reports of a run's :class:`~memgauge.analysis.Summary` (Markdown and JSON) and of many
runs' :class:`~memgauge.analysis.ReportTables` (Markdown, JSON and a self-contained HTML page).

Names are imported on first use: the CLI's error path needs only :func:`show_controls`, and
the renderers pull in the analysis package (~250 ms).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from memgauge.report._terminal import show_controls

if TYPE_CHECKING:
    from memgauge.report._audit import render_audit_markdown
    from memgauge.report._compare import render_compare_markdown
    from memgauge.report._html import render_html
    from memgauge.report._markdown import (
        render_error_labels,
        render_games_markdown,
        render_json,
        render_markdown,
    )
    from memgauge.report._tables_md import (
        render_tables_json,
        render_tables_markdown,
        tables_payload,
    )

_WHERE = {
    "render_audit_markdown": "_audit",
    "render_compare_markdown": "_compare",
    "render_error_labels": "_markdown",
    "render_games_markdown": "_markdown",
    "render_html": "_html",
    "render_json": "_markdown",
    "render_markdown": "_markdown",
    "render_tables_json": "_tables_md",
    "render_tables_markdown": "_tables_md",
    "tables_payload": "_tables_md",
}

__all__ = [
    "render_audit_markdown",
    "render_compare_markdown",
    "render_error_labels",
    "render_games_markdown",
    "render_html",
    "render_json",
    "render_markdown",
    "render_tables_json",
    "render_tables_markdown",
    "show_controls",
    "tables_payload",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
