"""Reports: the paper's tables and figures from a run folder, as Markdown, a
self-contained HTML page, LaTeX (booktabs), CSV, PNG and SVG."""

from simulplay.report.build import Report, build_report, markdown_report, write_report

__all__ = ["Report", "build_report", "markdown_report", "write_report"]
