"""The table formats beside the manifest's (:mod:`simulplay.manifest`): each table's columns,
its reader and its validation in one place, what the step that writes it and every step that
reads it share.

``summary`` (the playback summary, and the file label of a replay variant's tables), ``eta``
(the η, contrast and per-talk tables), ``load`` (the load table of ``simulplay load`` and the
load curve replay reads from it), ``calibration`` (the calibrated slowdown's table of
``simulplay live --predict``), ``service_spec`` (the tables a shared-servers text names, read
as canonical points before :mod:`simulplay.sim` parses it), ``live`` (a live run folder's
tables: file names, the requests table's columns, what readers need of each), ``keyed`` (the
reader of a table of output rows: keys and needed columns checked, one signature per row),
``kinds`` (every kind of table simulplay reads back: its name, its file in a run folder, the
typed reader of Parquet and CSV).
"""
