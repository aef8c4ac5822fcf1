"""The joins a listener hears: each boundary between two consecutive parts (requests, or
chunks under chunk release) of one output's listener audio.

Input: the output's samples (int16, or float at full scale ±1) at ``rate`` Hz, and each played
part's first sample and sample count (:class:`~simulplay.sim.listener_audio.Rendered`).
A sample is **audible** when its magnitude reaches −40 dBFS (0.01 of full scale;
docs/quality.md). At the join between part j and part j+1:

* ``silence_before_s``: part j's samples after its last audible one; ``gap_s``: the samples
  between part j's last sample and part j+1's first (the replay's idle time on the sample
  grid; 0 when the parts touch); ``silence_after_s``: part j+1's samples before its first
  audible one; ``pause_s``: the three together. A part without an audible sample counts
  whole on its side.
* ``level_before_db`` / ``level_after_db``: RMS level (dBFS, full-scale sine at −3.01 dB) of
  the 50 ms of part j that end with its last audible sample and of the 50 ms of part j+1 that
  begin with its first (shorter when the part is); ``step_db`` = after − before: the jump in
  loudness from the end of one part's speech to the start of the next.
* ``discontinuity_db``: the high-frequency burst at the join. The first difference
  ``x[i] − x[i−1]`` (a high-pass filter) has its mean square taken over 5 ms centred on a
  join edge and over the 100 ms on each side of that window; the score is
  ``10·log10((E_join + F) / (E_near + F))`` with floor ``F`` = 10⁻¹⁰ (−100 dB of full
  scale): about 0 for a join that continues the sound smoothly, large for a click or a cut
  mid-waveform. Both edges of a gap (part j's end, part j+1's start) are scored and the larger
  counts.

Times are sample counts divided by the rate. Nothing here reads or writes files.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

AUDIBLE = 10 ** (-40 / 20)
LEVEL_S = 0.050
BURST_S = 0.005
NEAR_S = 0.100
FLOOR = 1e-10
JOIN_COLUMNS = ("join", "at_s", "silence_before_s", "gap_s", "silence_after_s", "pause_s", "level_before_db",
                "level_after_db", "step_db", "discontinuity_db")
SUMMARY_COLUMNS = ("n_joins", "joins_per_min", "joins_per_100_words", "pause_median_s", "step_median_db",
                   "step_p95_db", "discontinuity_median_db", "discontinuity_p95_db")


def full_scale(samples: np.ndarray) -> np.ndarray:
    """Samples as float64 at full scale ±1 (int16 ÷ 32768)."""
    x = np.asarray(samples)
    return x / 32768.0 if x.dtype.kind in "iu" else x.astype(np.float64)


def _audible(part: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.abs(part) >= AUDIBLE)


def level_db(x: np.ndarray) -> float:
    """RMS level in dBFS; NaN for no samples, −inf for digital silence."""
    if len(x) == 0:
        return float("nan")
    with np.errstate(divide="ignore"):
        return float(10 * np.log10(np.mean(np.square(x))))


def burst_db(dx: np.ndarray, edge: int, rate: int) -> float:
    """The discontinuity score at sample ``edge`` of the first difference ``dx`` (module docstring)."""
    h, near = max(1, round(BURST_S * rate / 2)), max(1, round(NEAR_S * rate))
    a, b = max(0, edge - h), min(len(dx), edge + h)
    around = np.concatenate([dx[max(0, a - near):a], dx[b:b + near]])
    e_join = float(np.mean(np.square(dx[a:b]))) if b > a else 0.0
    e_near = float(np.mean(np.square(around))) if len(around) else 0.0
    return float(10 * np.log10((e_join + FLOOR) / (e_near + FLOOR)))


def joins(samples: np.ndarray, starts: np.ndarray, counts: np.ndarray, rate: int) -> pd.DataFrame:
    """One row per join of one output (:data:`JOIN_COLUMNS`, module docstring): ``starts``
    and ``counts`` are the played parts' first samples and sample counts, in play order."""
    x = full_scale(samples)
    dx = np.diff(x, prepend=0.0)
    starts, counts = np.asarray(starts, np.int64), np.asarray(counts, np.int64)
    w = max(1, round(LEVEL_S * rate))
    rows = []
    for j in range(len(starts) - 1):
        end_j, next_j = int(starts[j] + counts[j]), int(starts[j + 1])
        before, after = x[starts[j]:end_j], x[next_j:next_j + counts[j + 1]]
        hb, ha = _audible(before), _audible(after)
        last = int(hb[-1]) + 1 if len(hb) else 0
        first = int(ha[0]) if len(ha) else len(after)
        sil_b, gap, sil_a = len(before) - last, next_j - end_j, first
        lb = level_db(before[max(0, last - w):last])
        la = level_db(after[first:first + w])
        disc = max(burst_db(dx, e, rate) for e in dict.fromkeys((end_j, next_j)))
        rows.append({"join": j + 1, "at_s": next_j / rate, "silence_before_s": sil_b / rate, "gap_s": gap / rate,
                     "silence_after_s": sil_a / rate, "pause_s": (sil_b + gap + sil_a) / rate,
                     "level_before_db": lb, "level_after_db": la, "step_db": la - lb, "discontinuity_db": disc})
    return pd.DataFrame(rows, columns=list(JOIN_COLUMNS))


def summarize(table: pd.DataFrame, audio_s: float, n_words: int) -> dict[str, float]:
    """One output's joins (:data:`SUMMARY_COLUMNS`): joins per minute of its sound
    (``audio_s``, the parts' seconds) and per 100 words of its text, the median pause, the
    median and 95th percentile of the step's size (``|step_db|``) and of the discontinuity."""
    n = len(table)

    def pct(col: str, q: float, absolute: bool = False) -> float:
        v = table[col].to_numpy(np.float64)
        v = v[np.isfinite(v)]
        return float(np.percentile(np.abs(v) if absolute else v, q)) if len(v) else float("nan")

    return {"n_joins": n, "joins_per_min": n / (audio_s / 60) if audio_s > 0 else float("nan"),
            "joins_per_100_words": 100 * n / n_words if n_words else float("nan"),
            "pause_median_s": pct("pause_s", 50), "step_median_db": pct("step_db", 50, True),
            "step_p95_db": pct("step_db", 95, True), "discontinuity_median_db": pct("discontinuity_db", 50),
            "discontinuity_p95_db": pct("discontinuity_db", 95)}
