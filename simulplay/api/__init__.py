"""The Python API: the pipeline's steps as functions on pandas DataFrames, for notebooks.

Each function is a thin wrapper over the library function the matching command calls
(``simulplay group``, ``synth``, ``replay``, ``eta``, ``sweep``, …), with the same validation
and the same numbers, so a table from here equals the command's output on the same input::

    import simulplay
    trace = simulplay.read_trace("traces.jsonl")
    manifest = simulplay.synthesize(trace, ["immediate", "timer:w=4"], store="store")
    summary = simulplay.replay(manifest)
    table = simulplay.eta(summary, a="eager", f="batched", reference="immediate")

Each function returns a frozen result object (``simulplay.api.results``) that holds
its tables as DataFrames with their signatures beside them, as jiwer's ``WordOutput``
holds counts next to rates: ``eta`` an ``EtaOutput`` (η, per talk, contrasts,
interaction), ``replay`` a ``ReplayOutput`` (summary and parts), ``synthesize`` a
``ManifestOutput`` (the manifest, counts, clock check, files), ``sweep`` a
``SweepOutput`` (sweep table, self-check, models), ``load_run`` a ``Run``, and
``read_trace``, ``group`` and ``bootstrap`` a ``SignedTable``. ``.to_frame()`` gives
the main table. Nothing rides in ``DataFrame.attrs``.

Times are float seconds from source start; durations are seconds; every column ending
in ``_s`` is seconds. A table has a fresh ``RangeIndex``; ``signatures`` hold one dict
per row in row order where the library signs each row, and ``signature`` the settings
the whole table shares. A result passed to the next step brings its signatures along
(``result.rows(mask)`` filters rows and signatures together); a plain DataFrame is taken
as unsigned. Bad input raises ``simulplay.core.errors.InputError`` with one line per
problem, as the command line prints it. A worked example, as notebook cells:
``docs/api-example.md``.
"""

from simulplay.api.analysis import bootstrap, eta
from simulplay.api.results import EtaOutput, ManifestOutput, ReplayOutput, SignedTable, SweepOutput
from simulplay.api.runs import Run, load_run, sweep
from simulplay.api.steps import group, read_trace, replay, synthesize

__all__ = ["EtaOutput", "ManifestOutput", "ReplayOutput", "Run", "SignedTable", "SweepOutput", "bootstrap", "eta",
           "group", "load_run", "read_trace", "replay", "sweep", "synthesize"]
