"""Reports of a run's :class:`~memgauge.analysis.Summary` (Markdown and JSON) and of many
runs' :class:`~memgauge.analysis.ReportTables` (Markdown, JSON and a self-contained HTML page)."""

from memgauge.report._audit import render_audit_markdown
from memgauge.report._compare import render_compare_markdown
from memgauge.report._html import render_html
from memgauge.report._markdown import render_error_labels, render_json, render_markdown
from memgauge.report._tables_md import render_tables_json, render_tables_markdown, tables_payload

__all__ = [
    "render_audit_markdown",
    "render_compare_markdown",
    "render_error_labels",
    "render_html",
    "render_json",
    "render_markdown",
    "render_tables_json",
    "render_tables_markdown",
    "tables_payload",
]
