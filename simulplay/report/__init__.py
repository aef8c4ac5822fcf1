"""Reports: the tables and figures of Truong & Le (2026) from a run folder, as Markdown, a
self-contained HTML page, LaTeX (booktabs), CSV, PNG and SVG. Table and figure numbers
(Table 2, Figure 3, …) are that paper's; the full reference is in :mod:`simulplay`."""

from simulplay.report.build import Report, build_report, markdown_report, write_report

__all__ = ["Report", "build_report", "markdown_report", "write_report"]
