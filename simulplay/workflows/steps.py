"""The replay and η steps, each in one place: ``simulplay replay`` and ``simulplay eta``
(:mod:`simulplay.cli`) and the Python API's :func:`simulplay.replay` and :func:`simulplay.eta`
(:mod:`simulplay.api`) check their arguments their own way, then call these, which parse a
step's settings once and run it on a file or a table.

Errors name what the caller calls a setting: a command's flags (``--service``), the API's
keywords (``service``): ``names`` is :data:`FLAGS` or :data:`KEYWORDS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.analysis import EtaResult, compute_eta
from simulplay.analysis.bootstrap import Bootstrap
from simulplay.core.errors import InputError
from simulplay.formats.load import read_load_curve
from simulplay.formats.service_spec import read_slowdown, with_tables
from simulplay.sim.replay import ReplayResult
from simulplay.sim.servers import Servers, servers_model
from simulplay.sim.slowdown import parse_flight
from simulplay.sim.variants import Release, ServiceModel
from simulplay.traces.model import Stream

#: How the command line names the replay's settings …
FLAGS = {"release": "--release", "service": "--service", "silent_parts": "--silent-parts"}
#: … and how the Python API does.
KEYWORDS = {"release": "release", "service": "service", "silent_parts": "silent_parts"}


@dataclass(frozen=True)
class ReplaySettings:
    """A replay's settings, parsed once: when a part is ready (``release``), the service
    clock (``service``: a model, shared servers among them) and the reading of parts
    without audio (``silent``: skip or hold)."""

    release: Release
    service: ServiceModel
    silent: str


def replay_settings(release: str, service: str, silent_parts: str, *, servers: int | None = None,
                    share: str = "panel", discipline: str = "fifo", load_curve: Path | None = None,
                    slowdown: str | None = None, names: Mapping[str, str] = FLAGS) -> ReplaySettings:
    """The settings of ``simulplay replay``'s flags or :func:`simulplay.replay`'s keywords
    (shared servers: :func:`servers_from_flags`; the tables a ``servers=K,…`` service names are
    read here, :mod:`simulplay.formats.service_spec`); errors name them as ``names`` does."""
    from simulplay.sim.variants import parse_release, parse_service, parse_silent_parts

    shared = servers_from_flags(servers, share, discipline, load_curve, service, slowdown)
    return ReplaySettings(parse_release(release, source=names["release"]),
                          shared or with_tables(service, lambda t: parse_service(t, source=names["service"])),
                          parse_silent_parts(silent_parts, source=names["silent_parts"]))


def replay_manifest(manifest: Path | pd.DataFrame, settings: ReplaySettings, *,
                    chunks: Path | pd.DataFrame | None = None, allow_incomplete: bool = False,
                    upstream: dict[str, Any] | None = None, talks: Sequence[str] = (),
                    talks_flag: str = "--talks") -> ReplayResult:
    """The replay step: a manifest file (read and validated; its chunk table, when the
    release needs one, ``chunks`` or the file beside it) or a manifest table (validated,
    ``upstream`` its signature; the chunk table then a table in ``chunks``); ``talks``: only
    these talks' rows (``--talks``, named ``talks_flag`` in errors; empty: every talk)."""
    from simulplay.durationmodel.replay_again import recorded_streams
    from simulplay.manifest import read_chunks, read_manifest, validate_manifest
    from simulplay.manifest.chunks import validate_chunks
    from simulplay.traces.select import pick_rows

    if isinstance(manifest, pd.DataFrame):
        source = "manifest"
        df = validate_manifest(manifest, source)
    else:
        source = str(manifest)
        df, meta = read_manifest(manifest)
        upstream = meta.get("signature")
    df = pick_rows(df, talks, talks_flag)
    chunk_df = None
    if settings.release.needs_chunks:
        chunk_df = validate_chunks(chunks, "chunks") if isinstance(chunks, pd.DataFrame) else \
            read_chunks(source, chunks)
        chunk_df = pick_rows(chunk_df, talks, talks_flag) if "talk_id" in chunk_df else chunk_df
    streams = recorded_streams(meta.get("traces")) \
        if not isinstance(manifest, pd.DataFrame) and decides_again(df, settings) else None
    return replay_deciding(df, settings, streams, chunks=chunk_df, allow_incomplete=allow_incomplete,
                           upstream=upstream, source=source)


def replay_deciding(manifest: pd.DataFrame, settings: ReplaySettings, streams: Sequence[Stream] | None, *,
                    chunks: pd.DataFrame | None = None, allow_incomplete: bool = False,
                    upstream: dict[str, Any] | None = None, source: str = "manifest") -> ReplayResult:
    """Replay a validated manifest under ``settings``, its closed-loop outputs decided again
    on ``streams`` where the clock changes (:func:`simulplay.durationmodel.redecide.replay_deciding`)."""
    from simulplay.durationmodel.replay_again import replay_deciding as replay_again

    return replay_again(manifest, service=settings.service, release=settings.release, silent=settings.silent,
                        streams=streams, chunks=chunks, allow_incomplete=allow_incomplete, upstream=upstream,
                        source=source)


def decides_again(manifest: pd.DataFrame, settings: ReplaySettings) -> bool:
    """Whether a replay under ``settings`` decides the manifest's closed-loop outputs again."""
    from simulplay.durationmodel.replay_again import decides_again as again

    return again(manifest, settings.release, settings.service, settings.silent)


def eta_of_summary(summary: Path | pd.DataFrame, *, a: str, f: str, reference: str | None, boot: Bootstrap,
                   contrasts: Sequence[tuple[str, str]] = (), interactions: Sequence[tuple[str, str]] = (),
                   allow_incomplete: bool = False, upstream: list[dict[str, Any]] | None = None,
                   check: Callable[[pd.DataFrame], None] | None = None,
                   reference_commit: str | None = None) -> EtaResult:
    """The η step: a playback summary file (read and validated) or table (validated,
    ``upstream`` its rows' signatures), ``check``-ed before any computation (a command's
    own condition on the table), then η, its intervals, the contrasts and the interactions.
    With ``reference_commit`` instead of ``reference``: commit policies against that policy,
    the rule fixed (:mod:`simulplay.analysis.commit_eta`; no contrasts or interactions)."""
    if (reference is None) == (reference_commit is None):
        raise InputError.at("--reference/--reference-commit", "give exactly one of them",
                            accepted="--reference CONDITION, or --reference-commit POLICY")
    if reference_commit is not None and (contrasts or interactions):
        raise InputError.at(f"--reference-commit '{reference_commit}'", "compares policies rule by rule, "
                            "not with --contrast or --interaction", accepted="--reference CONDITION for those")
    from simulplay.formats.summary import read_summary, validate_summary

    if isinstance(summary, pd.DataFrame):
        source = "summary"
        df = validate_summary(summary, source)
    else:
        source = str(summary)
        df, upstream = read_summary(source)
    if check is not None:
        check(df)
    if reference_commit is not None:
        from simulplay.analysis.commit_eta import commit_eta

        return commit_eta(df, a=a, f=f, reference_commit=reference_commit, boot=boot,
                          allow_incomplete=allow_incomplete, upstream=upstream, source=source)
    return compute_eta(df, a=a, f=f, reference=reference, boot=boot, contrasts=list(contrasts),
                       interactions=list(interactions), allow_incomplete=allow_incomplete, upstream=upstream,
                       source=source)


def servers_from_flags(servers: int | None, share: str, discipline: str, load_curve: Path | None,
                       service: str, slowdown: str | None = None) -> Servers | None:
    """The model ``--servers K --share G --discipline D --load-curve TABLE --slowdown F|TABLE``
    ask for (``None`` without ``--servers``); the other flags without ``--servers`` or with a
    service model other than measured are refused (one line, exit code 2)."""
    if servers is None:
        if load_curve is not None or share != "panel" or discipline != "fifo" or slowdown is not None:
            what = "--slowdown" if slowdown is not None else "--share/--discipline/--load-curve"
            raise InputError.at(what, "need --servers K", accepted="--servers K with them, or none of them")
        return None
    if service.strip() != "measured":
        raise InputError.at(f"--service '{service}'", "shared servers replay the measured service",
                            accepted="--service measured with --servers")
    curve = read_load_curve(load_curve) if load_curve is not None else ""
    flight = parse_flight(read_slowdown(slowdown), f"--slowdown '{slowdown}'") if slowdown is not None else ""
    return servers_model(servers, share, discipline, curve, "--servers", flight)
