"""The tables of a live run folder (``simulplay live``, docs/live.md): their file names, their
columns and the reader of the ones other steps read.

The run writes the live manifest (:data:`LIVE_MANIFEST`, the columns ``synth`` writes, with its
chunk table beside it), the requests table (the output keys, ``seq``, ``text`` and
:data:`REQUEST_COLUMNS`: every recorded time of every request), the virtual player's tables
(:data:`PLAYER`, :data:`TIMELINE`) and the agreement tables; with ``--predict`` the prediction
tables (:data:`PREDICTION`, :data:`PREDICTION_ETA`) and the calibration tables
(:mod:`simulplay.formats.calibration`). :data:`READ_BY_THE_EXPLORER` and the ``*_REQUIRED``
tuples are what a reader needs of each (besides the output keys); :func:`read_live_table`
reads one and checks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.formats.keyed import read_keyed_table

LIVE_MANIFEST = "live.parquet"
REQUESTS, PLAYER, TIMELINE = "requests.parquet", "player.parquet", "timeline.parquet"
AGREEMENT, AGREEMENT_REQUESTS = "agreement.parquet", "agreement_requests.parquet"
PREDICTION, PREDICTION_ETA = "prediction.parquet", "prediction_eta.parquet"

#: The requests table's times and outcome after the keys, ``seq`` and ``text``, in order.
REQUEST_COLUMNS = ("dispatch_s", "due_s", "released_s", "sent_s", "first_byte_s", "first_audible_s",
                   "last_byte_s", "ended_s", "release_late_s", "send_late_s", "service_s", "n_chunks",
                   "n_samples", "sample_rate", "status", "error")
#: What the explorer's live lanes read of each table (besides the output keys).
READ_BY_THE_EXPLORER = {
    TIMELINE: ("release", "seq", "chunk", "arrival_s", "play_s", "end_s", "audio_s", "wait_s"),
    PLAYER: ("release", "source_s", "first_play_s", "end_s", "offset_s", "idle_s", "stall_count",
             "stall_total_s", "stall_longest_s", "complete"),
    REQUESTS: ("seq", "send_late_s"),
}
#: What the report reads of the prediction tables.
PREDICTION_REQUIRED = ("L_live_s", "L_isolated_s")
PREDICTION_ETA_REQUIRED = ("condition", "eta_live_s")
LIVE_ACCEPTED = ("a `simulplay live` run folder (timeline.parquet, player.parquet, requests.parquet) "
                 "or its timeline.parquet")


def read_live_table(path: Path, required: Sequence[str], what: str,
                    accepted: str = LIVE_ACCEPTED) -> tuple[pd.DataFrame, list[Any]]:
    """A live run's table and one signature per row (:func:`~simulplay.formats.keyed.read_keyed_table`)."""
    return read_keyed_table(path, required, what, accepted)
