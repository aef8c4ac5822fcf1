"""The run record (``run.json``): what a run was asked to do, as objects, and back.

``run.json``'s ``experiment`` key holds a run's settings in format :data:`RECORD_FORMAT`:
every config as its own ``to_dict()`` (grouping rules, backends, replay variants, the
executor, the bootstrap, the content and quality settings) beside the text the experiment
file wrote it as (``punct``, not its canonical form: the report shows that text and a
variant's files are named by it). :meth:`RunSettings.from_record` rebuilds the objects and
:meth:`RunSettings.to_record` writes them back, so a record read and written again is the
same record, byte for byte. A record without a format (written before it had one) keeps
only the texts and the flat bootstrap keys: it is read the same way, its configs parsed from
their texts when a reader asks for them. The rest of ``run.json`` (counts, timings, the
machine and the clock verdict) is read through :class:`RunRecord`.

This is the one module that knows the record's keys: the report, the sweep and
``simulplay run`` (through :meth:`simulplay.workflows.experiment.Experiment.to_record`)
read and write it here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulplay.analysis.bootstrap import ENDPOINT_METHOD, ENDPOINT_RNG, ENDPOINT_SEED, TIE_TOLERANCE, Bootstrap
from simulplay.core.errors import InputError

#: The format of ``run.json``'s ``experiment`` key this module writes.
RECORD_FORMAT = 1


@dataclass(frozen=True)
class Written:
    """A config and the text the experiment wrote it as. ``config`` is ``None`` in a record
    without a format, and for a config of a plugin this process has not loaded (a rule or
    backend a report need not know): ``data``, its recorded ``to_dict()``, keeps it as written."""

    text: str
    config: Any = None
    data: dict[str, Any] | None = field(default=None, compare=False)

    def to_record(self) -> dict[str, Any]:
        return {"written": self.text, "config": self.config.to_dict() if self.config is not None else self.data}


@dataclass(frozen=True)
class RunSettings:
    """``run.json``'s ``experiment`` key as objects: the run's name, files, translators, rules
    (:class:`Written`), reference, backends, folders, synthesis settings, executor, bootstrap,
    contrasts, sensitivity replays, edge thresholds, silent parts, sweep, content and quality
    settings (the executor, content and quality as their ``to_dict()``: the report does not
    read them, and a ray executor would need its extra to be rebuilt;
    :mod:`simulplay.workflows.experiment_record` rebuilds them)."""

    name: str
    traces: tuple[Path, ...]
    a: str
    f: str
    rules: tuple[Written, ...]
    reference: str
    backends: tuple[Written, ...]
    out: Path | None = None
    store: Path | None = None
    realizations: int = 1
    order: str = "counterbalanced"
    max_chars: int | None = None
    executor: dict[str, Any] | None = None  # the ExecutorSpec's to_dict(); None in a record without a format
    bootstrap: Bootstrap = Bootstrap()
    contrasts: tuple[tuple[str, str], ...] = ()
    variants: tuple[Written, ...] = ()
    edges: tuple[float, ...] = ()
    silent_parts: str = "skip"
    sweep: tuple[str, ...] = ()
    sweep_confirm: int = 0
    sweep_commit: tuple[str, ...] = ()  # commit-policy families crossed with the sweep's grids
    content: dict[str, Any] | None = None
    quality: dict[str, Any] | None = None
    talks: tuple[str, ...] = ()  # only these talks of the traces; empty: all
    events: str = "keep"  # non-speech event tags: keep | drop
    commit: tuple[str, ...] = ()  # commit policies crossed with the rules
    source: str = "experiment"
    format: int = RECORD_FORMAT

    @property
    def rule_texts(self) -> list[str]:
        """The rules as the experiment wrote them."""
        return [r.text for r in self.rules]

    @property
    def backend(self) -> str:
        """The first backend as the experiment wrote it."""
        return self.backends[0].text if self.backends else ""

    @property
    def variant_texts(self) -> list[str]:
        """The sensitivity replays as the experiment wrote them (their files' labels)."""
        return [v.text for v in self.variants]

    def backend_config(self, i: int = 0, *, source: str = "run.json"):
        """The ``i``-th backend's config (parsed from its text in a record without a format)."""
        from simulplay.backends import parse_backend

        w = self.backends[i]
        return w.config if w.config is not None else parse_backend(w.text, source=f"{source}: backend")

    def to_record(self) -> dict[str, Any]:
        """The ``experiment`` key of ``run.json`` (format :data:`RECORD_FORMAT`)."""
        return {
            "format": RECORD_FORMAT, "name": self.name, "source": self.source,
            "traces": [str(p) for p in self.traces], "a": self.a, "f": self.f,
            "rules": [r.to_record() for r in self.rules], "reference": self.reference,
            "backends": [b.to_record() for b in self.backends],
            "out": _text(self.out), "store": _text(self.store),
            "realizations": self.realizations, "order": self.order, "max_chars": self.max_chars,
            "executor": self.executor, "bootstrap": self.bootstrap.to_dict(),
            "contrasts": [list(c) for c in self.contrasts], "variants": [v.to_record() for v in self.variants],
            "edges": list(self.edges), "silent_parts": self.silent_parts, "sweep": list(self.sweep),
            "sweep_confirm": self.sweep_confirm, "sweep_commit": list(self.sweep_commit), "content": self.content,
            "quality": self.quality,
            "talks": list(self.talks), "events": self.events, "commit": list(self.commit)}

    @classmethod
    def from_record(cls, data: Mapping[str, Any], *, source: str = "run.json") -> RunSettings:
        """The settings of a ``run.json``'s ``experiment`` key (any format this module
        reads); an InputError names ``source`` and the key."""
        if not isinstance(data, Mapping):
            raise InputError.at(source, "is missing", field="experiment", field_label="key",
                                accepted="the run record written by `simulplay run`")
        for key in ("a", "f", "reference", "rules"):
            if key not in data:
                raise InputError.at(source, "is missing", field=f"experiment.{key}", field_label="key",
                                    accepted="the run record written by `simulplay run`")
        fmt = data.get("format", 0)
        if fmt not in (0, RECORD_FORMAT):
            raise InputError.at(source, f"format {fmt!r} is not one this version reads", field="experiment.format",
                                field_label="key", accepted=f"0 (no format) or {RECORD_FORMAT}")
        try:
            return _from_record(data, source) if fmt else _from_flat(data)
        except (KeyError, TypeError, ValueError) as e:
            raise InputError.at(source, f"is not a run record this version reads ({e!r})", field="experiment",
                                field_label="key", accepted="the run record written by `simulplay run`") from e


def _from_record(data: Mapping[str, Any], source: str) -> RunSettings:
    from simulplay.backends import backend_from_dict
    from simulplay.grouping.registry import rule_from_dict
    from simulplay.sim.variants import variant_from_dict

    def written(items, rebuild) -> tuple[Written, ...]:
        return tuple(Written(w["written"], _rebuilt(rebuild, dict(w["config"])), dict(w["config"])) for w in items)

    return RunSettings(
        name=data["name"], source=data["source"], traces=tuple(Path(p) for p in data["traces"]), a=data["a"],
        f=data["f"], rules=written(data["rules"], lambda d: rule_from_dict(d, source=source)),
        reference=data["reference"], backends=written(data["backends"], lambda d: backend_from_dict(d, source=source)),
        out=_path(data["out"]), store=_path(data["store"]), realizations=data["realizations"], order=data["order"],
        max_chars=data["max_chars"], executor=data["executor"],
        bootstrap=Bootstrap.from_dict(data["bootstrap"]), contrasts=tuple(tuple(c) for c in data["contrasts"]),
        variants=written(data["variants"], lambda d: variant_from_dict(d, source=source)),
        edges=tuple(data["edges"]), silent_parts=data["silent_parts"], sweep=tuple(data["sweep"]),
        sweep_confirm=data["sweep_confirm"], sweep_commit=tuple(data.get("sweep_commit", ())), content=data["content"],
        quality=data["quality"],
        talks=tuple(data["talks"]), events=data["events"], commit=tuple(data["commit"]))


def _rebuilt(rebuild, data: dict[str, Any]) -> Any:
    """The config of ``data``, or None when its registered name is not known here (a plugin's
    rule or backend the report reads as its text; a run's experiment loads its plugins first)."""
    try:
        return rebuild(data)
    except InputError:
        return None


def _from_flat(data: Mapping[str, Any]) -> RunSettings:
    """A record written before records had a format: flat keys, configs as their texts."""
    boot = Bootstrap(draws=int(data.get("draws", 10_000)), seed=int(data.get("seed", ENDPOINT_SEED)),
                     method=data.get("quantile_method", ENDPOINT_METHOD),
                     confidence=float(data.get("confidence", 0.95)),
                     rng=data.get("bootstrap_rng", ENDPOINT_RNG), talk_order=data.get("talk_order", "sorted"),
                     tie_tolerance=float(data.get("tie_tolerance", TIE_TOLERANCE)))
    backends = [data["backend"]] if data.get("backend") else []
    return RunSettings(
        name=data.get("name") or "", source=data.get("source", "experiment"),
        traces=tuple(Path(p) for p in data.get("traces", [])), a=data["a"], f=data["f"],
        rules=tuple(Written(r) for r in data["rules"]), reference=data["reference"],
        backends=tuple(Written(b) for b in [*backends, *data.get("extra_backends", [])]),
        out=_path(data.get("out")), store=_path(data.get("store")), realizations=int(data.get("realizations", 1)),
        order=data.get("order", "counterbalanced"), max_chars=data.get("max_chars"), bootstrap=boot,
        contrasts=tuple(tuple(c) for c in data.get("contrasts", [])),
        variants=tuple(Written(v) for v in data.get("variants", [])), edges=tuple(data.get("edges", [])),
        silent_parts=data.get("silent_parts", "skip"), sweep=tuple(data.get("sweep", [])),
        sweep_confirm=int(data.get("sweep_confirm", 0)), content=data.get("content"), quality=data.get("quality"),
        talks=tuple(data.get("talks", ())), events=data.get("events", "keep"), format=0)


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)


def _text(value: Path | None) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class RunRecord:
    """A whole ``run.json``: the settings (:class:`RunSettings`) and what the run did and
    found (counts, timings, the machine, the clock verdict, the synthesis signature), which
    the record keeps as written (``data``)."""

    settings: RunSettings
    data: dict[str, Any] = field(default_factory=dict)

    def count(self, key: str) -> Any:
        """``requests``, ``synthesized``, ``already_in_store``, ``failed``, ``reused_rows``,
        ``audio_s``: as recorded (None when the record lacks it)."""
        return self.data.get(key)

    @property
    def excluded_outputs(self) -> list:
        return list(self.data.get("excluded_outputs") or [])

    @property
    def signature(self) -> dict[str, Any]:
        return dict(self.data.get("signature") or {})

    @property
    def machine(self) -> dict[str, Any]:
        return dict(self.data.get("machine") or {})

    @property
    def clock(self) -> dict[str, Any]:
        return dict(self.data.get("clock") or {})

    @property
    def load_at_measurement(self) -> dict[str, Any] | None:
        """The 1-minute load while the requests were measured (median, max, requests), if recorded."""
        return self.data.get("load_at_measurement") or None

    def to_json(self) -> str:
        """The text of ``run.json``: :meth:`read` of it gives this record again."""
        rest = {k: v for k, v in self.data.items() if k != "experiment"}
        return json.dumps({"experiment": self.settings.to_record(), **rest}, indent=2, default=str)

    @classmethod
    def read(cls, path: Path) -> RunRecord:
        """``run.json`` at ``path``, checked; an InputError names the file and the key."""
        if not path.is_file():
            raise InputError.at(path, "no such file", accepted="the run record written by `simulplay run`")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InputError.at(path, f"is not valid JSON ({e})") from e
        exp = data.get("experiment") if isinstance(data, dict) else None
        return cls(RunSettings.from_record(exp, source=str(path)), data)
