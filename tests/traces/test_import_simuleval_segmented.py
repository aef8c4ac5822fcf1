"""Short-form SimulEval logs stitched into long-form streams with a MuST-C segmentation YAML.

The round trip: a long-form stream is generated here, on a 16 kHz sample grid, with its
talks' segmentation; it is cut at the segments into short-form instances that SimulEval
1.1.4's own ``SpeechToTextInstance`` records (delays from the samples it has read,
elapsed from its clock, here a scripted one) and its evaluator's ``write_log`` writes;
the YAML is written in MuST-C's one-flow-mapping-per-line shape. Importing must give back
the stream it was cut from: texts, glue and times to the nanosecond, on both clocks.
"""

import hashlib
import json
import random
import types
from dataclasses import dataclass, field

import numpy as np
import pyarrow.parquet as pq
import pytest
import simuleval.evaluator.instance as simuleval_instance
import soundfile
from simuleval.data.segments import TextSegment
from simuleval.evaluator.evaluator import SentenceLevelEvaluator
from simuleval.evaluator.instance import SpeechToTextInstance

from simulplay.core.errors import InputError
from simulplay.traces import join_texts, read_trace
from simulplay.traces.importers import import_simuleval_segmented

SR = 16000
WORDS = ["Wir", "bauen", "Gebäude,", "Brücken", "und", "Straßen.", "(Applaus)", "„Nein.“", "Das", "ist", "gut"]
CHARS = list("我们建造房子和桥梁。你好世界")
PIECES = ["▁Wir", "▁bau", "en", "▁Geb", "ä", "ude", ",", "▁Br", "ücken", "▁und", "."]


@dataclass
class Talk:
    """A generated long-form talk: segments (offset ms, samples) and its updates."""

    talk: str
    segments: list[tuple[int, int]] = field(default_factory=list)
    # (segment index, source-clock time s, computation-aware time s, text as SimulEval receives it)
    updates: list[tuple[int, float, float, str]] = field(default_factory=list)

    @property
    def end_s(self) -> float:
        offset_ms, n = self.segments[-1]
        return offset_ms / 1000 + n / SR


def content(rng: random.Random, unit: str, first: bool) -> str:
    """What an agent emits in one step: words, characters, or SentencePiece pieces."""
    if unit == "word":
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
    if unit == "char":
        return "".join(rng.choice(CHARS) for _ in range(rng.randint(1, 3)))
    pieces = [rng.choice(PIECES) for _ in range(rng.randint(1, 3))]
    if first:
        pieces[0] = "▁Das"  # a segment starts a word
    return " ".join(pieces)


def long_form(rng: random.Random, talk: str, n_segments: int, unit: str, empty_segment: int) -> Talk:
    """A talk whose updates never go back in time on either clock; one segment has no text
    and each segment's last update comes after its end (a delay beyond its duration)."""
    out = Talk(talk)
    start_ms = rng.randint(0, 3000)
    for k in range(n_segments):
        n = 16 * rng.randint(1500, 4000)  # whole milliseconds, 1.5–4 s
        out.segments.append((start_ms, n))
        offset = start_ms / 1000
        if k != empty_segment:
            steps = sorted(rng.sample(range(1, n // 320), rng.randint(2, 5)))
            steps[-1] = n // 320 + rng.randint(1, 4)  # beyond the segment's end
            wall = 0.0
            for i, step in enumerate(steps):
                wall += rng.randint(0, 24) / 64  # computation time so far, exact in binary
                t_src = offset + step * 320 / SR
                out.updates.append((k, t_src, t_src + wall, content(rng, unit, i == 0)))
        last = max([start_ms / 1000 + n / SR] + [t for _, _, t, _ in out.updates])
        start_ms = int(last * 1000) + rng.randint(1, 1500)
    return out


def expected_stream(talk: Talk, unit: str) -> tuple[list[float], list[float], list[str], list[bool]]:
    """The long-form updates: times on both clocks, texts and glue, worked out from the cut."""
    src, ca, texts, glue = [], [], [], []
    prev = None
    for k, t_src, t_ca, text in talk.updates:
        src.append(t_src)
        ca.append(t_ca)
        if unit == "word":
            texts.append(text)
            glue.append(False)
        elif unit == "char":
            texts.append(text)
            glue.append(prev == k)
        else:
            pieces = text.split()
            texts.append("".join(pieces).replace("▁", " ").strip())
            glue.append(prev == k and not pieces[0].startswith("▁"))
        prev = k
    return src, ca, texts, glue


def cut(talk: Talk, k: int, unit: str, wav: str, index: int, clock) -> SpeechToTextInstance:
    """Segment ``k`` of ``talk`` as SimulEval's instance records it (times relative to the segment)."""
    offset_ms, n = talk.segments[k]
    ins = SpeechToTextInstance.__new__(SpeechToTextInstance)
    ins.index, ins.finish_prediction, ins.reference = index, False, "reference"
    ins.reset()
    ins.latency_unit = unit
    ins.sample_rate_value, ins.sample_list = SR, range(n)
    ins.audio_info = f"{wav}\nsamplerate: {SR} Hz\nchannels: 1"
    ins.start_time = clock.now = 0.0
    for seg, t_src, t_ca, text in talk.updates:
        if seg == k:
            ins.step = round((t_src - offset_ms / 1000) * SR)
            clock.now = t_ca - t_src
            ins.receive_prediction(TextSegment(content=text, finished=False))
    ins.step = max(n, ins.step)
    ins.receive_prediction(TextSegment(content="</s>", finished=True))
    return ins


def write_case(tmp_path, monkeypatch, unit="word", named=True, seed=13):
    """Three talks cut into instances (in shuffled order when named) with their YAML."""
    rng = random.Random(seed)
    talks = [long_form(rng, f"ted_{1096 + 7 * i}", 4 + i, unit, empty_segment=i + 1) for i in range(3)]
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(simuleval_instance, "time", types.SimpleNamespace(time=lambda: clock.now))
    order = [(t, k) for t in talks for k in range(len(t.segments))]
    if named:
        rng.shuffle(order)
    logger = types.SimpleNamespace(output=tmp_path)
    (tmp_path / "instances.log").write_text("")
    for i, (t, k) in enumerate(order):
        wav = f"/data/segments/{t.talk}_{k}.wav" if named else f"/data/utt{i:04d}.wav"
        SentenceLevelEvaluator.write_log(logger, cut(t, k, unit, wav, i, clock))
    yaml_lines = [f"- {{duration: {n / SR:.6f}, offset: {o / 1000:.6f}, rW: 0, uW: 0, speaker_id: spk.{t.talk[4:]}, "
                  f"wav: {t.talk}.wav}}\n" for t in talks for o, n in t.segments]
    (tmp_path / "segments.yaml").write_text("".join(yaml_lines))
    return tmp_path / "instances.log", tmp_path / "segments.yaml", talks


def nanoseconds(seconds) -> list[int]:
    return np.round(np.asarray(seconds, dtype=np.float64) * 1e9).astype(np.int64).tolist()


@pytest.mark.parametrize("clock", ["source", "computation-aware"])
@pytest.mark.parametrize("unit", ["word", "char", "spm"])
def test_short_form_log_round_trips_to_the_long_form_stream(tmp_path, monkeypatch, unit, clock):
    log, yaml_path, talks = write_case(tmp_path, monkeypatch, unit)
    res = import_simuleval_segmented(log, yaml_path, system="A", clock=clock)
    assert res.frame["talk_id"].unique().tolist() == [t.talk for t in talks]
    for t in talks:
        src, ca, texts, glue = expected_stream(t, unit)
        rows = res.frame[res.frame["talk_id"] == t.talk]
        assert rows["text"].tolist() == texts
        assert rows["glue"].tolist() == glue
        assert nanoseconds(rows["time_s"]) == nanoseconds(src if clock == "source" else ca)
        assert rows["source_s"].iloc[0] == pytest.approx(t.end_s, abs=1e-9)
    stats = res.stats.set_index("talk_id")
    assert stats["segments"].tolist() == [4, 5, 6] and stats["empty"].tolist() == [1, 1, 1]
    assert stats["held"].tolist() == [0, 0, 0] and res.signature["held_updates"] == 0
    assert (res.signature["match"], res.signature["unit"], res.signature["clock"]) == ("name", unit, clock)


@pytest.mark.parametrize("clock", ["source", "computation-aware"])
def test_instances_without_an_index_match_by_position(tmp_path, monkeypatch, clock):
    log, yaml_path, talks = write_case(tmp_path, monkeypatch, named=False)
    res = import_simuleval_segmented(log, yaml_path, system="A", clock=clock)
    assert res.signature["match"] == "position"
    for t in talks:
        src, ca, texts, _ = expected_stream(t, "word")
        rows = res.frame[res.frame["talk_id"] == t.talk]
        assert rows["text"].tolist() == texts
        assert nanoseconds(rows["time_s"]) == nanoseconds(src if clock == "source" else ca)


@pytest.mark.slow


def test_cli_writes_the_trace_prints_per_talk_and_signs_the_segmentation(cli, tmp_path, monkeypatch):
    log, yaml_path, talks = write_case(tmp_path, monkeypatch)
    wavs = tmp_path / "wavs"
    wavs.mkdir()
    for i, t in enumerate(talks):
        soundfile.write(wavs / f"{t.talk}.wav", np.zeros(int((t.end_s + 2 + i) * 8000), np.int16), 8000)
    out = tmp_path / "trace.parquet"
    proc = cli("import-simuleval", log, "--segmentation", yaml_path, "--wavs", wavs, "--system", "sysA",
               "--out", out, check=True)
    trace = read_trace(out)
    for t in talks:
        _, _, texts, glue = expected_stream(t, "word")
        rows = trace[trace["talk_id"] == t.talk]
        assert join_texts(rows["text"].tolist(), rows["glue"].tolist()) == join_texts(texts, glue)
        assert rows["source_s"].iloc[0] == soundfile.info(str(wavs / f"{t.talk}.wav")).duration
        words = len(join_texts(texts, glue).split())
        row = next(line for line in proc.stdout.splitlines() if t.talk in line)
        cells = [c.strip() for c in row.strip("│ ").split("│")]
        first, last = min(u[1] for u in t.updates), max(u[1] for u in t.updates)
        assert cells[2:9] == [str(len(t.segments)), "1", str(len(texts)), str(words), f"{first:.3f}",
                              f"{last:.3f}", "0"]
    sig = json.loads(pq.read_schema(out).metadata[b"simulplay"])["signatures"][0]
    assert sig["segmentation"] == "segments.yaml" and sig["source_s_from"] == "wav duration"
    assert sig["segmentation_sha256"] == hashlib.sha256(yaml_path.read_bytes()).hexdigest()[:12]
    assert sig["time_source"] == "offset + delays" and "segmentation_sha256:" in proc.stdout
    cli("validate", out, check=True)


def s2t(name, prediction, delays, elapsed=None, source_length=2000.0):
    """One speech-to-text line in SimulEval 1.1's summarize() shape (times in ms)."""
    return {"index": 0, "prediction": prediction, "delays": delays,
            "elapsed": elapsed if elapsed is not None else list(delays), "prediction_length": len(delays),
            "reference": "r", "source": [f"/seg/{name}.wav", "samplerate: 16000 Hz", "channels: 1"],
            "source_length": source_length}


def entry(offset, duration, wav="ted_1.wav"):
    return f"- {{duration: {duration:.6f}, offset: {offset:.6f}, rW: 0, uW: 0, speaker_id: spk.1, wav: {wav}}}\n"


def write(tmp_path, lines, entries):
    log, yaml_path = tmp_path / "instances.log", tmp_path / "segments.yaml"
    log.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    yaml_path.write_text("".join(entries))
    return log, yaml_path


def test_an_update_earlier_than_the_previous_segments_last_waits_for_it(tmp_path):
    # By hand: segment 0 (0–2 s) emits "eins" at elapsed 1.0 s and "zwei" at 3.5 s; segment 1
    # starts at 2.5 s and emits "drei" at elapsed 0.6 s → 3.1 s, before 3.5 s: held to 3.5 s;
    # "vier" at 2.5 + 1.5 = 4.0 s. On the source clock (delays 0.5 / 2.0 / 0.4 / 1.2 s):
    # 0.5, 2.0, 2.9, 3.7 s, nothing held.
    log, yaml_path = write(tmp_path, [s2t("ted_1_0", "eins zwei", [500.0, 2000.0], [1000.0, 3500.0]),
                                      s2t("ted_1_1", "drei vier", [400.0, 1200.0], [600.0, 1500.0])],
                           [entry(0.0, 2.0), entry(2.5, 2.0)])
    ca = import_simuleval_segmented(log, yaml_path, system="A", clock="computation-aware")
    assert ca.frame["time_s"].tolist() == [1.0, 3.5, 3.5, 4.0]
    assert ca.stats["held"].tolist() == [1] and ca.signature["held_updates"] == 1
    src = import_simuleval_segmented(log, yaml_path, system="A")
    assert src.frame["time_s"].tolist() == pytest.approx([0.5, 2.0, 2.9, 3.7], abs=1e-12)
    assert src.stats["held"].tolist() == [0] and src.stats["source_s"].tolist() == [4.5]


def test_source_length_may_differ_from_the_duration_by_10_ms(tmp_path):
    log, yaml_path = write(tmp_path, [s2t("ted_1_0", "ja", [500.0], source_length=3510.0)], [entry(1.0, 3.5)])
    assert import_simuleval_segmented(log, yaml_path, system="A").frame["time_s"].tolist() == [1.5]


ONE = [entry(0.0, 2.0), entry(2.0, 2.0)]  # two adjacent segments of ted_1.wav
TWO = [s2t("ted_1_0", "eins", [500.0]), s2t("ted_1_1", "zwei", [500.0])]
BAD = {
    "a segment without an instance (the YAML has one more)": (
        TWO, [entry(0.0, 2.0), entry(2.0, 1.0), entry(3.0, 2.0)], (),
        ["segments.yaml, line 3:", "segment 2 of ted_1.wav", "has no instance", "2 instances for 3 segments"]),
    "an instance without a segment (by position)": (
        [s2t("u1", "a", [1.0]), s2t("u2", "b", [1.0])], [entry(0.0, 2.0)], (),
        ["instances.log, line 2:", "instance 2 (u2) has no segment", "2 instances", "1 segments"]),
    "duration mismatch over 10 ms": (
        [TWO[0], s2t("ted_1_1", "zwei", [500.0], source_length=2010.5)], ONE, (),
        ["instances.log, line 2, field 'source_length'", "2010.5 ms differs by 10.500 ms", "segment 1 of ted_1.wav",
         "segments.yaml entry 2, line 2"]),
    "overlapping segments": (
        TWO, [entry(0.0, 2.0), entry(1.999, 2.0)], (),
        ["segments.yaml, line 2, field 'offset'", "segment 1 of ted_1.wav (entry 2) starts at 1.999000 s",
         "before segment 0 (entry 1, line 1) ends at 2.000000 s"]),
    "unknown wav": (
        [TWO[0], s2t("ted_9_0", "zwei", [500.0])], ONE, (),
        ["instances.log, line 2, field 'source'", "ted_9_0: no entry of", "has wav ted_9"]),
    "index beyond the talk's segments": (
        [TWO[0], s2t("ted_1_2", "zwei", [500.0])], ONE, (),
        ["instances.log, line 2, field 'source'", "ted_1_2 names segment 2 of ted_1.wav", "2 segment(s) of it"]),
    "two instances of one segment": (
        [TWO[0], TWO[0]], ONE, (), ["line 2, field 'source'", "already the instance at line 1"]),
    "names with and without an index": (
        [TWO[0], s2t("intro", "zwei", [500.0])], ONE, (),
        ["line 2, field 'source'", "intro carries no segment index", "unlike ted_1_0 at line 1", "--match position"]),
    "a whole talk's wav": ([TWO[0], s2t("ted_1", "zwei", [500.0])], ONE, (),
                           ["line 2, field 'source'", "ted_1 is the whole talk's wav", "without --segmentation"]),
    "broken YAML": (TWO, [entry(0.0, 2.0), "- {duration: 2.0, offset: 2.0\n"], (),
                    ["segments.yaml, line 3:", "broken YAML", "(expected a YAML list of"]),
    "entry without duration": (TWO, [entry(0.0, 2.0), "- {offset: 2.0, wav: ted_1.wav}\n"], (),
                               ["segments.yaml, line 2, field 'duration'", "entry 2: is missing"]),
    "not a list": (TWO, ["duration: 2.0\n"], (), ["segments.yaml, line 1:", "is a dict, not a list of segments"]),
    "no wav for the talk": (TWO, ONE, ("--wavs", "."), ["segments.yaml, line 1, field 'wav'", "no wav at"]),
    "--wavs without --segmentation": (TWO, ONE, ("--wavs", "."), ["--wavs", "used only with --segmentation"]),
    "--as-manifest with --segmentation": (TWO, ONE, ("--as-manifest",), ["--as-manifest", "cannot be combined"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_segmentations_give_one_line_errors_and_write_nothing(cli, tmp_path, case):
    lines, entries, extra, fragments = BAD[case]
    log, yaml_path = write(tmp_path, lines, entries)
    out = tmp_path / ("m.csv" if "--as-manifest" in extra else "trace.parquet")
    seg = () if case.startswith("--wavs") else ("--segmentation", yaml_path)
    extra = tuple(str(tmp_path) if x == "." else x for x in extra)
    proc = cli("import-simuleval", log, *seg, "--system", "A", "--out", out, *extra)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for f in fragments:
        assert f in err[0], err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["instances.log", "segments.yaml"]


def test_a_segment_past_the_end_of_its_wav_is_refused(tmp_path):
    log, yaml_path = write(tmp_path, TWO, ONE)  # segment 1 ends at 4.0 s
    wavs = tmp_path / "wavs"
    wavs.mkdir()
    soundfile.write(wavs / "ted_1.wav", np.zeros(3 * 8000 + 79, np.int16), 8000)  # 3.009875 s
    with pytest.raises(InputError) as e:
        import_simuleval_segmented(log, yaml_path, system="A", wavs=wavs)
    assert str(e.value) == (f"{yaml_path}, line 2, field 'wav': segment 1 of ted_1.wav (entry 2) ends at 4.000000 s, "
                            f"after the 3.009875 s of {wavs / 'ted_1.wav'} (expected segments inside the talk's wav "
                            "(within 10 ms))")
    soundfile.write(wavs / "ted_1.wav", np.zeros(4 * 8000 - 80, np.int16), 8000)  # 3.990 s: 10 ms short, accepted
    res = import_simuleval_segmented(log, yaml_path, system="A", wavs=wavs)
    assert res.frame["source_s"].tolist() == [3.99, 3.99]
