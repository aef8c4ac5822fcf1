"""Analysis of replayed runs: completion gaps and η with the paired talk bootstrap
(gaps, eta, bootstrap, paired, table_bootstrap, small_panels), synthesis noise and
realizations (noise, realizations, interaction), edge silence (edges, edge_replay),
latency metrics (latency, latency_table, textlatency), player metrics (player,
player_table), content and word timing (content, alignment, wordtiming), and modelled
sweeps (sweep, sweep_check)."""

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.eta import EtaResult, compute_eta
from simulplay.formats.summary import read_summary

__all__ = ["Bootstrap", "EtaResult", "compute_eta", "read_summary"]
