"""Listener audio on the source clock: a replay's parts placed on the sample grid.

What the audience hears from source start is silence until the first part plays and
during every idle gap, and each part's samples from its playback start ``p_j``. The
replay's times are exact nanoseconds (:mod:`simulplay.core.timebase`); on the grid of
``sr`` Hz, sample ``k`` sounds at ``k/sr`` s. Placement, in exact integers:

* a part that starts exactly when the previous played part ends (no silence between them
  in the replay) starts at the sample after that part's last one: parts that touch in the
  replay touch here;
* the first part, and a part after idle, starts at the sample nearest ``p_j``:
  ``floor(p_j·sr/10⁹ + 1/2)`` (a tie goes up), and never before the previous part's end;
* the file ends with the last part's last sample.

So every part's first sample is the sample nearest its playback start, and the file's
length is ``end_s × sr`` to the nearest sample, up to the drift of the replay's durations:
a duration in whole nanoseconds is within 1 ns of ``n/sr`` (running totals,
:func:`~simulplay.core.timebase.part_dur_ns`), which moves a position by at most
``sr/10⁹`` of a sample (2.2·10⁻⁵ at 22,050 Hz). Only a playback start within that of a
half-sample boundary can land one sample from the nearest one. Nothing here writes files.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.timebase import NS_PER_S, to_ns
from simulplay.sim.part_audio import PartAudio


def sample_index(t_ns: np.ndarray | int, rate: int) -> np.ndarray:
    """The sample nearest to ``t_ns`` nanoseconds (≥ 0) at ``rate`` Hz, a tie going up:
    ``floor(t·rate/10⁹ + 1/2)``, in exact int64 arithmetic."""
    t = np.asarray(t_ns, dtype=np.int64)
    whole_s, rest = np.divmod(t, NS_PER_S)  # rest·rate < 10⁹·rate: no overflow for rate < 4.6·10⁹
    return whole_s * rate + (2 * rest * rate + NS_PER_S) // (2 * NS_PER_S)


def part_starts(play_ns: np.ndarray, end_ns: np.ndarray, n_samples: np.ndarray, rate: int) -> np.ndarray:
    """First sample of each of one output's played parts (in play order), by the rule of
    the module docstring: ``play_ns`` and ``end_ns`` (each part's playback start and end)
    in ns, ``n_samples`` per part, ``rate`` in Hz."""
    nearest = sample_index(play_ns, rate).tolist()
    play, ends, counts = np.asarray(play_ns).tolist(), np.asarray(end_ns).tolist(), np.asarray(n_samples).tolist()
    starts = np.empty(len(nearest), np.int64)
    end_sample, end_time = 0, 0
    for j in range(len(nearest)):
        starts[j] = end_sample if play[j] == end_time else max(nearest[j], end_sample)
        end_sample, end_time = int(starts[j]) + int(counts[j]), ends[j]
    return starts


@dataclass(frozen=True)
class Rendered:
    """One output on the sample grid: ``samples`` (int16, mono, from source start) at
    ``rate`` Hz, and each played part's first sample (``starts``) and sample count."""

    samples: np.ndarray
    rate: int
    starts: np.ndarray
    counts: np.ndarray

    @property
    def n_parts(self) -> int:
        """Parts played (with samples)."""
        return len(self.starts)

    @property
    def audio(self) -> int:
        """Samples of sound (the parts' samples)."""
        return int(self.counts.sum())

    @property
    def end(self) -> int:
        """The sample after the last part's last one (0 without audio): the file's length."""
        return int(self.starts[-1] + self.counts[-1]) if self.n_parts else 0

    @property
    def idle(self) -> int:
        """Samples of silence before the last part ends (the initial wait included)."""
        return self.end - self.audio


def output_rate(parts: pd.DataFrame, label: str, source: str) -> int:
    """The one sample rate (Hz) of an output's parts with samples (0 when none has any)."""
    sounding = parts["sample_stop"].to_numpy() > parts["sample_start"].to_numpy()
    rates = sorted(set(parts["sample_rate"].to_numpy()[sounding].tolist()))
    if len(rates) > 1:
        raise InputError.at(source, f"output {label} mixes sample rates {', '.join(map(str, rates))}",
                            field="sample_rate", accepted="one sample rate per output")
    return int(rates[0]) if rates else 0


def render_output(parts: pd.DataFrame, audio: PartAudio, *, label: str = "", source: str = "manifest") -> Rendered:
    """Render one output from its rows of :func:`~simulplay.sim.part_audio.part_samples`
    (a replay's parts with ``play_s``, ``end_s`` and the sample columns, in play order;
    parts that did not play are skipped). ``label`` names the output in errors."""
    played = parts[parts["play_s"].notna().to_numpy() & (parts["sample_stop"] > parts["sample_start"]).to_numpy()]
    rate = output_rate(played, label, source)
    counts = (played["sample_stop"] - played["sample_start"]).to_numpy(np.int64)
    if len(played) == 0:
        return Rendered(np.zeros(0, np.int16), rate, np.zeros(0, np.int64), counts)
    starts = part_starts(to_ns(played["play_s"].to_numpy(float)), to_ns(played["end_s"].to_numpy(float)),
                         counts, rate)
    out = np.zeros(int(starts[-1] + counts[-1]), np.int16)
    for start, row in zip(starts.tolist(), played.itertuples(index=False)):
        piece = audio.part(row)
        out[start:start + len(piece)] = piece
    return Rendered(out, rate, starts, counts)


#: soxr's quality for every resampling of rendered audio.
RESAMPLE_QUALITY = "HQ"


def to_int16(x: np.ndarray) -> np.ndarray:
    """Float samples (full scale ±1, as soundfile reads int16 ÷ 32768) as int16: ×32768,
    rounded to the nearest integer, clipped to −32768..32767."""
    return np.clip(np.rint(np.asarray(x, np.float64) * 32768.0), -32768, 32767).astype(np.int16)


def resample(samples: np.ndarray, rate: int, to_rate: int) -> np.ndarray:
    """Mono samples at ``rate`` Hz (int16, or float at full scale ±1) as int16 at
    ``to_rate`` Hz (soxr, quality HQ); int16 at an equal rate comes back unchanged."""
    x = np.asarray(samples)
    if x.dtype.kind in "iu":
        if int(rate) == int(to_rate):
            return x.astype(np.int16, copy=False)
        x = x / 32768.0
    if int(rate) == int(to_rate) or len(x) == 0:
        return to_int16(x)
    import soxr

    return to_int16(soxr.resample(np.asarray(x, np.float64), int(rate), int(to_rate), quality=RESAMPLE_QUALITY))
