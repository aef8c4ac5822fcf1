"""Closed-loop outputs decided again under a replay variant's clock.

A closed-loop policy's groups depend on the clock they were decided under: with zero service
its requests are ready at once, so the listener's queue it reads is another one. A replay
variant that changes the clock (``service=zero``, ``scale=F``, ``fit``, ``release=chunk``,
``silent=hold``) runs
the policy of every closed-loop output again in the discrete-event engine
(:func:`simulplay.grouping.engine.run_policy`) under that clock, and the variant replays the
requests it decided in place of the recorded ones. Each request's audio and base service
time come from the run itself when the run synthesized its text (the output's own request
first, else any request of the same panel, backend and realization, with that text: the
store reuses audio by text the same way), and otherwise from the run's duration model and
fitted clock (:mod:`simulplay.durationmodel.modelled`, fitted on the run's open-loop
requests, once, only when a text is missing), counted as *modelled*. The variant's service
model then maps the base seconds as the replay does (× 0, × F, the fitted clock of the
recorded requests), so that the replay of the decided rows is the engine's own clock. Under
chunk release each request's audio enters playback chunk by chunk, a stored text's chunks
as the chunk table recorded them, a modelled text's as one chunk ready with its request.

An output is kept as recorded (and labelled so by the replay) when it cannot be decided
again: its trace is not among the streams, its requests were split by an input limit, they
are not the groups its trace gives, or a missing text cannot be modelled (no open-loop
requests to fit on, or a commit policy before the policy; a synthesized text without
chunks under chunk release). Under shared servers the outputs of a share group are decided
jointly (:mod:`simulplay.durationmodel.redecide_shared`); edge trimming is not decided again
(its outputs keep the label).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.keys import RUN_PANEL_KEYS, present
from simulplay.durationmodel.chunk_table import ChunkTable
from simulplay.durationmodel.features import Phonemizer, update_counts
from simulplay.durationmodel.loop import SpanPredictor
from simulplay.durationmodel.modelled import PanelModel, fit_models
from simulplay.grouping.engine import Served, run_policy
from simulplay.grouping.policy import closed_loop_condition
from simulplay.grouping.registry import Committing, parse_rule
from simulplay.grouping.vectorized import update_table
from simulplay.manifest.validate import has_samples, output_keys
from simulplay.sim.servicefit import text_chars
from simulplay.sim.variants import FittedClock, ServiceModel
from simulplay.traces.model import Stream, join_texts

#: A store's durations of a text: (panel, text) → (service_s, n_samples, sample_rate, audio_s) or None.
Lookup = Callable[[tuple, str], "tuple[float, int, int, float] | None"]
#: The service models under which a closed-loop output is decided again.
DECIDABLE = ("measured", "zero", "scale", "fit")


class _Keep(Exception):
    """An output that cannot be decided again (the reason is the message)."""


@dataclass(frozen=True)
class Context:
    """What deciding an output again uses (:func:`redecide`'s, handed to ``together``): the
    output keys, the manifest rows by output, each text's audio and service in seconds, the
    variant's clock, the reading of silent parts and the optional lookup of other runs."""

    keys: list[str]
    by_name: dict
    durations: _Durations
    clock: _Clock
    silent: str
    lookup: Lookup | None


def _attempt(decide: Callable, *args) -> tuple[pd.DataFrame, int] | str:
    """``decide(*args)``, or the reason the output is kept."""
    try:
        return decide(*args)
    except _Keep as why:
        return str(why)


@dataclass
class Decided:
    """A manifest whose closed-loop outputs were decided again: the rows (each decided
    output's in place of its recorded ones), the service model to replay them with, each
    decided output's (requests, modelled requests) by its key tuple (:func:`output_keys`
    order), the outputs kept as recorded with the reason, and the duration model's
    description when it gave a duration."""

    manifest: pd.DataFrame
    service: ServiceModel
    outputs: dict[tuple, tuple[int, int]] = field(default_factory=dict)
    kept: dict[tuple, str] = field(default_factory=dict)
    model: str = ""
    chunks: pd.DataFrame | None = None  # chunk release: the chunk table of the rows


class _Durations:
    """Each request's base service seconds, samples, rate and audio seconds: the run's own
    request with the text, else the duration model (fitted on first need)."""

    def __init__(self, manifest: pd.DataFrame, closed: np.ndarray, streams: Sequence[Stream],
                 phonemize: Phonemizer | None, source: str, models: Sequence[PanelModel] | None, clock: bool):
        self.panel_keys = present(RUN_PANEL_KEYS, manifest)
        self.samples = has_samples(manifest)
        ok = (manifest["error"] == "").to_numpy() & manifest["audio_s"].notna().to_numpy()
        self.stored = self.table_of(manifest[ok])
        self.train = manifest[~closed].reset_index(drop=True)
        self.streams, self.phonemize, self.source = list(streams), phonemize, source
        self.index = {(s.talk_id, s.system): i for i, s in enumerate(self.streams)}
        self.predictors: dict[tuple, SpanPredictor] | None = None
        self.models: list[PanelModel] = list(models or [])
        self.clock = clock  # whether a modelled request's service time is used (else the clock is not fitted)
        self.failed = ""
        self.chunks: ChunkTable | None = None  # chunk release: the recorded chunks

    def table_of(self, rows: pd.DataFrame) -> dict[tuple, tuple[float, int, int, float]]:
        """(panel, text) → (service_s, n_samples, sample_rate, audio_s), the first row of each."""
        first = rows.drop_duplicates([*self.panel_keys, "text"])
        values = zip(*(first[k].astype(str).tolist() for k in self.panel_keys)) if self.panel_keys \
            else [()] * len(first)
        panels = [tuple(zip(self.panel_keys, v)) for v in values]
        n = first["n_samples"].to_numpy(np.int64).tolist() if self.samples else [0] * len(first)
        rate = first["sample_rate"].to_numpy(np.int64).tolist() if self.samples else [0] * len(first)
        served = zip(np.nan_to_num(first["service_s"].to_numpy(float)).tolist(), n, rate,
                     first["audio_s"].to_numpy(float).tolist())
        return dict(zip(zip(panels, first["text"].tolist()), served))

    def own(self, rows: pd.DataFrame, panel: tuple) -> dict[tuple, tuple[float, int, int, float]]:
        """:meth:`table_of` for the rows of one output (``panel`` theirs)."""
        n = rows["n_samples"].to_numpy(np.int64).tolist() if self.samples else [0] * len(rows)
        rate = rows["sample_rate"].to_numpy(np.int64).tolist() if self.samples else [0] * len(rows)
        served = zip(np.nan_to_num(rows["service_s"].to_numpy(float)).tolist(), n, rate,
                     rows["audio_s"].to_numpy(float).tolist())
        out: dict[tuple, tuple[float, int, int, float]] = {}
        for text, value in zip(rows["text"].tolist(), served):
            out.setdefault((panel, text), value)
        return out

    def modelled(self, panel: tuple, stream: Stream, first: int, last: int,
                 span: tuple[int, int] | None = None) -> tuple[float, int, int, float]:
        if self.predictors is None:
            self._fit()
        predict = self.predictors.get(panel)
        s = self.index.get((stream.talk_id, stream.system))
        if predict is None or s is None or self.streams[s] is not stream:
            raise _Keep(self.failed or "a text the run did not synthesize has no duration model for its panel")
        audio_s, n, service = predict(s, first, last, span)
        return service, n, predict.model.sample_rate if self.samples else 0, audio_s

    def _fit(self) -> None:
        self.predictors = {}
        if self.train.empty and not self.models:
            self.failed = "a text the run did not synthesize and no open-loop requests to fit a duration model on"
            return
        table = update_table(self.streams)
        counts = update_counts(table, self.phonemize)
        try:
            self.models = self.models or fit_models(self.train, table, counts, folds=3, source=self.source,
                                                    clock=self.clock)
        except InputError as e:
            self.failed = f"a text the run did not synthesize and no duration model ({e})"
            return
        self.predictors = {m.panel: SpanPredictor(table, counts, m) for m in self.models}

    def describe(self) -> str:
        return "; ".join((m.label() + ": " if m.label() else "") + m.durations.describe() for m in self.models)


class _Clock:
    """The variant's service seconds of a request from its base seconds (as replay maps them)."""

    def __init__(self, service: ServiceModel, manifest: pd.DataFrame, source: str):
        self.service = service.bind(manifest, source)
        self.fits = {f.panel: f for f in getattr(self.service, "fits", ())}

    def offset(self, panel: tuple, base_s: float, audio_s: float, chars: int, offset_s: float) -> float:
        """A chunk's readiness after its request's start under the variant (as replay maps it)."""
        if self.service.name == "fit":
            predicted = self(panel, base_s, audio_s, chars)
            return offset_s * (predicted / base_s if base_s > 0 else 1.0)
        return self(panel, offset_s, audio_s, chars)

    def __call__(self, panel: tuple, base_s: float, audio_s: float, chars: int) -> float:
        if self.service.name == "fit":
            return float(self.fits[panel].predict(np.array([audio_s]), np.array([chars]))[0])
        if type(self.service).apply is ServiceModel.apply:  # × factor, the same product as replay's
            return base_s * self.service.factor
        return float(self.service.apply(np.array([base_s]))[0])

    def bound_to(self, manifest: pd.DataFrame) -> ServiceModel:
        """The model that replays ``manifest``'s rows as the engine's clock did."""
        if self.service.name != "fit":
            return self.service
        keys = [k for k, _ in next(iter(self.fits))] if self.fits else []
        panels = list(self.fits)
        labels = list(zip(*(manifest[k].astype(str) for k in keys))) if keys else [()] * len(manifest)
        codes = np.array([panels.index(tuple(zip(keys, v))) for v in labels], int)
        audio, chars = manifest["audio_s"].to_numpy(float), text_chars(manifest)
        predicted = np.zeros(len(manifest))
        for c, panel in enumerate(panels):
            rows = codes == c
            predicted[rows] = self.fits[panel].predict(audio[rows], chars[rows])
        return FittedClock(tuple(self.fits.values()), codes, predicted,
                           np.nan_to_num(manifest["service_s"].to_numpy(float)))


def redecide(manifest: pd.DataFrame, streams: Sequence[Stream], service: ServiceModel, *, silent: str = "skip",
             phonemize: Phonemizer | None = None, models: Sequence[PanelModel] | None = None,
             lookup: Lookup | None = None, chunks: pd.DataFrame | None = None,
             source: str = "manifest", together: Callable | None = None) -> Decided:
    """Decide every closed-loop output of a validated ``manifest`` again under ``service``
    and the reading ``silent`` of silent parts, on ``streams`` (the run's traces; module
    docstring). Open-loop outputs keep their rows. Missing texts take the duration model of
    ``models`` (one per panel; None: fitted on the manifest's open-loop requests with the
    features of ``phonemize``, the backend's phonemizer, or the text's without one).
    ``lookup(panel, text)``: a store's (service_s, n_samples, sample_rate, audio_s) of a text
    the manifest lacks, or None, asked before the model (a caller's store of other runs).
    ``chunks`` (chunk release: the manifest's validated chunk table): each request's audio
    becomes playable chunk by chunk, a stored text's chunks as recorded, a modelled text's as
    one chunk ready with its request; :attr:`Decided.chunks` is the chunk table of the rows.
    ``together(manifest, codes, outputs, context)``: decides the closed-loop outputs jointly
    (shared servers, :mod:`simulplay.durationmodel.redecide_shared`), giving each output's
    (rows, modelled) or the reason it is kept."""
    closed = manifest["condition"].astype(str).map(closed_loop_condition).to_numpy(bool)
    if not closed.any():
        return Decided(manifest, service)
    keys = output_keys(manifest)
    clock = _Clock(service, manifest, source)
    uses_base = service.name in ("measured", "servers") or (service.name == "scale" and service.factor != 0)
    durations = _Durations(manifest, closed, streams, phonemize, source, models, uses_base)
    durations.chunks = None if chunks is None else ChunkTable(manifest, chunks, keys, durations.panel_keys)
    by_name = {(s.talk_id, s.system): s for s in streams}
    codes = manifest.groupby(keys, sort=False).ngroup().to_numpy()
    out = Decided(manifest, service)
    frames, chunk_frames, decided_codes = [], [], []
    at = np.flatnonzero(closed)
    used = [c for c in (*keys, "seq", "dispatch_s", "text", "glue", "n_updates", "group", "error", "audio_s",
                        "service_s", "source_s", "n_samples", "sample_rate") if c in manifest]
    slim = manifest.iloc[at][used].astype({c: object for c in used if manifest[c].dtype == object
                                           or str(manifest[c].dtype).startswith("string")})
    items = {code: slim.iloc[pos] for code, pos in pd.Series(at).groupby(codes[at], sort=True).indices.items()}
    if together is not None:  # decided jointly (shared servers)
        results = together(manifest, codes, items, Context(keys, by_name, durations, clock, silent, lookup))
    else:
        results = {code: _attempt(_decide, rows, keys, by_name, durations, clock, silent, lookup)
                   for code, rows in items.items()}
    for code, rows in items.items():
        key = tuple(rows[k].iloc[0] for k in keys)
        if isinstance(results[code], str):
            out.kept[key] = results[code]
            continue
        new, modelled = results[code]
        if durations.chunks is not None:
            chunk_frames.append(durations.chunks.rows(new, keys))
        new.attrs.clear()
        frames.append(new.assign(_code=code))
        decided_codes.append(code)
        out.outputs[key] = (len(new), modelled)
    if not frames:
        out.service, out.chunks = clock.service, chunks
        return out
    kept = manifest.assign(_code=codes)[~np.isin(codes, decided_codes)]
    both = pd.concat([kept, *frames], ignore_index=True).sort_values("_code", kind="stable")
    out.manifest = both.drop(columns="_code").reset_index(drop=True)
    out.manifest["in_flight"] = out.manifest["in_flight"].astype("Int64")
    out.service = clock.bound_to(out.manifest)
    if chunks is not None:
        gone = manifest.assign(_code=codes).loc[np.isin(codes, decided_codes), keys].drop_duplicates()
        old = chunks.merge(gone, on=keys, how="left", indicator=True)
        out.chunks = pd.concat([old[old["_merge"] == "left_only"].drop(columns="_merge"), *chunk_frames],
                               ignore_index=True)
    out.model = durations.describe() if any(m for _, m in out.outputs.values()) else ""
    return out


def _decide(rows: pd.DataFrame, keys: list[str], by_name: dict, durations: _Durations, clock: _Clock,
            silent: str, lookup: Lookup | None) -> tuple[pd.DataFrame, int]:
    """One output's requests decided again, and how many of them have modelled durations."""
    stream, rule, provider, finish = _plan(rows, keys, by_name, durations, clock, lookup)
    return finish(run_policy(stream, rule, provider, silent=silent))


def _plan(rows: pd.DataFrame, keys: list[str], by_name: dict, durations: _Durations, clock: _Clock,
          lookup: Lookup | None):
    """What deciding one output again needs: its stream and rule, the provider of its
    requests' durations, and ``finish(result)``, the rows of the engine's result and how
    many of them have modelled durations."""
    first = rows.iloc[0]
    stream = by_name.get((first["talk_id"], first["system"]))
    if stream is None:
        raise _Keep("its trace is not among the run's traces")
    if ((rows["error"] != "") | rows["audio_s"].isna()).any():
        raise _Keep("it has failed requests")
    if "group" in rows and (rows["group"].to_numpy() != rows["seq"].to_numpy()).any():
        raise _Keep("an input limit split its groups into several requests")
    rule = parse_rule(str(first["condition"]))
    original = stream
    if isinstance(rule, Committing):
        stream, rule = rule.prepare(stream), rule.rule
    _check_recorded(rows, stream, bool(getattr(rule, "cuts_updates", False)))
    panel = tuple((k, str(first[k])) for k in durations.panel_keys)
    own = durations.own(rows, panel)
    used: list[tuple[float, int, int, float, bool]] = []
    table = durations.chunks
    own_chunks = table.own(rows, panel) if table is not None else {}
    pieces: list[tuple[tuple[float, int], ...]] = []

    def provider(req) -> Served:
        hit = own.get((panel, req.text)) or durations.stored.get((panel, req.text))
        if hit is None and lookup is not None:
            hit = lookup(panel, req.text)
            if hit is not None:
                durations.stored[panel, req.text] = hit
        if hit is None:
            if stream is not original:
                raise _Keep("a text the run did not synthesize under a commit policy (no duration model)")
            hit = durations.modelled(panel, stream, req.first, req.last, req.span)
        base, n, rate, audio = hit
        used.append((base, n, rate, audio, (panel, req.text) not in own and (panel, req.text) not in durations.stored))
        svc = clock(panel, base, audio, len(req.text))
        if table is None:
            return Served(svc, n_samples=n, sample_rate=rate) if rate else Served(svc, audio)
        recorded = own_chunks.get((panel, req.text)) or table.by_text.get((panel, req.text))
        if recorded is None and (n and used[-1][4] is False):
            raise _Keep("a text the run synthesized has no chunks in its chunk table")
        recorded = recorded if recorded is not None else (((base, n),) if n else ())
        pieces.append(recorded)
        mapped = tuple((clock.offset(panel, base, audio, len(req.text), off), k) for off, k in recorded)
        return Served(svc, n_samples=n, sample_rate=rate, chunks=mapped)

    return stream, rule, provider, lambda result: _rows(result, first, keys, used, durations, pieces)


def _rows(result, first, keys: list[str], used: list, durations: _Durations, pieces: list) -> tuple[pd.DataFrame, int]:
    """The manifest rows of an output decided again, and how many have modelled durations."""
    new = pd.DataFrame({
        **{k: [first[k]] * len(result.requests) for k in keys},
        "seq": [r.seq for r in result.requests],
        "dispatch_s": [r.dispatch_s for r in result.requests],
        "service_s": [u[0] for u in used],
        "audio_s": [u[3] for u in used],
        "source_s": float(first["source_s"]),
        "text": [r.text for r in result.requests],
        "glue": [r.glue for r in result.requests],
        "trigger": [r.trigger for r in result.requests],
        "n_updates": [r.last - r.first + 1 for r in result.requests],
        "group": [r.group for r in result.requests],
        "ready_s": np.nan,
        "error": "",
        "queued_s": [r.queued_ns / 1e9 for r in result.requests],
        "in_flight": [r.in_flight for r in result.requests],
    })
    if durations.samples:
        new["n_samples"] = np.array([u[1] for u in used], np.int64)
        new["sample_rate"] = np.array([u[2] for u in used], np.int64)
    if durations.chunks is not None:
        new.attrs["chunks"] = pieces
    return new, sum(u[4] for u in used)


def _check_recorded(rows: pd.DataFrame, stream: Stream, spans: bool = False) -> None:
    """The recorded requests are whole runs of the stream's updates, in order, with their texts
    (``spans``: a policy that cuts inside updates, whose requests join to the stream's text)."""
    if spans:
        if join_texts(list(rows["text"]), list(rows["glue"])) != stream.joined:
            raise _Keep("its recorded requests are not the groups its trace gives")
        return
    n = rows["n_updates"].to_numpy(int) if "n_updates" in rows else None
    if n is None or n.sum() > len(stream) or (n < 1).any():
        raise _Keep("its recorded requests are not the groups its trace gives")
    ends = np.cumsum(n)
    for text, a, b in zip(rows["text"].to_numpy(), ends - n, ends):
        if join_texts(stream.texts[a:b], stream.glue[a:b]) != text:
            raise _Keep("its recorded requests are not the groups its trace gives")

