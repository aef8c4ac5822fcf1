"""The report's Listen section: what the audience hears, for the talk of the timeline.

For the talk of Figure 3, in its first panel (backend, realization), each system's output
under the reference and the compared condition is rendered from the primary replay
(request release, measured service) exactly as ``simulplay render`` does
(:mod:`simulplay.sim.listener_audio`), and its first ``listen_s`` seconds from source start (the
same length for every clip: silence after an output ends) are saved as
``audio/<system>__<condition>.mp3``: mono, MP3 with variable bit rate (LAME's quality
setting at libsndfile compression level 0.9, about 32 kbit/s for speech), at the output's
own rate when MP3 has it (8–48 kHz), else resampled to 22,050 Hz with soxr. MP3, rather
than Ogg Vorbis or Opus, because its gapless header gives a browser the exact duration
(Chromium reads libsndfile's Ogg files 256 samples, Opus files 312, long).

The audio needs the store the manifest was synthesized into: a run folder's store (the
path in ``run.json``, else ``RUN_DIR/store``), or ``--store`` for step-by-step tables.
Without it (or without stored audio in the manifest) the section is left out and a note
says why.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf

from simulplay.core.errors import InputError
from simulplay.core.keys import OUTPUT_ID
from simulplay.core.paths import safe_names
from simulplay.grouping import canonical_condition
from simulplay.report.model import AudioClip, ReportAudio, ReportTable, extend
from simulplay.report.order import panels, system_order
from simulplay.report.read_run import RunData
from simulplay.sim.listener_audio import RESAMPLE_QUALITY, Rendered, render_output, resample
from simulplay.sim.part_audio import PartAudio, part_samples

LISTEN_S = 30.0
MP3_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)
MP3_RATE = 22050  # what another rate is resampled to
MP3_LEVEL = 0.9  # libsndfile compression level (0 best quality … 1 smallest)
FORMAT = f"mp3-vbr-{MP3_LEVEL:g}"


def find_store(run: RunData, store: str | Path | None) -> tuple[Path | None, str]:
    """The audio store of the report: ``store`` when given, else a run folder's (the path
    in run.json, else RUN_DIR/store); ``None`` and the reason when there is none."""
    if store is not None:
        return Path(store), ""
    if run.stepwise:
        return None, "no --store was given"
    named = run.settings.store
    for cand in ([Path(named)] if named else []) + [run.folder / "store"]:
        if (cand / "audio").is_dir():
            return cand, ""
    return None, f"the run's audio store ({named or run.folder / 'store'}) is not there"


def listen_section(run: RunData, parts: pd.DataFrame, condition: str, talk: str, store: str | Path | None,
                   listen_s: float = LISTEN_S) -> ReportAudio | None:
    """The Listen section (module docstring): the first ``listen_s`` seconds from source
    start of each output (0 s: no section), or ``None`` with a note added to the run."""
    man = run.manifest.frame
    if not 0 <= listen_s < 1e7:
        raise InputError.at(f"--listen-s {listen_s:g}", "is out of range", accepted="seconds, 0 (no clips) to 10⁷")
    if listen_s == 0:
        return None
    if not {"audio_key", "n_samples", "sample_rate"} <= set(man.columns):
        run.notes.append("Listen: left out, the manifest has no stored audio (it was not synthesized here).")
        return None
    folder, why = find_store(run, store)
    if folder is None:
        run.notes.append(f"Listen: left out, {why}.")
        return None
    from simulplay.store.store import AudioStore

    load = AudioStore.open(folder, create=False, field="--store").load_audio
    ref = canonical_condition(run.reference)
    chosen = _outputs(run, parts, talk, [ref, condition])
    rendered = _render(chosen, parts, man, PartAudio(load, str(run.manifest.path)), str(run.manifest.path))
    return _section(run, chosen, rendered, talk, ref, condition, listen_s)


def _outputs(run: RunData, parts: pd.DataFrame, talk: str, conditions: list[str]) -> pd.DataFrame:
    """Summary rows (with ``_row``) of the talk's outputs in the first panel, systems A, F
    first, the reference before the condition."""
    s = run.summary.frame.assign(_row=np.arange(len(run.summary.frame)))
    keys = panels(parts)
    first = parts.iloc[0] if len(parts) else None
    mask = (s["talk_id"] == talk) & s["condition"].isin(conditions)
    for k in keys:
        mask &= s[k] == first[k]
    s = s[mask.to_numpy()]
    systems = system_order(run, list(s["system"].unique()))
    order = {(sy, c): i for i, (sy, c) in enumerate((sy, c) for sy in systems for c in conditions)}
    return s.assign(_o=[order[(a, b)] for a, b in zip(s["system"], s["condition"])]).sort_values("_o")


def _render(chosen: pd.DataFrame, parts: pd.DataFrame, man: pd.DataFrame, audio: PartAudio,
            source: str) -> list[Rendered]:
    keys = [k for k in OUTPUT_ID if k in parts]
    out = []
    for row in chosen.to_dict("records"):
        mask = np.ones(len(parts), bool)
        for k in keys:
            mask &= (parts[k] == row[k]).to_numpy()
        mine = parts[mask]
        with_samples = part_samples(mine[keys + ["seq", "ready_s", "play_s", "end_s", "audio_s"]], man, source=source)
        out.append(render_output(with_samples, audio, label=f"({', '.join(str(row[k]) for k in keys)})",
                                 source=source))
        audio.clear()
    return out


def _clip(r: Rendered, seconds: float) -> tuple[np.ndarray, int]:
    """The first ``seconds`` of a rendered output (zeros after its end) at an MP3 rate."""
    rate = r.rate if r.rate in MP3_RATES else MP3_RATE
    samples = resample(r.samples, r.rate, rate) if r.rate and rate != r.rate else r.samples
    n = int(round(seconds * rate))
    out = np.zeros(n, np.int16)
    out[:min(n, len(samples))] = samples[:n]
    return out, rate


def encode_mp3(samples: np.ndarray, rate: int) -> bytes:
    """Mono int16 samples as MP3 bytes (variable bit rate, :data:`MP3_LEVEL`)."""
    buf = io.BytesIO()
    sf.write(buf, samples, rate, format="MP3", compression_level=MP3_LEVEL)
    return buf.getvalue()


def _section(run: RunData, chosen: pd.DataFrame, rendered: list[Rendered], talk: str, ref: str, condition: str,
             listen_s: float) -> ReportAudio:
    ends = [r.end / r.rate for r in rendered if r.rate]
    seconds = min(listen_s, max(ends, default=0.0))
    names = safe_names([[str(a), str(b)] for a, b in zip(chosen["system"], chosen["condition"])])
    clips, rows = [], []
    for (_, row), r, name in zip(chosen.iterrows(), rendered, names):
        samples, rate = _clip(r, seconds)
        clip = AudioClip(f"{row['system']} · {row['condition']}", f"audio/{name}.mp3", encode_mp3(samples, rate),
                         len(samples) / rate)
        clips.append(clip)
        heard = int(np.count_nonzero(_sound_mask(r, int(round(seconds * r.rate)))))
        rows.append({"system": row["system"], "condition": row["condition"], "file": clip.file,
                     "clip_s": clip.duration_s, "sample_rate": rate, "audio_in_clip_s": heard / r.rate if r.rate
                     else 0.0, "first_play_s": r.starts[0] / r.rate if r.n_parts else np.nan,
                     "end_s": r.end / r.rate if r.n_parts else np.nan})
    extra = {"table": "listen", "excerpt": f"0-{seconds:g}s", "format": FORMAT,
             "resampler": f"soxr-{RESAMPLE_QUALITY}" if any(r.rate not in MP3_RATES for r in rendered) else None}
    sigs = [extend(run.summary.signatures[i], extra) for i in chosen["_row"]]
    table = ReportTable.signed("listen", f"Listen: talk {talk}", "", pd.DataFrame(rows), sigs,
                               labels={"clip_s": "clip (s)", "audio_in_clip_s": "sound in clip (s)",
                                       "sample_rate": "rate (Hz)", "end_s": "end (s)"})
    caption = (f"What the audience hears of talk {talk} from source start, each system under the reference {ref} "
               f"and under {condition} (the outputs of Figure 3), rendered from the replay as `simulplay render` "
               f"does: silence while the player waits, every part from its playback start. First {seconds:g} s of "
               f"each (silence after an output ends); mono MP3. Seconds from source start.")
    return ReportAudio("listen", f"Listen: talk {talk}", caption, clips, table)


def _sound_mask(r: Rendered, n: int) -> np.ndarray:
    """Which of the first ``n`` samples of a rendered output belong to a part."""
    mask = np.zeros(max(n, 0), bool)
    for start, count in zip(r.starts.tolist(), r.counts.tolist()):
        mask[start:start + count] = True
    return mask
