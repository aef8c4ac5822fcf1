"""The vocabulary of keys that tables, signatures and panels share, defined once.

* an **output** is one talk's stream from one translator under one grouping rule
  (:data:`OUTPUT_KEYS`); in a manifest or summary it also carries its backend and
  realization (:data:`OUTPUT_ID`);
* a **panel** is what an η table analyses on its own and never pools: one backend, one
  synthesis realization and, after edge trimming, one VAD threshold (:data:`PANEL_KEYS`);
  a run's manifest and summary hold the first two (:data:`RUN_PANEL_KEYS`);
* a row's **signature** records everything that shaped its number; the keys in
  :data:`PER_ROW_SIGNATURE_KEYS` may differ between the rows of one panel (they are table
  columns too), every other key must agree, and :data:`PER_ROW_DISPLAY` are the ones a
  table's footnote shows as "(per row)".
"""

from __future__ import annotations

from collections.abc import Container, Iterable

OUTPUT_KEYS = ("talk_id", "system", "condition")
RUN_PANEL_KEYS = ("backend", "realization")
PANEL_KEYS = (*RUN_PANEL_KEYS, "threshold")
OUTPUT_ID = (*OUTPUT_KEYS, *RUN_PANEL_KEYS)
#: ``plugin`` names the plugin of a row's own rule too (docs/plugins.md), so it may differ as the rule does;
#: ``oracle`` marks a row whose condition follows a non-causal commit policy (``final``).
PER_ROW_SIGNATURE_KEYS = ("rule", "table", "excluded", "plugin", "loop", "oracle", *PANEL_KEYS)
PER_ROW_DISPLAY = ("rule", "reference", "loop", *PANEL_KEYS)


def present(keys: Iterable[str], table: Container[str]) -> list[str]:
    """The ``keys`` a table (anything ``in`` answers for: a DataFrame, a dict, a set of
    columns) has, in the order given."""
    return [k for k in keys if k in table]
