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
from simulplay.report.explore.variants import Computed

__all__ = ["Computed", "Explorer", "build_explorer", "default_out", "explore_run", "explorer_files", "write_explorer"]
