"""The table formats beside the manifest's (:mod:`simulplay.manifest`): each table's columns,
its reader and its validation in one place, what the step that writes it and every step that
reads it share.

``summary`` (the playback summary, and the file label of a replay variant's tables), ``eta``
(the η, contrast and per-talk tables), ``load`` (the load table of ``simulplay load`` and the
load curve replay reads from it), ``calibration`` (the calibrated slowdown's table of
``simulplay live --predict``).
"""
