"""Import simulstream metric logs (the JSON lines its server writes and
``simulstream/metrics/readers.py`` reads).

Lines: ``{"model_loading_time"}`` (ignored); per talk ``{"id", "metadata": {"wav_name"}}``;
then per processed source packet ``{"id", "total_audio_processed" (s), "computation_time"
(s), "generated_tokens", "deleted_tokens"}``. Talks may interleave; an ``id`` may be
reused by a later talk (its new metadata line starts the new talk, as in simulstream).

Each packet that generated text becomes one update; its tokens are detokenized (``spm``:
``▁`` starts a word, a piece without it attaches; ``word``/``char``: SimulEval's
conventions) and ``glue`` is set when its first piece continues the previous text.
Whitespace is one word boundary however it is written (a lone ``▁`` piece, as
SeamlessStreamAtt emits, ``▁▁``, spaces inside a piece): a packet of nothing but
whitespace makes no update and only keeps its neighbours apart. The joined updates must
equal simulstream's own detokenized output with whitespace runs squeezed to one space;
otherwise the error names the packet's line where the two part.

* Source clock: a packet's text is available at ``total_audio_processed``.
* Computation-aware clock: packet k starts at the later of its arrival
  (``total_audio_processed``) and the end of packet k−1 (of the same talk), and its text
  is available ``computation_time`` later. (simulstream's own computation-aware delay
  is ``total_audio_processed + computation_time``, without the queue.)
* Retractions (``deleted_tokens``, from re-translation policies): ``keep`` (default)
  writes them as the trace's ``retract`` (the characters the deleted tokens held, through
  the same detokenization as the text), a revising stream that a commit policy turns into
  what is spoken; ``refuse`` stops at the first one; ``final`` keeps only tokens never
  deleted later, each available when it was last emitted: an offline upper bound,
  recorded in the signature. A packet may only delete the last tokens emitted.

``talk_id`` is the wav name's stem; ``source_s`` is the wav's duration (``wavs``) or the
talk's last ``total_audio_processed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.signature import base_signature
from simulplay.traces.importers.assembly import CLOCKS, ImportResult, Origins, ParsedStream, check_unique_talks, finish
from simulplay.traces.importers.detokenize import SPM_SPACE, UNITS, Shown, assemble, detokenize, group_runs, segments
from simulplay.traces.importers.jsonlines import log_fingerprint, read_json_lines, refuse_other_log, talk_id_from_path
from simulplay.traces.importers.logfields import Fields, check_choice, check_system, shown
from simulplay.traces.importers.wavinfo import wav_frames

RETRACTIONS = ("keep", "refuse", "final")
LINE_KINDS = ('{"model_loading_time"}, {"id", "metadata": {"wav_name"}} or a packet {"id", '
              '"total_audio_processed", "computation_time", "generated_tokens", "deleted_tokens"}')
TOKENS = "a list of token strings"


@dataclass
class _Packet:
    line: int
    arrival_s: float
    compute_s: float
    generated: list[str]
    deleted: list[str]


@dataclass
class _Talk:
    talk_id: str
    wav_name: str
    line: int
    packets: list[_Packet] = field(default_factory=list)


def import_simulstream(path: str | Path, *, system: str, clock: str = "source", wavs: str | Path | None = None,
                       retractions: str = "keep", unit: str = "spm") -> ImportResult:
    """Read a simulstream metrics log into a trace (one stream per talk, seconds).

    Raises :class:`InputError` naming file, line and field for every problem.
    """
    check_system(system)
    check_choice("--clock", clock, CLOCKS)
    check_choice("--retractions", retractions, RETRACTIONS)
    check_choice("--unit", unit, UNITS)
    if wavs is not None and not Path(wavs).is_dir():
        raise InputError.at(wavs, "is not a folder", field="--wavs", accepted="the folder holding the talks' wavs")
    p = Path(path)
    check = Checker(str(p), pd.DataFrame(), row_label="line")
    lines = read_json_lines(p, check)
    refuse_other_log(p, lines, "simulstream")
    talks = _talks(lines, check)
    check_unique_talks([(t.talk_id, t.line) for t in talks], check)
    check.raise_if_any()
    streams = [_stream(t, clock, retractions, unit, wavs, check) for t in talks]
    check.raise_if_any()
    sig = base_signature(
        table="trace", importer="simulstream", log=p.name, log_sha256=log_fingerprint(p), clock=clock,
        time_source="total_audio_processed" if clock == "source" else "queued computation_time",
        source_s_from="wav duration" if wavs is not None else "last total_audio_processed",
        retractions=retractions, offline_upper_bound=True if retractions == "final" else None,
        unit=unit, system=system)
    return finish(streams, system=system, source=str(p), signature=sig)


def _talks(lines: list[tuple[int, dict]], check: Checker) -> list[_Talk]:
    talks: list[_Talk] = []
    by_id: dict[int | str, _Talk] = {}
    for n, obj in lines:
        f = Fields(check, n, obj)
        key = obj.get("id")
        if "id" not in obj:
            if "model_loading_time" not in obj:
                f.problem("is not a simulstream log line", accepted=LINE_KINDS)
            continue
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            f.problem(f"{shown(key)} is not a number or string", "id", "the client id")
            continue
        if "metadata" in obj:
            meta = obj["metadata"]
            wav = meta.get("wav_name") if isinstance(meta, dict) else None
            if not isinstance(wav, str) or not talk_id_from_path(wav):
                f.problem("has no wav_name", "metadata", '{"wav_name": the talk\'s wav file name}')
                continue
            by_id[key] = _Talk(talk_id_from_path(wav), wav, n)
            talks.append(by_id[key])
            continue
        packet = _packet(f)
        if key not in by_id:
            f.problem(f"id {shown(key)} has no metadata line before it", "id",
                      'a {"id", "metadata": {"wav_name"}} line before the packets of a talk')
        elif packet is not None:
            by_id[key].packets.append(packet)
    return talks


def _packet(f: Fields) -> _Packet | None:
    arrival = f.number("total_audio_processed", "seconds of source audio received so far, ≥ 0")
    compute = f.number("computation_time", "seconds spent processing the packet, ≥ 0")
    generated = f.strings("generated_tokens", TOKENS)
    deleted = f.strings("deleted_tokens", TOKENS + " (empty unless the policy re-translates)")
    if arrival is None or compute is None or generated is None or deleted is None:
        return None
    return _Packet(f.lineno, arrival, compute, generated, deleted)


def _stream(talk: _Talk, clock: str, retractions: str, unit: str, wavs, check: Checker) -> ParsedStream | None:
    times = _clock(talk, clock, check)
    source_s = _source_s(talk, wavs, check)
    if times is None or source_s is None or not _plausible_unit(talk, unit, check):
        return None
    if retractions == "keep" and any(pk.deleted for pk in talk.packets):
        return _revising_stream(talk, times, source_s, unit, check)
    stack: list[tuple[str, int]] = []  # surviving tokens with the packet that last emitted them
    n_retractions = n_retracted = 0
    for k, pk in enumerate(talk.packets):
        if pk.deleted:
            n = len(pk.deleted)
            if retractions == "refuse":
                check.add(f"talk {talk.talk_id}: packet {k + 1} retracts {n} token(s) emitted earlier "
                          "(a re-translation policy)", row=pk.line, field="deleted_tokens",
                          accepted="no deleted tokens, or --retractions keep (a revising trace for a commit "
                          "policy) or final (keeps only text never deleted, an offline upper bound)")
                return None
            if not _deletes_last(talk, k, pk, [tok for tok, _ in stack], check):
                return None
            del stack[-n:]
            n_retractions += 1
            n_retracted += n
        stack.extend((tok, k) for tok in pk.generated)
    tokens = [tok for tok, _ in stack]
    keys, runs = group_runs([k for _, k in stack], tokens)
    t, x, g = assemble([times[k] for k in keys], segments(runs, unit))
    origins = Origins(tokens, [talk.packets[k].line for _, k in stack], unit)
    return ParsedStream(talk.talk_id, talk.line, source_s, t, x, g, detokenize(tokens, unit), n_retractions,
                        n_retracted, origins=origins)


def _deletes_last(talk: _Talk, k: int, pk: _Packet, tokens: list[str], check: Checker) -> bool:
    """A packet deletes the last tokens emitted, in order (else a located problem)."""
    n = len(pk.deleted)
    if n <= len(tokens) and tokens[len(tokens) - n:] == pk.deleted:
        return True
    check.add(f"talk {talk.talk_id}: packet {k + 1} deletes {n} token(s) that are not the last ones emitted",
              row=pk.line, field="deleted_tokens", accepted="the last tokens of the output so far, in order")
    return False


def _revising_stream(talk: _Talk, times: list[float], source_s: float, unit: str,
                     check: Checker) -> ParsedStream | None:
    """One update per packet that changes the output: ``retract`` the characters its deleted
    tokens held, ``text`` what its generated tokens add, both measured on the detokenized
    output with whitespace runs squeezed (the trace's own text)."""
    shown = Shown(unit)
    t: list[float] = []
    x: list[str] = []
    g: list[bool] = []
    r: list[int] = []
    n_retractions = n_retracted = 0
    for k, pk in enumerate(talk.packets):
        retract = 0
        if pk.deleted:
            if not _deletes_last(talk, k, pk, shown.tokens, check):
                return None
            before = len(shown.text)
            shown.pop(len(pk.deleted))
            retract = before - len(shown.text)
            n_retractions += 1
            n_retracted += len(pk.deleted)
        cut = len(shown.text)
        shown.push(pk.generated)
        added = shown.text[cut:]
        if added.strip() or retract:
            t.append(times[k])
            x.append(added.strip())
            g.append(bool(cut) and bool(added) and not added[0].isspace())
            r.append(retract)
    return ParsedStream(talk.talk_id, talk.line, source_s, t, x, g, detokenize(shown.tokens, unit), n_retractions,
                        n_retracted, retract=r)


def _clock(talk: _Talk, clock: str, check: Checker) -> list[float] | None:
    """Availability of each packet's text in seconds from source start."""
    out: list[float] = []
    end = 0.0
    for k, pk in enumerate(talk.packets):
        if k and pk.arrival_s < talk.packets[k - 1].arrival_s:
            check.add(f"talk {talk.talk_id}: {pk.arrival_s:g} s is earlier than the previous packet's "
                      f"{talk.packets[k - 1].arrival_s:g} s", row=pk.line, field="total_audio_processed",
                      accepted="non-decreasing within a talk")
            return None
        if clock == "source":
            out.append(pk.arrival_s)
        else:
            end = max(pk.arrival_s, end) + pk.compute_s
            out.append(end)
    return out


def _source_s(talk: _Talk, wavs, check: Checker) -> float | None:
    if wavs is None:
        last = talk.packets[-1].arrival_s if talk.packets else 0.0
        if last <= 0:
            check.add(f"talk {talk.talk_id}: no audio was processed, so its duration is unknown", row=talk.line,
                      accepted="packets with total_audio_processed > 0, or --wavs DIR")
            return None
        return last
    rel = PurePosixPath(talk.wav_name.replace("\\", "/"))
    inside = not rel.is_absolute() and ".." not in rel.parts  # a wav name never leads out of --wavs
    tried = ([Path(wavs) / rel] if inside else []) + [Path(wavs) / rel.name]
    found = next((c for c in tried if c.is_file()), None)
    if found is None:
        check.add(f"talk {talk.talk_id}: no wav at {' or '.join(map(str, dict.fromkeys(tried)))}", row=talk.line,
                  field="metadata", accepted="--wavs DIR holding wav_name (or its base name)")
        return None
    frames, rate = wav_frames(found)
    if frames <= 0:
        check.add(f"talk {talk.talk_id}: {found} holds no samples", row=talk.line, field="metadata",
                  accepted="a wav with audio")
        return None
    return frames / rate


def _plausible_unit(talk: _Talk, unit: str, check: Checker) -> bool:
    """SentencePiece output always has word-start markers; refuse a log that has none."""
    tokens = [tok for pk in talk.packets for tok in pk.generated]
    if unit != "spm" or len(tokens) < 2 or any(SPM_SPACE in tok for tok in tokens):
        return True
    check.add(f"talk {talk.talk_id}: none of its {len(tokens)} tokens holds '▁', so they are not SentencePiece "
              "pieces", row=talk.line, accepted="--unit word or --unit char for logs written with simulstream's "
              "simuleval detokenizer")
    return False
