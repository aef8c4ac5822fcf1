"""Regenerate the bundled re-translating translator: `python -m traces.revising [OUT]` from
the repository root.

A simulated re-translating translator (a sliding-window re-translation processor, as in
simulstream) reads the same three talks in one-second source packets and, at every
packet, re-translates: its new hypothesis is compared with the SentencePiece pieces it
emitted so far, and the packet carries ``deleted_tokens`` (the old pieces after their
longest common prefix) and ``generated_tokens`` (the new pieces after it), as simulstream
logs them. About a fifth of the packets revise, each in one of four ways that real
re-translation logs show:

* a wrong tail: one to three speculative words, replaced by the right words later;
* a final ``.`` retracted when the sentence goes on (``city.`` → ``city, and``);
* a degenerate repetition loop (``▁the ▁the ▁the …``), deleted deep with the two words
  it hid;
* everything in the window (the last eight packets' pieces) retracted and re-emitted when
  the window match fails.

The log is written to a temporary file and imported as simulplay imports any simulstream
log (``import-simulstream --retractions keep``): each packet that changes the output
becomes an update whose ``retract`` holds the characters its deleted pieces held. The
final hypothesis of every talk is its text word for word. The output is deterministic
(seeded) and written to ``traces/revising_traces.jsonl`` (or to ``OUT``), which
``simulplay demo --revisions`` reads beside the sample traces.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import tempfile
from pathlib import Path

from .generate import SOURCE_S
from .texts import TALKS

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "revising_traces.jsonl"
SYSTEM = "retranslating"
SPM = "\u2581"
KINDS = ("tail", "period", "loop", "everything")
GUESSES = "the a new very many city people time then way first more".split()
LAG_S = 2.0  # a word is translated this long after it is heard


def pieces_of(word: str, rng: random.Random) -> list[str]:
    """SentencePiece-like pieces of one word: the first carries ``▁``, punctuation is its own piece."""
    stem, trail = word, ""
    while stem and not stem[-1].isalnum():
        trail, stem = stem[-1] + trail, stem[:-1]
    cuts = sorted(rng.sample(range(1, len(stem)), min(len(stem) - 1, rng.choice((0, 0, 1))))) if len(stem) > 3 else []
    parts = [stem[a:b] for a, b in zip([0, *cuts], [*cuts, len(stem)])]
    return [SPM + parts[0], *parts[1:], *trail]



def talk_packets(words: list[str], source_s: float, rng: random.Random, *, rate: float = 0.2,
                 window: int = 8) -> list[dict]:
    """The packets of one talk (``id`` 0): one per second of source, the last at its end."""
    pieces = [pieces_of(w, rng) for w in words]
    n_packets = math.ceil(source_s)
    times = [float(k + 1) for k in range(n_packets - 1)] + [round(source_s, 6)]
    heard = [0.8 + (source_s - 2.3) * i / max(1, len(words) - 1) for i in range(len(words))]
    emitted: list[str] = []
    starts: list[int] = []  # per packet: how many pieces were emitted before it
    forced = list(KINDS)
    packets = []
    for k, t in enumerate(times):
        starts.append(len(emitted))
        last = k == n_packets - 1
        done = len(words) if last else sum(h + LAG_S <= t for h in heard)
        target = [p for ps in pieces[:done] for p in ps]
        kind = None
        if not last and done > 2 and rng.random() < rate:
            kind = forced.pop(0) if forced else rng.choices(KINDS, weights=(0.55, 0.25, 0.1, 0.1))[0]
        if kind == "tail":
            for _ in range(rng.randint(1, 3)):
                target += pieces_of(rng.choice(GUESSES), rng)
        elif kind == "period" and target[-1][-1].isalnum():
            target += ["."]
        elif kind == "loop":  # stuck on a word: the next packet deletes the loop and re-emits what it hid
            loop = [SPM + rng.choice(("the", "and", "we"))]
            target = [p for ps in pieces[:done - 2] for p in ps] + loop * rng.randint(3, 6)
        keep = len(os.path.commonprefix([emitted, target]))  # tokens in common, from the start
        if kind == "everything":  # the window's pieces (those its packets emitted) all go
            keep = min(keep, starts[max(0, k - window)])
        compute = 0.5 if k == 0 else rng.uniform(0.18, 0.25)
        packets.append({"id": 0, "total_audio_processed": t, "computation_time": round(compute, 6),
                        "generated_tokens": target[keep:], "deleted_tokens": emitted[keep:]})
        emitted = target
    return packets


def write_log(path: Path, talks: dict[str, list[dict]]) -> Path:
    """A simulstream log of the talks, one after another, each after its metadata line."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"model_loading_time": 12.5}) + "\n")
        for k, (talk, packets) in enumerate(talks.items()):
            f.write(json.dumps({"id": k, "metadata": {"wav_name": f"{talk}.wav"}}) + "\n")
            for p in packets:
                f.write(json.dumps({**p, "id": k}, ensure_ascii=False) + "\n")
    return path


def main(out: Path = DEFAULT_OUT) -> None:
    from simulplay.traces import write_trace
    from simulplay.traces.importers.simulstream import import_simulstream

    rng = random.Random(20261204)
    talks = {talk: talk_packets(text.split(), SOURCE_S[talk], rng) for talk, text in TALKS.items()}
    with tempfile.TemporaryDirectory() as tmp:
        res = import_simulstream(write_log(Path(tmp) / "retranslating.jsonl", talks), system=SYSTEM)
    write_trace(res.frame, out, res.signature)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
