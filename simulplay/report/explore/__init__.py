"""The explorer: every talk, system, condition and replay variant of a run in one page
that opens from disk (``simulplay explore``)."""

from simulplay.report.explore.build import (
    Explorer,
    build_explorer,
    default_out,
    explore_run,
    explorer_files,
    write_explorer,
)

__all__ = ["Explorer", "build_explorer", "default_out", "explore_run", "explorer_files", "write_explorer"]
