"""Generated simulstream metric logs shaped like SeamlessStreamAtt's (see REAL_LOGS facts).

A log opens with a ``model_loading_time`` line; each talk has a metadata line
``{"id", "metadata": {"wav_name"}}`` and then one packet per second of source
(``total_audio_processed`` 1.0, 2.0, … and a last, fractional one), ``computation_time``
about 0.18–0.25 s (the first packet of a talk about 0.5 s), ``deleted_tokens`` empty.
The text is German (``„…“`` quotes, commas before subordinate clauses, ``(Applaus)`` and
``(Gelächter)`` as words) or Chinese, cut into SentencePiece-like pieces (``▁`` starts a
word, word continuations and punctuation attach); pieces flow over packets, so words
continue across packets, sentences end mid-packet, some packets are empty, and some
packets end in a lone ``▁`` piece (then the next word's own ``▁`` makes the log's
detokenized text hold a double space).

Every talk records what the generator meant: its final text (words joined by one space)
and each word's packet, so tests compare importers against the plan, not against
themselves.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

SPM = "\u2581"

DE_WORDS = ("wir ich sie es das die der und aber auch nicht nur noch schon sehr viel mehr heute dann "
            "Gebäude Brücken Straßen Menschen Wasser Stadt Welt Zukunft Energie Forschung Computer "
            "Geschichte Kinder Familie Arbeit Probleme Lösungen Ideen Daten Gehirn Sprache Musik "
            "haben sind wollen können müssen sehen bauen finden denken glauben wissen machen zeigen "
            "großartig schwierig wichtig einfach wunderbar unglaublich interessant möglich natürlich "
            "Verantwortung Entscheidung Gesellschaft Erfahrung Wissenschaft Möglichkeiten Gemeinschaft").split()
DE_CLAUSES = ("dass weil wenn obwohl während").split()
DE_EVENTS = ("(Applaus)", "(Gelächter)", "(Lachen)", "(Video)")
ZH_CHARS = "我们今天的世界城市人们问题知道这个非常重要可以没有因为所以时候研究计算机语言音乐孩子家庭工作"


@dataclass
class GeneratedTalk:
    """One talk of a generated log: what it should import as."""

    talk_id: str
    seconds: float
    text: str  # the final text, words joined by one space
    words: list[str]
    word_packets: list[int]  # 0-based packet index that completed each word
    packets: list[dict] = field(repr=False, default_factory=list)


@dataclass
class GeneratedLog:
    path: Path
    talks: list[GeneratedTalk]

    @property
    def packets(self) -> int:
        return sum(len(t.packets) for t in self.talks)


def german_words(rng: random.Random, n: int, event_every: int = 120) -> list[str]:
    """About ``n`` German words in sentences: commas, „…“ quotes, sentence ends, and events
    (``(Applaus)`` and ``(Gelächter)`` alternately after every ``event_every`` words, others at random)."""
    out: list[str] = []
    events = 0
    while len(out) < n:
        r = rng.random()
        if len(out) >= (events + 1) * event_every:
            out.append(DE_EVENTS[events % 2])
            events += 1
            continue
        if r < 0.03:
            out.append(rng.choice(DE_EVENTS))
            continue
        sentence = [rng.choice(DE_WORDS) for _ in range(rng.randint(4, 12))]
        sentence[0] = sentence[0][:1].upper() + sentence[0][1:]
        if rng.random() < 0.35:
            k = rng.randint(2, len(sentence) - 1)
            sentence[k - 1] += ","
            sentence.insert(k, rng.choice(DE_CLAUSES))
        end = rng.choice(".?!.") if rng.random() < 0.9 else "…"
        if r < 0.18:  # quoted speech: Er sagte: „Nein.“
            sentence = ["Er", "sagte:"] + ["„" + sentence[0]] + sentence[1:]
            sentence[-1] += end + "“"
        else:
            sentence[-1] += end
        out.extend(sentence)
    return out


def chinese_words(rng: random.Random, n: int) -> list[str]:
    """About ``n`` Chinese sentences' worth of characters; one 'word' per sentence."""
    return ["".join(rng.choice(ZH_CHARS) for _ in range(rng.randint(4, 14))) + rng.choice("。？！，")
            for _ in range(max(1, n // 6))]


def pieces_of(word: str, rng: random.Random, language: str) -> list[str]:
    """SentencePiece-like pieces of one word; the first carries ``▁``."""
    if language == "zh":
        body, tail = word[:-1], word[-1]
        cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, len(body) // 2)))
        parts = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)])]
        return [SPM + parts[0], *parts[1:], tail]
    lead = word[0] if word[0] in "„(" else ""
    stem = word[len(lead):]
    trail = ""
    while stem and stem[-1] in ".,?!…:“)":
        trail, stem = stem[-1] + trail, stem[:-1]
    cuts = sorted(rng.sample(range(1, len(stem)), min(len(stem) - 1, rng.choice((0, 0, 1, 2))))) if stem else []
    parts = [stem[a:b] for a, b in zip([0, *cuts], [*cuts, len(stem)])]
    out = ([SPM + lead] + parts) if lead else [SPM + parts[0], *parts[1:]]
    return out + list(trail)


def talk_packets(pieces: list[list[str]], seconds: float, rng: random.Random, *, hold: int = 1,
                 lone_spaces: float = 0.03, empty: float = 0.15, compute: tuple[float, float] = (0.18, 0.25),
                 first_compute: float = 0.5, slow: float = 0.0, slow_compute: float = 1.6,
                 talk: int = 0) -> tuple[list[dict], list[int]]:
    """One-second packets over ``seconds`` of source carrying the pieces of each word in order.

    ``hold`` > 1 emits only every ``hold``-th packet (a batched variant of the same text);
    ``slow`` is the share of packets whose computation takes ``slow_compute`` seconds (the
    processor then falls behind the audio). Returns the packets and, per word, the packet
    that emitted its last piece.
    """
    n_packets = math.ceil(seconds)
    times = [float(k + 1) for k in range(n_packets - 1)] + [round(seconds, 6)]
    flat = [(w, j) for w, ps in enumerate(pieces) for j in range(len(ps))]
    # pieces spread over the packets that speak: the first is silent (the translator lags), the
    # last flushes what is left (so, computation-aware, a talk's last update comes after its end)
    speaking = [k for k in range(1, n_packets - 1) if rng.random() >= empty] + [n_packets - 1]
    per = len(flat) / len(speaking)
    bounds = sorted(min(len(flat), max(0, round(per * (i + 1) + rng.uniform(-per / 2, per / 2))))
                    for i in range(len(speaking)))
    bounds[-1] = len(flat)
    chunks: list[list[tuple[int, int]]] = [[] for _ in range(n_packets)]
    start = 0
    for k, b in zip(speaking, bounds):
        chunks[k], start = flat[start:b], max(start, b)
    if hold > 1:  # batched: text waits for the next multiple of `hold` (or the last packet)
        held: list[list[tuple[int, int]]] = [[] for _ in range(n_packets)]
        for k, c in enumerate(chunks):
            held[min(n_packets - 1, (k // hold + 1) * hold - 1)].extend(c)
        chunks = held
    word_packets = [0] * len(pieces)
    packets = []
    for k, c in enumerate(chunks):
        tokens = [pieces[w][j] for w, j in c]
        for w, _ in c:
            word_packets[w] = k
        ends_word = bool(c) and c[-1][1] == len(pieces[c[-1][0]]) - 1
        if ends_word and k + 1 < n_packets and rng.random() < lone_spaces:
            tokens.append(SPM)  # SeamlessStreamAtt's lone ▁ after a word at a packet's end
        c_s = first_compute + rng.uniform(-0.03, 0.03) if k == 0 else rng.uniform(*compute)
        if slow and rng.random() < slow:
            c_s = slow_compute
        packets.append({"id": talk, "total_audio_processed": times[k], "computation_time": round(c_s, 6),
                        "generated_tokens": tokens, "deleted_tokens": []})
    return packets, word_packets


def generate_talk(talk_id: str, seconds: float, seed: int, *, language: str = "de", words_per_s: float = 2.2,
                  talk: int = 0, **packet_options) -> GeneratedTalk:
    """A talk of ``seconds`` of source; the same ``seed`` gives the same text whatever the packet options."""
    rng = random.Random(seed)
    make = chinese_words if language == "zh" else german_words
    words = make(rng, max(1, int(seconds * words_per_s)))
    pieces = [pieces_of(w, rng, language) for w in words]
    packets, word_packets = talk_packets(pieces, seconds, random.Random(seed + 1), talk=talk, **packet_options)
    return GeneratedTalk(talk_id, seconds, " ".join(words), words, word_packets, packets)


def write_log(path: Path, talks: list[GeneratedTalk], *, loading_s: float = 41.5) -> GeneratedLog:
    """Write the talks one after another, each after its metadata line (ids 0, 1, …)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"model_loading_time": loading_s}) + "\n")
        for k, t in enumerate(talks):
            f.write(json.dumps({"id": k, "metadata": {"wav_name": f"{t.talk_id}.wav"}}) + "\n")
            for p in t.packets:
                f.write(json.dumps({**p, "id": k}, ensure_ascii=False) + "\n")
    return GeneratedLog(Path(path), talks)


def seamless_log(path: Path, seconds: list[float], *, seed: int = 13, **options) -> GeneratedLog:
    """A German log of ``len(seconds)`` talks (``ted_<n>``), SeamlessStreamAtt-shaped."""
    talks = [generate_talk(f"ted_{1096 + 7 * k}", s, seed + 101 * k, talk=k, **options)
             for k, s in enumerate(seconds)]
    return write_log(path, talks)


def excerpt(log: Path, out: Path, until_s: float) -> Path:
    """The log's lines up to ``until_s`` seconds of each talk (what ``jq`` does in the README)."""
    with open(log, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as g:
        for line in f:
            obj = json.loads(line)
            if obj.get("total_audio_processed", 0) <= until_s:
                g.write(line)
    return out


def main() -> None:
    """Write the README's example logs: DIR/A.jsonl (eager) and DIR/F.jsonl (batched, same talks)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("dir", type=Path)
    parser.add_argument("--talks", default="1207.851375,421.5", help="talk durations in seconds, comma-separated")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    seconds = [float(x) for x in args.talks.split(",")]
    for name, hold in (("A", 1), ("F", 3)):
        log = seamless_log(args.dir / f"{name}.jsonl", seconds, hold=hold)
        print(f"wrote {log.path}: {len(log.talks)} talks, {log.packets} packets")


if __name__ == "__main__":
    main()
