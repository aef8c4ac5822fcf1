"""Replay variants are registries like rules and backends: a name per variant, its
parameters as a frozen dataclass, to_dict(), and the known names listed on a miss."""

import dataclasses

import numpy as np
import pytest

from simulplay.core.errors import InputError, RegistryError
from simulplay.sim.servers import Servers
from simulplay.sim.variants import (
    RELEASES,
    SERVICE_MODELS,
    ChunkRelease,
    Fit,
    Measured,
    Release,
    RequestRelease,
    Scale,
    Zero,
    parse_release,
    parse_service,
    parse_variant,
    register_release,
)


def test_every_variant_has_a_registered_name_and_rebuilds_from_to_dict():
    assert SERVICE_MODELS.names_in_order() == ["measured", "zero", "scale", "fit", "servers"]
    assert RELEASES.names_in_order() == ["request", "chunk"]
    for obj in (Measured(), Zero(), Scale(0.5), Fit(), Servers(4, "talk", "fifo", "1:0.5;4:1.0"), RequestRelease(),
                ChunkRelease()):
        assert dataclasses.is_dataclass(obj) and obj.__dataclass_params__.frozen
        kind = "service" if "service" in obj.to_dict() else "release"
        registry = SERVICE_MODELS if kind == "service" else RELEASES
        assert registry.from_dict(obj.to_dict(), key=kind) == obj
    assert Scale(0.5).to_dict() == {"service": "scale", "factor": 0.5}
    assert parse_service("scale=0.5") == Scale(0.5) and parse_service("scale=0.5").label() == "scale=0.5"
    assert parse_release("chunk") == ChunkRelease() and ChunkRelease().needs_chunks


def test_service_models_change_only_the_service_time():
    measured = np.array([0.25, 1.5, 0.0])  # seconds, worked by hand below
    assert parse_service("measured").apply(measured).tolist() == [0.25, 1.5, 0.0]
    assert parse_service("zero").apply(measured).tolist() == [0.0, 0.0, 0.0]
    assert parse_service("scale=2").apply(measured).tolist() == [0.5, 3.0, 0.0]


def test_unknown_names_list_the_registered_ones():
    with pytest.raises(InputError, match=r"--release 'word': unknown release \(expected request or chunk\)"):
        parse_release("word")
    with pytest.raises(InputError, match=r"--service 'fast'.*\(expected measured, zero, scale=F with F ≥ 0, "
                                         r"fit \(a modelled clock\) or servers=K\[,share="):
        parse_service("fast")
    with pytest.raises(InputError, match="exp.toml, key 'analysis.variants': 'release=word' is not a replay variant"):
        parse_variant("release=word", source="exp.toml", key="analysis.variants")
    with pytest.raises(InputError, match="exp.toml: key 'analysis.variants' 'scale=-1'.*is not ≥ 0"):
        parse_variant("service=scale=-1", source="exp.toml", key="analysis.variants")


def test_a_new_release_registers_by_name_and_a_repeated_name_is_refused():
    with pytest.raises(RegistryError, match="release 'chunk' is already registered"):
        @register_release("chunk")
        @dataclasses.dataclass(frozen=True)
        class Again(Release):
            pass
    v = parse_variant("service=zero", source="exp.toml")
    assert v.release == RequestRelease() and v.service == Zero()
