"""The Python API: the pipeline's steps as functions on pandas DataFrames, for notebooks.

Each function is a thin wrapper over the library function the matching command calls
(``simulplay group``, ``synth``, ``replay``, ``eta``, ``sweep``, …), with the same validation
and the same numbers, so a table from here equals the command's output on the same input::

    import simulplay
    trace = simulplay.read_trace("traces.jsonl")
    manifest = simulplay.synthesize(trace, ["immediate", "timer:w=4"], store="store")
    summary = simulplay.replay(manifest)
    table = simulplay.eta(summary, a="eager", f="batched", reference="immediate")

Times are float seconds from source start; durations are seconds; every column ending
in ``_s`` is seconds. A returned table has a fresh ``RangeIndex`` and carries in
``df.attrs``: ``"signature"``, the settings the whole table shares (a dict), and, where
the library signs each row, ``"signatures"``, one dict per row in row order (after
filtering, ``[df.attrs["signatures"][i] for i in df.index]`` are the kept rows'; the
functions that take a table read them that way). Bad input raises
:class:`~simulplay.core.errors.InputError` with one line per problem, as the command line
prints it. A worked example, as notebook cells: ``docs/api-example.md``.
"""

from simulplay.api.analysis import Run, bootstrap, eta, load_run, sweep
from simulplay.api.steps import group, read_trace, replay, synthesize

__all__ = ["Run", "bootstrap", "eta", "group", "load_run", "read_trace", "replay", "sweep", "synthesize"]
