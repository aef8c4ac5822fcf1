"""Continuing sessions of the block protocol (Truong & Le (2026), Appendix F), for session backends.

Each block (:mod:`.selection`) is synthesized once per feed condition (``immediate`` and a
grouped rule such as ``timer:w=4``) in its own session: fresh state and an empty playback
queue, state kept across feeds.

The feed clock runs in real time. Time zero is the block's first update (``a_first``):
every time in the block tables is in seconds from it. A feeder thread sleeps until each
group's dispatch time and then puts its text (with the separating space) into the
session; the main thread iterates the session's audio and records each chunk's arrival
time since time zero, so readiness includes feed waits, inference and the host loop,
while loading, the voice prompt and the seed reset precede the clock. Chunks play
serially (docs/concepts.md#serial-playback); a session's completion relative to its last original update is
``B = C_last − a_last = D + I − a_last`` (Truong & Le (2026), eq. 8).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulplay.backends.base import SessionBackend
from simulplay.blocks.selection import Block, feed_schedule
from simulplay.core.timebase import from_ns, part_dur_ns, to_ns
from simulplay.grouping import Rule
from simulplay.sim.playback import serial_playback, summarize_playback
from simulplay.store.store import AudioStore


@dataclass
class SessionResult:
    """One (block, condition) session. Times are seconds from the block's first update."""

    block: Block
    condition: str
    feeds: list[dict[str, Any]] = field(default_factory=list)  # dispatch_s, fed_s, text
    chunks: list[tuple[float, int]] = field(default_factory=list)  # (ready_s, n_samples)
    audio: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))
    sample_rate: int = 0
    error: str = ""

    @property
    def fed_text(self) -> str:
        return "".join(f["text"] for f in self.feeds)

    def playback(self) -> dict[str, float]:
        """First playback, D, I, C_last and B (seconds) of the chunks played serially from
        time zero, computed in whole nanoseconds (durations from the sample counts)."""
        ready = np.array([r for r, n in self.chunks if n > 0], dtype=np.float64)
        n = np.array([n for _, n in self.chunks if n > 0], dtype=np.int64)
        if self.error or not len(ready):
            return {"first_play_s": np.nan, "audio_s": np.nan, "idle_s": np.nan, "end_s": np.nan, "b_s": np.nan}
        codes = np.zeros(len(n), np.int64)
        dur = part_dur_ns(codes, n, np.full(len(n), max(self.sample_rate, 1)))
        out = summarize_playback(serial_playback(codes, to_ns(ready), dur), 1)
        end = from_ns(out.end[0])
        return {"first_play_s": from_ns(out.first_play[0]), "audio_s": from_ns(out.audio[0]),
                "idle_s": from_ns(out.idle[0]), "end_s": end, "b_s": end - self.block.a_last_rel}


def run_session(backend: SessionBackend, block: Block, rule: Rule, *, max_wall_s: float = 180.0,
                max_audio_s: float = 240.0) -> SessionResult:
    """Feed one block under one rule into a fresh session on the real-time clock."""
    res = SessionResult(block, rule.canonical(), sample_rate=int(backend.sample_rate))
    schedule = feed_schedule(block, rule)
    session = backend.open_session()  # fresh state, seed reset: before the clock
    stop = threading.Event()
    t0 = time.perf_counter()

    def feeder() -> None:
        for offset, text in schedule:
            if stop.wait(max(0.0, t0 + offset - time.perf_counter())):
                break
            fed = time.perf_counter() - t0
            session.feed(text)
            res.feeds.append({"dispatch_s": offset, "fed_s": fed, "text": text})
        session.finish()

    thread = threading.Thread(target=feeder, name="simulplay-feeder", daemon=True)
    thread.start()
    arrays, audio_n = [], 0
    chunks = session.chunks()
    try:
        for samples in chunks:
            res.chunks.append((time.perf_counter() - t0, int(len(samples))))
            arrays.append(np.asarray(samples, dtype=np.int16))
            audio_n += len(samples)
            elapsed = time.perf_counter() - t0
            if elapsed > max_wall_s or audio_n / max(res.sample_rate, 1) > max_audio_s:
                res.error = (f"SessionLimit: stopped after {elapsed:.1f} s of wall time and "
                             f"{audio_n / res.sample_rate:.1f} s of audio (limits {max_wall_s:g} s, {max_audio_s:g} s)")
                break
    except Exception as e:  # noqa: BLE001 - a failed session is recorded, never dropped
        res.error = f"{type(e).__name__}: {e}".replace("\n", " ")[:500]
    finally:
        stop.set()
        getattr(chunks, "close", lambda: None)()
        thread.join(timeout=max_wall_s)
    res.sample_rate = int(backend.sample_rate)
    res.audio = np.concatenate(arrays) if arrays else np.zeros(0, np.int16)
    if not res.error and res.fed_text != block.stream.joined:
        res.error = "FeedError: the session was fed text that differs from the block's"
    return res


SUMMARY_ORDER = ("talk_id", "system", "block_first_seq", "block_last_seq", "n_words", "block_start_s", "condition",
                 "n_feeds", "n_chunks", "first_play_s", "audio_s", "idle_s", "end_s", "a_last_s", "b_s",
                 "n_samples", "sample_rate", "audio_key", "fed_text_sha256", "error")
PART_ORDER = ("talk_id", "system", "block_first_seq", "condition", "chunk", "ready_s", "audio_s", "n_samples")
FEED_ORDER = ("talk_id", "system", "block_first_seq", "condition", "feed", "dispatch_s", "fed_s", "text")


def run_blocks(blocks: list[Block], backend: SessionBackend, rules: list[Rule], **limits: float) -> list[SessionResult]:
    """Every block under every rule, one fresh session each; the rule order is rotated by
    one position per block so that no condition always runs first."""
    backend.load()
    backend.warmup()
    results = []
    for b, block in enumerate(blocks):
        for k in range(len(rules)):
            results.append(run_session(backend, block, rules[(k + b) % len(rules)], **limits))
    return results


def block_tables(results: list[SessionResult], store: AudioStore | None = None) -> tuple:
    """Summary (one row per session), parts (one per chunk) and feeds (one per feed) tables;
    ``audio_key`` is the samples' content hash (equal keys: identical samples), and the
    audio goes to ``store`` when given."""
    import hashlib

    import pandas as pd

    rows, parts, feeds = [], [], []
    for r in results:
        key_cols = {"talk_id": r.block.talk_id, "system": r.block.system, "block_first_seq": r.block.first}
        audio_key = AudioStore.audio_key(r.audio, r.sample_rate) if len(r.audio) else ""
        if store is not None and audio_key:
            store.put_audio(r.audio, r.sample_rate)
        rows.append({**key_cols, "block_last_seq": r.block.last, "n_words": r.block.n_words,
                     "block_start_s": r.block.a_first, "condition": r.condition, "n_feeds": len(r.feeds),
                     "n_chunks": len(r.chunks), **r.playback(), "a_last_s": r.block.a_last_rel,
                     "n_samples": int(len(r.audio)), "sample_rate": r.sample_rate, "audio_key": audio_key,
                     "fed_text_sha256": hashlib.sha256(r.fed_text.encode()).hexdigest(), "error": r.error})
        rate = max(r.sample_rate, 1)
        parts += [{**key_cols, "condition": r.condition, "chunk": i, "ready_s": t, "audio_s": n / rate,
                   "n_samples": n} for i, (t, n) in enumerate(r.chunks)]
        feeds += [{**key_cols, "condition": r.condition, "feed": i, **f} for i, f in enumerate(r.feeds)]
    return (pd.DataFrame(rows, columns=list(SUMMARY_ORDER)), pd.DataFrame(parts, columns=list(PART_ORDER)),
            pd.DataFrame(feeds, columns=list(FEED_ORDER)))
