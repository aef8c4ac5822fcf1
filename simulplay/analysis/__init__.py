"""Analysis: gaps, η, decomposition, bootstrap, tables and reports."""

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.eta import EtaResult, compute_eta, read_summary

__all__ = ["Bootstrap", "EtaResult", "compute_eta", "read_summary"]
