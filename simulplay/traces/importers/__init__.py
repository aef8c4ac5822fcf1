"""Importers: translator logs (SimulEval instances.log, simulstream JSONL) into traces.

Each importer returns an :class:`ImportResult` (the table, per-stream statistics and the
signature) after checking that every stream's joined updates equal the log's full
detokenized output; nothing is returned from an invalid log. One module per log format
(:mod:`.simuleval`, :mod:`.segmented` with :mod:`.segmentation` and :mod:`.wavinfo`,
:mod:`.simulstream`), and their helpers by job: :mod:`.jsonlines` (reading a log),
:mod:`.logfields` (a line's checked fields), :mod:`.detokenize` (units into glued
updates) and :mod:`.assembly` (the assembled-text check, statistics, writing).
"""

from simulplay.traces.importers.assembly import CLOCKS, ImportResult, write_import
from simulplay.traces.importers.segmented import import_simuleval_segmented
from simulplay.traces.importers.simuleval import import_simuleval
from simulplay.traces.importers.simulstream import RETRACTIONS, import_simulstream

__all__ = ["CLOCKS", "RETRACTIONS", "ImportResult", "import_simuleval", "import_simuleval_segmented",
           "import_simulstream", "write_import"]
