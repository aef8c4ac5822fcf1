"""Replay variants: what-if service models and release rules, one registry each.

Service models (``--service``) change the measured synthesis time: ``measured`` keeps
each request's measured service time; ``zero`` removes it; ``scale=F`` multiplies it by
F (faster or slower hardware); ``fit`` is a modelled clock, each request's service time
predicted from the replayed requests by a robust per-panel fit on audio duration and text
length (:mod:`simulplay.sim.servicefit`). Releases (``--release``) decide when audio enters
playback: ``request`` (primary) when the whole request is done, ``chunk`` each chunk at
its own recorded time. Samples, grouping and text stay fixed in every variant.

Silent parts (``--silent-parts``) decide what a part without audio (``d_j = 0``, e.g. a
punctuation-only request) does to the playback clock: ``skip`` (default, as SimulEval)
drops it from playback; ``hold`` applies Eq. 1 literally, so it holds the clock at its
readiness (:mod:`simulplay.sim.playback`).

A variant is a frozen dataclass registered by name (``@register_service_model``,
``@register_release``) whose fields are its parameters; ``to_dict()`` rebuilds it and
``label()`` is what signatures record. Replay calls ``bind(manifest)`` once (a model that
needs the manifest's own data, such as ``fit``, returns a bound copy) and then asks the
bound model for each request's seconds (``request_seconds``), each chunk's offset
(``chunk_seconds``) and what each output's signature adds (``output_signature``). An experiment file names variants as
``release=NAME`` or ``service=MODEL`` (:func:`parse_variant`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError, SimulplayError
from simulplay.core.specs import Registry, format_value, params
from simulplay.sim.playback import Clock, serial_clock
from simulplay.sim.servicefit import ServiceFit, fit_service


def _alternatives(items: list[str]) -> str:
    """``a, b or c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


# ---- service models -------------------------------------------------------------


@dataclass(frozen=True)
class ServiceModel:
    """Base of service models: ``apply`` maps measured seconds to the variant's seconds."""

    name: ClassVar[str] = ""
    #: how the variant is written (listed, in registration order, when a name is unknown)
    syntax: ClassVar[str] = ""
    factor: ClassVar[float] = 1.0

    def apply(self, service: np.ndarray) -> np.ndarray:
        """The variant's service times (or chunk offsets), seconds in and out; replay takes
        the result to whole nanoseconds (:func:`simulplay.core.timebase.to_ns`)."""
        return service * self.factor

    def label(self) -> str:
        """The value of the signature's ``service`` key."""
        return self.name

    def to_dict(self) -> dict[str, Any]:
        """The registered name and every parameter."""
        return {"service": self.name, **params(self)}

    def bind(self, manifest: pd.DataFrame, source: str = "manifest") -> ServiceModel:
        """The model for this validated manifest's rows (this one: no data needed)."""
        return self

    def request_seconds(self, manifest: pd.DataFrame) -> np.ndarray:
        """Each request's service seconds under the variant (missing ones as 0)."""
        return self.apply(np.nan_to_num(manifest["service_s"].to_numpy(float)))

    def chunk_seconds(self, offsets: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Chunk offsets (seconds since the request started) under the variant; ``rows``:
        each chunk's request row in the bound manifest (``None``: a bound over all rows)."""
        return self.apply(offsets)

    def output_signature(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """What the signature of the output in ``row`` (its key columns) adds: ``clock:
        unused`` where the variant takes no time from the service clock (``zero``,
        ``scale=0``), whose numbers the run's clock verdict does not qualify."""
        return {"clock": "unused"} if self.factor == 0 else {}

    def clock(self, manifest: pd.DataFrame, codes: np.ndarray, dispatch: np.ndarray, service: np.ndarray) -> Clock:
        """Start and readiness (int64 ns) of the requests of ``manifest``'s rows from their
        dispatch and service (int64 ns): one serial synthesizer per output (this one);
        shared servers (:mod:`simulplay.sim.servers`) queue the outputs of a group."""
        return serial_clock(codes, dispatch, service)


SERVICE_MODELS: Registry[ServiceModel] = Registry("service model", group="simulplay.variants", key="service")


def register_service_model(name: str):
    """Class decorator adding a service model to the registry under ``name``."""
    return SERVICE_MODELS.register(name)


@register_service_model("measured")
@dataclass(frozen=True)
class Measured(ServiceModel):
    """Service time as measured (or readiness as recorded in ``ready_s``)."""

    syntax = "measured"


@register_service_model("zero")
@dataclass(frozen=True)
class Zero(ServiceModel):
    """No service time: every request is ready at its dispatch (text-availability bound)."""

    syntax = "zero"
    factor = 0.0


@register_service_model("scale")
@dataclass(frozen=True)
class Scale(ServiceModel):
    """Service time × ``factor`` (≥ 0): faster (< 1) or slower (> 1) hardware."""

    syntax = "scale=F with F ≥ 0"
    factor: float = 1.0  # type: ignore[misc]  # a parameter here

    def __post_init__(self):
        if not (self.factor >= 0 and np.isfinite(self.factor)):
            raise ValueError(f"factor {self.factor} is not ≥ 0")

    def label(self) -> str:
        """``scale=F`` with the factor written as in RULE strings (``scale=0.5``)."""
        return f"scale={format_value(self.factor)}"


@register_service_model("fit")
@dataclass(frozen=True)
class Fit(ServiceModel):
    """A modelled clock: each request's service time predicted by a least-absolute-
    deviations fit of service_s on audio_s and text characters, one fit per backend and
    realization, over the replayed requests (:mod:`simulplay.sim.servicefit`)."""

    syntax = "fit (a modelled clock)"

    def apply(self, service: np.ndarray) -> np.ndarray:
        """Not defined: the fit predicts from a manifest's rows (:meth:`bind` first)."""
        raise SimulplayError("service model 'fit' predicts from a manifest: bind it first")

    def bind(self, manifest: pd.DataFrame, source: str = "manifest") -> ServiceModel:
        """Fit every panel of ``manifest`` (errors name ``source``): a :class:`FittedClock`."""
        fits, codes, predicted = fit_service(manifest, source)
        return FittedClock(tuple(fits), codes, predicted, np.nan_to_num(manifest["service_s"].to_numpy(float)))


@dataclass(frozen=True, eq=False)
class FittedClock(Fit):
    """``fit`` bound to one manifest: its fits, each row's panel number, each row's
    predicted and measured seconds. Chunk offsets scale with their request
    (predicted / measured; unchanged when nothing was measured)."""

    fits: tuple[ServiceFit, ...] = ()
    panel_of_row: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    predicted: np.ndarray = field(default_factory=lambda: np.zeros(0))
    measured: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def bind(self, manifest: pd.DataFrame, source: str = "manifest") -> ServiceModel:
        """Already bound: itself."""
        return self

    def request_seconds(self, manifest: pd.DataFrame) -> np.ndarray:
        """The predicted service seconds of the bound manifest's rows."""
        return self.predicted

    def chunk_seconds(self, offsets: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Offsets (s) × their request's predicted / measured seconds (without ``rows``:
        × the largest such ratio, a bound for range checks)."""
        ratio = np.divide(self.predicted, self.measured, out=np.ones(len(self.measured)), where=self.measured > 0)
        if rows is None:
            return offsets * float(ratio.max(initial=1.0))
        return offsets * ratio[rows]

    def output_signature(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """``fit``: the modelled clock of the output's panel (:meth:`ServiceFit.describe`)."""
        for fit in self.fits:
            if all(str(row.get(k)) == v for k, v in fit.panel):
                return {"fit": fit.describe()}
        return {}

    def to_dict(self) -> dict[str, Any]:
        """``{"service": "fit"}``: binding again refits from the manifest."""
        return {"service": self.name}


def service_syntax() -> str:
    """The accepted spellings: ``measured, zero or scale=F with F ≥ 0``."""
    return _alternatives([SERVICE_MODELS.get(n, "service").syntax for n in SERVICE_MODELS.names_in_order()])


def parse_service(text: str, *, source: str = "--service") -> ServiceModel:
    """``measured``, ``zero`` or ``scale=F`` (F ≥ 0); a model with a parameter is written
    ``name=VALUE``. Errors name ``source`` and the text."""
    name, eq, value = text.strip().partition("=")
    where, accepted = f"{source} '{text}'", service_syntax()
    if not SERVICE_MODELS.has(name):
        raise InputError.at(where, "unknown service model", accepted=accepted)
    cls = SERVICE_MODELS.get(name, where)
    if hasattr(cls, "parse_spec"):
        return cls.parse_spec(text, source)
    takes_value = bool(params_of(cls))
    if takes_value != bool(eq):
        raise InputError.at(where, "unknown service model", accepted=accepted)
    if not takes_value:
        return cls()
    try:
        factor = float(value)
    except ValueError as e:
        raise InputError.at(where, f"'{value}' is not a number", accepted=accepted) from e
    if not (factor >= 0 and np.isfinite(factor)):
        raise InputError.at(where, f"factor {value} is not ≥ 0", accepted=accepted)
    return cls(factor)


def params_of(cls: type) -> list[str]:
    """The parameter names of a variant class (its init fields)."""
    import dataclasses

    return [f.name for f in dataclasses.fields(cls) if f.init]


# ---- releases -------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    """Base of releases: when a part's audio may start playing."""

    name: ClassVar[str] = ""
    #: whether the variant needs the chunk table (per-chunk times)
    needs_chunks: ClassVar[bool] = False

    def label(self) -> str:
        """The value of the signature's ``release`` key."""
        return self.name

    def to_dict(self) -> dict[str, Any]:
        """The registered name and every parameter."""
        return {"release": self.name, **params(self)}


RELEASES: Registry[Release] = Registry("release", group="simulplay.variants", key="release")


def register_release(name: str):
    """Class decorator adding a release to the registry under ``name``."""
    return RELEASES.register(name)


@register_release("request")
@dataclass(frozen=True)
class RequestRelease(Release):
    """A request's audio is ready when the whole request is done (the primary analysis)."""


@register_release("chunk")
@dataclass(frozen=True)
class ChunkRelease(Release):
    """Each chunk is ready at its request's start plus its recorded offset
    (sentence-release replay; offsets follow the service model)."""

    needs_chunks = True


def parse_release(text: str | Release, *, source: str = "--release") -> Release:
    """``request`` or ``chunk`` (a :class:`Release` is returned as it is)."""
    if isinstance(text, Release):
        return text
    name = text.strip()
    if not RELEASES.has(name):
        raise InputError.at(f"{source} '{text}'", "unknown release",
                            accepted=_alternatives(RELEASES.names_in_order()))
    return RELEASES.get(name, source)()


# ---- silent parts ---------------------------------------------------------------

#: Readings of a part without audio: ``skip`` it (SimulEval), or ``hold`` the clock at its
#: readiness (Eq. 1 taken literally). Recorded as the signature's ``silent`` key.
SILENT_PARTS = ("skip", "hold")


def parse_silent_parts(text: str, *, source: str = "--silent-parts") -> str:
    """``skip`` or ``hold``."""
    name = str(text).strip()
    if name not in SILENT_PARTS:
        raise InputError.at(f"{source} '{text}'", "unknown reading of silent parts",
                            accepted="skip (a part without audio is not played, as SimulEval) or hold (it holds "
                            "the playback clock at its readiness, Eq. 1 taken literally)")
    return name


# ---- experiment variants --------------------------------------------------------


@dataclass(frozen=True)
class ReplayVariant:
    """A sensitivity replay of an experiment: one release with one service model, and
    the reading of silent parts (``None``: the experiment's own)."""

    release: Release
    service: ServiceModel
    silent: str | None = None

    def spec(self) -> str:
        """The variant as an experiment file writes it (:func:`parse_variant` reads it back):
        ``silent=hold``, ``release=chunk`` or ``service=MODEL``; a variant that changes more
        than one of the three has no such text (ValueError)."""
        changed = [self.silent is not None, not isinstance(self.release, RequestRelease),
                   not isinstance(self.service, Measured)]
        if sum(changed) > 1:
            raise ValueError(f"{self!r} changes more than one of silent, release and service")
        if self.silent is not None:
            return f"silent={self.silent}"
        if changed[1]:
            return f"release={self.release.label()}"
        return f"service={self.service.label()}"

    def to_dict(self) -> dict[str, Any]:
        """The release and the service model (each with its registered name) and ``silent``;
        :func:`variant_from_dict` rebuilds the variant."""
        return {"release": self.release.to_dict(), "service": self.service.to_dict(), "silent": self.silent}


def variant_from_dict(data: Mapping[str, Any], *, source: str = "variant config") -> ReplayVariant:
    """The variant of :meth:`ReplayVariant.to_dict`'s output (errors name ``source``)."""
    silent = data.get("silent")
    return ReplayVariant(RELEASES.from_dict(dict(data["release"]), key="release", source=source),
                         SERVICE_MODELS.from_dict(dict(data["service"]), key="service", source=source),
                         None if silent is None else parse_silent_parts(silent, source=source))


def parse_variant(text: str, *, source: str, key: str | None = None) -> ReplayVariant:
    """``release=chunk`` (measured service) or ``service=zero``, ``service=scale=F``,
    ``service=fit``, ``servers=K,share=G,…`` (request release; :mod:`simulplay.sim.servers`),
    or ``silent=hold`` / ``silent=skip`` (request
    release, measured service, the other reading of silent parts); errors name ``source``
    (the experiment file) and ``key`` (its key)."""
    kind, eq, value = text.partition("=")
    where = f"{source}: key '{key}'" if key else source
    if kind == "release" and RELEASES.has(value):
        return ReplayVariant(parse_release(value, source=where), Measured())
    if kind == "service" and eq:
        return ReplayVariant(RequestRelease(), parse_service(value, source=where))
    if kind == "silent" and value in SILENT_PARTS:
        return ReplayVariant(RequestRelease(), Measured(), value)
    if kind == "servers" and eq:
        return ReplayVariant(RequestRelease(), parse_service(text, source=where))
    accepted = ", ".join(["release=chunk", "service=zero", "service=scale=F", "service=fit", "silent=hold",
                          "servers=K,share=G"])
    raise InputError.at(source, f"'{text}' is not a replay variant", field=key, field_label="key", accepted=accepted)
