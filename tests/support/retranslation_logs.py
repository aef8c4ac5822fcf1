"""Generated simulstream logs of a re-translating translator (sliding-window re-translation).

Each one-second packet re-translates: the processor's new hypothesis is compared with the
pieces it emitted so far, and the packet carries ``deleted_tokens`` (the old pieces after
their longest common prefix, in order) and ``generated_tokens`` (the new pieces after it),
as simulstream's ``sliding_window_retranslation`` processors log them. The hypotheses are
German SentencePiece pieces (the SeamlessStreamAtt shape of ``simulstream_logs``) and hold
the revisions real re-translation logs show:

* a wrong tail (one to three speculative words) replaced by the right words later;
* a final ``.`` retracted when the sentence goes on (``gut.`` → ``gut, weil``);
* a degenerate repetition loop (``▁die ▁die ▁die …``) deleted deep, words before it included;
* everything in the window (the last ``window`` packets' pieces) retracted and re-emitted
  when the window match fails.

Every talk records the final text it must import as (words joined by one space).
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.simulstream_logs import DE_WORDS, SPM, german_words, pieces_of, write_log

KINDS = ("tail", "period", "loop", "everything")


@dataclass
class RevisingTalk:
    talk_id: str
    seconds: float
    text: str  # the final hypothesis, words joined by one space
    packets: list[dict] = field(repr=False, default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)  # how many revisions of each kind



def revising_talk(talk_id: str, seconds: float, seed: int, *, words_per_s: float = 2.2, rate: float = 0.2,
                  talk: int = 0, loop_words: int = 8, window: int = 8) -> RevisingTalk:
    """A talk of ``seconds`` of source whose packets revise with probability ``rate`` each
    (kinds drawn from :data:`KINDS`, the first four packets that revise taking each kind once)."""
    rng = random.Random(seed)
    words = german_words(rng, max(4, int(seconds * words_per_s)))
    pieces = [pieces_of(w, rng, "de") for w in words]
    n_packets = max(2, math.ceil(seconds))
    times = [float(k + 1) for k in range(n_packets - 1)] + [round(seconds, 6)]
    out = RevisingTalk(talk_id, seconds, " ".join(words), kinds={k: 0 for k in KINDS})
    emitted: list[str] = []
    starts: list[int] = []  # per packet: how many pieces were emitted before it
    forced = list(KINDS)
    for k in range(n_packets):
        starts.append(len(emitted))
        last = k == n_packets - 1
        done = len(words) if last else min(len(words), round(len(words) * (k + 1) / n_packets))
        target = [p for ps in pieces[:done] for p in ps]
        kind = None
        if not last and done and rng.random() < rate:
            kind = forced.pop(0) if forced else rng.choices(KINDS, weights=(0.55, 0.25, 0.1, 0.1))[0]
        if kind == "tail":
            for _ in range(rng.randint(1, 3)):
                target += pieces_of(rng.choice(DE_WORDS), rng, "de")
        elif kind == "period" and target[-1][-1].isalnum():
            target += ["."]
        elif kind == "loop":  # stuck on a word: the next packet deletes the loop and re-emits what it hid
            loop = pieces_of(rng.choice(("die", "und", "wir")), rng, "de")
            target = [p for ps in pieces[:max(0, done - 2)] for p in ps] + loop * rng.randint(3, loop_words)
        keep = len(os.path.commonprefix([emitted, target]))  # tokens in common, from the start
        if kind == "everything":  # the window's pieces (those emitted by its packets) all go
            keep = min(keep, starts[max(0, k - window)])
        deleted, generated = emitted[keep:], target[keep:]
        if kind == "period" and target[-1] != ".":
            kind = None
        if kind and (deleted or kind != "everything"):
            out.kinds[kind] += 1
        compute = 0.5 if k == 0 else rng.uniform(0.18, 0.25)
        out.packets.append({"id": talk, "total_audio_processed": times[k], "computation_time": round(compute, 6),
                            "generated_tokens": generated, "deleted_tokens": deleted})
        emitted = target
    return out


def write_revising_log(path: Path, talks: list[RevisingTalk], *, loading_s: float = 41.5) -> Path:
    """The talks one after another, each after its metadata line (ids 0, 1, …), written as
    the append-only logs are."""
    return write_log(path, talks, loading_s=loading_s).path


def revising_log(path: Path, seconds: list[float], *, seed: int = 29, **options) -> list[RevisingTalk]:
    """A German re-translation log of ``len(seconds)`` talks (``ted_<n>``); returns the talks."""
    talks = [revising_talk(f"ted_{2000 + 7 * k}", s, seed + 101 * k, talk=k, **options)
             for k, s in enumerate(seconds)]
    write_revising_log(path, talks)
    return talks


__all__ = ["KINDS", "SPM", "RevisingTalk", "revising_log", "revising_talk", "write_revising_log"]
