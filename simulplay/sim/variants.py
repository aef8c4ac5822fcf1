"""Replay variants: what-if service models and release rules, one registry each.

Service models (``--service``) change the measured synthesis time: ``measured`` keeps
each request's measured service time; ``zero`` removes it; ``scale=F`` multiplies it by
F (faster or slower hardware). Releases (``--release``) decide when audio enters
playback: ``request`` (primary) when the whole request is done, ``chunk`` each chunk at
its own recorded time. Samples, grouping and text stay fixed in every variant.

Silent parts (``--silent-parts``) decide what a part without audio (``d_j = 0``, e.g. a
punctuation-only request) does to the playback clock: ``skip`` (default, as SimulEval)
drops it from playback; ``hold`` applies Eq. 1 literally, so it holds the clock at its
readiness (:mod:`simulplay.sim.playback`).

A variant is a frozen dataclass registered by name (``@register_service_model``,
``@register_release``) whose fields are its parameters; ``to_dict()`` rebuilds it and
``label()`` is what signatures record. An experiment file names variants as
``release=NAME`` or ``service=MODEL`` (:func:`parse_variant`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from simulplay.errors import InputError
from simulplay.specs import Registry, format_value, params


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
        the result to whole nanoseconds (:func:`simulplay.sim.timebase.to_ns`)."""
        return service * self.factor

    def label(self) -> str:
        """The value of the signature's ``service`` key."""
        return self.name

    def to_dict(self) -> dict[str, Any]:
        """The registered name and every parameter."""
        return {"service": self.name, **params(self)}


SERVICE_MODELS: Registry[ServiceModel] = Registry("service model")


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
        return f"scale={format_value(self.factor)}"


def service_syntax() -> str:
    """The accepted spellings: ``measured, zero or scale=F with F ≥ 0``."""
    return _alternatives([SERVICE_MODELS.get(n, "service").syntax for n in SERVICE_MODELS.names_in_order()])


def parse_service(text: str, *, source: str = "--service") -> ServiceModel:
    """``measured``, ``zero`` or ``scale=F`` (F ≥ 0); a model with a parameter is written
    ``name=VALUE``. Errors name ``source`` and the text."""
    name, eq, value = text.strip().partition("=")
    where, accepted = f"{source} '{text}'", service_syntax()
    if name not in SERVICE_MODELS.names():
        raise InputError.at(where, "unknown service model", accepted=accepted)
    cls = SERVICE_MODELS.get(name, where)
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
        return {"release": self.name, **params(self)}


RELEASES: Registry[Release] = Registry("release")


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
    if name not in RELEASES.names():
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


def parse_variant(text: str, *, source: str, key: str | None = None) -> ReplayVariant:
    """``release=chunk`` (measured service) or ``service=zero``, ``service=scale=F``
    (request release), or ``silent=hold`` / ``silent=skip`` (request release, measured
    service, the other reading of silent parts); errors name ``source`` (the experiment
    file) and ``key`` (its key)."""
    kind, eq, value = text.partition("=")
    where = f"{source}: key '{key}'" if key else source
    if kind == "release" and value in RELEASES.names():
        return ReplayVariant(parse_release(value, source=where), Measured())
    if kind == "service" and eq:
        return ReplayVariant(RequestRelease(), parse_service(value, source=where))
    if kind == "silent" and value in SILENT_PARTS:
        return ReplayVariant(RequestRelease(), Measured(), value)
    accepted = ", ".join(["release=chunk", "service=zero", "service=scale=F", "silent=hold"])
    raise InputError.at(source, f"'{text}' is not a replay variant", field=key, field_label="key", accepted=accepted)
