"""Content diagnostics from files and inside ``simulplay run``: recognition → content
scoring → word timing, each table written with its signature."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.analysis.bootstrap import WORD_TIMING_METHOD, WORD_TIMING_SEED, Bootstrap
from simulplay.analysis.content import ContentResult, score_content
from simulplay.analysis.wordtiming import TimingResult, check_timing_bootstrap, word_timing
from simulplay.core.errors import InputError
from simulplay.core.keys import OUTPUT_KEYS, RUN_PANEL_KEYS, present
from simulplay.core.progress import NO_PROGRESS, Progress, tracking
from simulplay.core.tables import write_table
from simulplay.grouping import canonical_condition
from simulplay.recognizers import RecognizerConfig, parse_recognizer
from simulplay.recognizers.qwen import ForcedAligner, align_words
from simulplay.recognizers.windows import WindowRule
from simulplay.store.store import AudioStore
from simulplay.traces.model import Stream
from simulplay.workflows.transcripts import TranscriptResult, read_transcripts, transcribe_manifest

CONTENT_KEYS = {"recognizer": str, "language": str, "window_s": float, "pairs": list, "timing": bool,
                "timing_seed": int, "timing_quantile_method": str}


@dataclass(frozen=True)
class ContentSettings:
    """An experiment's ``[content]`` table: recognition, content scoring, word timing."""

    language: str
    recognizer: str = "whisper"
    window_s: float = 15.0
    pairs: tuple[tuple[str, str], ...] = field(default=())
    timing: bool = False
    timing_seed: int = WORD_TIMING_SEED  # the word-timing bootstrap (Truong & Le (2026), Table 17: 20261005, linear)
    timing_quantile_method: str = WORD_TIMING_METHOD
    config: RecognizerConfig | None = None  # ``recognizer`` parsed once, when the table is read

    def recognizer_config(self, src: str) -> RecognizerConfig:
        """The recognizer's config: parsed when the table was read, else from its text now."""
        return self.config or parse_recognizer(self.recognizer, source=f"{src}: key 'content.recognizer'")

    def timing_bootstrap(self, boot: Bootstrap) -> Bootstrap:
        """The word-timing bootstrap: the experiment's draws and confidence, its own seed and method."""
        return Bootstrap(draws=boot.draws, seed=self.timing_seed, method=self.timing_quantile_method,
                         confidence=boot.confidence)


def content_settings(table: dict[str, Any], src: str, rules: Sequence[str] = ()) -> ContentSettings:
    """Validate the ``[content]`` table; every problem names its key (``content.window_s``).
    ``rules``: the experiment's canonical conditions, which pairs must name."""

    def err(message: str, key: str, accepted: str) -> InputError:
        return InputError.at(src, message, field=f"content.{key}", field_label="key", accepted=accepted)

    hints = {"recognizer": 'a recognizer spec, e.g. "whisper" or "qwen3-asr:model=PATH"',
             "language": 'an ISO 639-1 code, e.g. "en"', "window_s": "seconds > 0, e.g. 15",
             "pairs": '[["immediate", "timer:w=4"], …]', "timing": "true or false",
             "timing_seed": "an integer ≥ 0 (default 20261005)",
             "timing_quantile_method": "a NumPy quantile method (default linear)"}
    for key, value in table.items():
        if key not in CONTENT_KEYS:
            raise err("is not a known key", key, "one of " + ", ".join(f"content.{k}" for k in CONTENT_KEYS))
        want = CONTENT_KEYS[key]
        ok = isinstance(value, want) and (want is bool or not isinstance(value, bool))
        ok |= want is float and isinstance(value, int) and not isinstance(value, bool)
        if not ok:
            raise err(f"{value!r} is not {'a number' if want is float else want.__name__}", key, hints[key])
    if not isinstance(table.get("language"), str) or not table["language"].strip():
        raise err("is missing", "language", hints["language"])
    spec = table.get("recognizer", "whisper")
    config = parse_recognizer(spec, source=f"{src}: key 'content.recognizer'")
    window_rule(float(table.get("window_s", 15.0)), f"{src}: key 'content.window_s'")
    pairs = []
    for item in table.get("pairs", []):
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) and x for x in item)):
            raise err(f"{item!r} is not a pair of conditions", "pairs", hints["pairs"])
        pair = (canonical_condition(item[0]), canonical_condition(item[1]))
        for c in pair:
            if rules and c not in rules:
                raise err(f"'{c}' is not one of the rules", "pairs", ", ".join(rules))
        pairs.append(pair)
    settings = ContentSettings(language=table["language"].strip(), recognizer=spec,
                               window_s=float(table.get("window_s", 15.0)), pairs=tuple(pairs),
                               timing=bool(table.get("timing", False)), config=config,
                               **{k: table[k] for k in ("timing_seed", "timing_quantile_method") if k in table})
    try:
        boot = settings.timing_bootstrap(Bootstrap())
    except ValueError as e:
        raise err(str(e), "timing_seed" if settings.timing_seed < 0 else "timing_quantile_method",
                  hints["timing_quantile_method"]) from e
    check_timing_bootstrap(boot, f"{src}: key 'content.timing_quantile_method'")
    return settings


def check_recognizer(settings: ContentSettings, src: str) -> None:
    """Load the experiment's recognizer once and check its language (before synthesis)."""
    recognizer = settings.recognizer_config(src).create()
    try:
        recognizer.load()
        recognizer.check_language(settings.language)
    except ValueError as e:
        raise InputError.at(src, str(e), field="content.language", field_label="key",
                            accepted="a language the recognizer's model transcribes") from e
    finally:
        recognizer.close()


def window_rule(window_s: float, source: str = "--window-s") -> WindowRule:
    try:
        return WindowRule(window_s=window_s)
    except ValueError as e:
        raise InputError.at(f"{source} {window_s:g}", str(e), accepted="seconds > 0") from e


def forced_aligner(path: str | Path | None, source: str = "--aligner") -> ForcedAligner | None:
    if not path:
        return None
    try:
        aligner = ForcedAligner(str(path))
        aligner.check()
        return aligner
    except ValueError as e:
        raise InputError.at(f"{source} {path}", str(e), accepted="a local Qwen3-ForcedAligner folder") from e


def recognize(manifest: pd.DataFrame, upstream: dict[str, Any] | None, store: AudioStore,
              config: RecognizerConfig, *, language: str, rule: WindowRule, aligner: ForcedAligner | None = None,
              source: str = "manifest", progress: Progress = NO_PROGRESS) -> TranscriptResult:
    """Load the recognizer (and aligner), transcribe every output, release the models."""
    recognizer = config.create()
    try:
        recognizer.load()
        try:
            recognizer.check_language(language)
        except ValueError as e:
            raise InputError.at(f"--language '{language}'", str(e)) from e
        align = None
        if aligner is not None:
            loaded = aligner.load()

            def align(audio, text, _loaded=loaded):
                return align_words(_loaded, audio, text, language)
        n_outputs = len(manifest.drop_duplicates([*OUTPUT_KEYS, *present(RUN_PANEL_KEYS, manifest)]))
        with tracking(progress, n_outputs, f"recognizing ({config.name})") as bar:
            return transcribe_manifest(manifest, store, recognizer, language=language, rule=rule, aligner=align,
                                       aligner_identity=aligner.identity() if aligner else None, upstream=upstream,
                                       source=source, progress=bar)
    finally:
        recognizer.close()


def write_transcripts(res: TranscriptResult, out: Path) -> None:
    write_table(res.table, out, res.signatures, kind="transcripts", extra_meta=res.meta)


def content_from_file(transcripts: Path, *, pairs: Sequence[tuple[str, str]] = (),
                      allow_incomplete: bool = False) -> ContentResult:
    df, sigs, _ = read_transcripts(transcripts)
    return score_content(df, sigs, pairs=pairs, allow_incomplete=allow_incomplete, source=str(transcripts))


def write_content(res: ContentResult, out: Path, *, pairs_out: Path | None = None,
                  per_talk: Path | None = None) -> None:
    write_table(res.table, out, res.table_signatures, kind="content", signature_column=True)
    if pairs_out is not None and len(res.pairs):
        write_table(res.pairs, pairs_out, res.pair_signatures, kind="content-pairs", signature_column=True)
    if per_talk is not None:
        write_table(res.per_output, per_talk, res.per_output_signatures, kind="content-per-output")


def timing_from_files(transcripts: Path, manifest: Path, traces: Sequence[Path], *, reference: str,
                      boot: Bootstrap, allow_incomplete: bool = False) -> TimingResult:
    """Read transcripts, replay their manifest (request release, measured service), read the
    traces for availability, and compute word timing."""
    from simulplay.manifest import read_manifest
    from simulplay.sim import replay
    from simulplay.traces import read_traces, streams_from_frame

    df, sigs, _ = read_transcripts(transcripts)
    man, _ = read_manifest(manifest)
    parts = replay(man, allow_incomplete=True, source=str(manifest)).parts
    streams = streams_from_frame(read_traces(list(traces)))
    return word_timing(df, sigs, parts, streams, reference=reference, boot=boot, allow_incomplete=allow_incomplete,
                       source=str(transcripts))


def write_timing(res: TimingResult, out: Path, *, words: Path | None = None, per_talk: Path | None = None) -> None:
    write_table(res.table, out, res.table_signatures, kind="word-timing", signature_column=True)
    if words is not None:
        write_table(res.words, words, res.word_signatures, kind="word-timing-words")
    if per_talk is not None:
        write_table(res.per_talk, per_talk, res.per_talk_signatures, kind="word-timing-per-talk")


@dataclass
class DiagnosticsResult:
    transcripts: TranscriptResult
    content: ContentResult
    timing: TimingResult | None


def run_diagnostics(settings: Any, manifest: pd.DataFrame, upstream: dict[str, Any], store: AudioStore,
                    parts: pd.DataFrame, streams: Sequence[Stream], out: Path, *, reference: str, boot: Bootstrap,
                    allow_incomplete: bool, source: str, progress: Progress = NO_PROGRESS) -> DiagnosticsResult:
    """The experiment's ``[content]`` table: ``transcripts.parquet``, ``content.csv`` (+
    ``content.pairs.csv``, ``content.per_output.csv``), and with ``timing`` ``word_timing.csv``
    (+ ``word_timing.per_talk.csv``, ``word_timing.words.parquet``) in ``out``."""
    config = settings.recognizer_config(source)
    tr = recognize(manifest, upstream, store, config, language=settings.language,
                   rule=window_rule(settings.window_s, f"{source}: key 'content.window_s'"),
                   source=source, progress=progress)
    write_transcripts(tr, out / "transcripts.parquet")
    df, sigs, _ = read_transcripts(out / "transcripts.parquet")
    content = score_content(df, sigs, pairs=settings.pairs, allow_incomplete=allow_incomplete,
                            source=str(out / "transcripts.parquet"))
    write_content(content, out / "content.csv", pairs_out=out / "content.pairs.csv",
                  per_talk=out / "content.per_output.csv")
    timing = None
    if settings.timing:
        timing = word_timing(df, sigs, parts, streams, reference=reference, boot=settings.timing_bootstrap(boot),
                             allow_incomplete=allow_incomplete, source=str(out / "transcripts.parquet"))
        write_timing(timing, out / "word_timing.csv", words=out / "word_timing.words.parquet",
                     per_talk=out / "word_timing.per_talk.csv")
    return DiagnosticsResult(tr, content, timing)
