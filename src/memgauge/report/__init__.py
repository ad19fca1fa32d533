"""Reports of a run's :class:`~memgauge.analysis.Summary`: Markdown and JSON."""

from memgauge.report._compare import render_compare_markdown
from memgauge.report._markdown import render_error_labels, render_json, render_markdown

__all__ = ["render_compare_markdown", "render_error_labels", "render_json", "render_markdown"]
