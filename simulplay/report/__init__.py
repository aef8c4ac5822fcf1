"""Reports: the tables and figures of Truong & Le (2026) from a run folder, as Markdown, a
self-contained HTML page, LaTeX (booktabs), CSV, PNG and SVG. Table and figure numbers
(Table 2, Figure 3, …) are that paper's; the full reference is in :mod:`simulplay`.

The names below load :mod:`simulplay.report.build` (and matplotlib) when first used, so that
importing a light module of this package (the run record, ``report.record``) does not: a
rerun whose report is reused never imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simulplay.report.build import Report, build_report, markdown_report, write_report

__all__ = ["Report", "build_report", "markdown_report", "write_report"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from simulplay.report import build

        return getattr(build, name)
    raise AttributeError(f"module 'simulplay.report' has no attribute {name!r}")
