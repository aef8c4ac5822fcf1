"""Service models: what-if variants of the measured synthesis time (a registry).

``measured`` keeps each request's measured service time; ``zero`` removes it;
``scale=F`` multiplies it by F (faster or slower hardware). Samples, grouping and text
stay fixed in every variant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simulplay.errors import InputError, RegistryError
from simulplay.specs import format_value


@dataclass(frozen=True)
class ServiceModel:
    name: ClassVar[str] = ""
    factor: float = 1.0

    def apply(self, service: np.ndarray) -> np.ndarray:
        """The variant's service times (or chunk offsets), seconds in and out; replay takes
        the result to whole nanoseconds (:func:`simulplay.sim.timebase.to_ns`)."""
        return service * self.factor

    def label(self) -> str:
        return self.name


_MODELS: dict[str, type[ServiceModel]] = {}


def register_service_model(name: str) -> Callable[[type[ServiceModel]], type[ServiceModel]]:
    def deco(cls):
        if name in _MODELS:
            raise RegistryError(f"service model '{name}' is already registered")
        cls.name = name
        _MODELS[name] = cls
        return cls

    return deco


@register_service_model("measured")
@dataclass(frozen=True)
class Measured(ServiceModel):
    """Service time as measured (or readiness as recorded in ``ready_s``)."""


@register_service_model("zero")
@dataclass(frozen=True)
class Zero(ServiceModel):
    factor: float = 0.0


@register_service_model("scale")
@dataclass(frozen=True)
class Scale(ServiceModel):
    def label(self) -> str:
        return f"scale={format_value(self.factor)}"


def parse_service(text: str, *, source: str = "--service") -> ServiceModel:
    """``measured``, ``zero`` or ``scale=F`` (F ≥ 0)."""
    name, eq, value = text.strip().partition("=")
    accepted = "measured, zero or scale=F with F ≥ 0"
    if name not in _MODELS or (name == "scale") != bool(eq):
        raise InputError.at(f"{source} '{text}'", "unknown service model", accepted=accepted)
    if name != "scale":
        return _MODELS[name]()
    try:
        factor = float(value)
    except ValueError as e:
        raise InputError.at(f"{source} '{text}'", f"'{value}' is not a number", accepted=accepted) from e
    if not (factor >= 0 and np.isfinite(factor)):
        raise InputError.at(f"{source} '{text}'", f"factor {value} is not ≥ 0", accepted=accepted)
    return Scale(factor=factor)
