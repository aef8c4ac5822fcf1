"""Experiments: one TOML file that runs synthesis → replay → η into one folder.

Example (paths are relative to the TOML file)::

    name = "demo"
    traces = ["traces/sample_traces.jsonl"]
    a = "eager"                 # translator A (δ = L(A) − L(F))
    f = "batched"               # translator F
    rules = ["immediate", "timer:w=2", "timer:w=4", "punct", "words"]
    reference = "immediate"
    realizations = 1
    order = "counterbalanced"   # synthesis order (or "fixed", "paper"); see simulplay.synthesis.plan
    out = "runs/demo"           # output folder
    store = "runs/store"        # audio store (default: <out>/store)
    max_chars = 400             # optional input-limit splitter
    talks = ["ted_1096"]        # only these talks (default: every talk of the traces)
    events = "drop"             # non-speech event tags such as (Applaus): "keep" (spoken, default) or "drop"

    [backend]                   # name + any setting of that backend
    name = "piper"
    intra_op_threads = 4
    # or several engines, [[backend]] once each: every one synthesizes the whole design, and
    # η(B1) − η(B2) is written for each pair in listed order (eta.interaction.csv)

    [analysis]
    draws = 10000
    seed = 1032026
    quantile_method = "order:floor((n+1)a)"   # or order:floor(na)+1, order:int(nq), or a NumPy method
    bootstrap_rng = "numpy"     # or "python": random.Random(seed), one randrange per cell
    talk_order = "sorted"       # the index matrix's columns: talk ids sorted, or "given"
    tie_tolerance = 1e-6        # per-talk values within 1 µs of zero are ties (n_zero)
    # bootstrap = "paper"       # preset: bootstrap_rng "python" and Truong & Le (2026)'s ranks
    confidence = 0.95
    contrasts = [["punct", "timer:w=2"]]
    variants = ["release=chunk", "service=zero"]   # sensitivity replays (also "silent=hold")
    edges = [0.3, 0.5, 0.7]     # edge-silence replay: Silero VAD thresholds (extra 'vad')
    silent_parts = "skip"       # or "hold": a part without audio holds the clock (every replay)
    sweep = ["timer:w=1..6", "words:n=4..12:4"]   # a modelled sweep after the run (`simulplay sweep`)
    sweep_confirm = 1           # …and its best point synthesized for real
    sweep_commit = ["stable:k=1..4"]  # commit-policy families crossed with the sweep's grids (revising traces)

    [content]                   # content diagnostics (extra 'asr'): transcripts, edits, word timing
    recognizer = "whisper"      # or "whisper:model=PATH", "qwen3-asr:model=PATH"
    language = "en"
    window_s = 15
    pairs = [["immediate", "timer:w=4"]]
    timing = true               # word timing against the experiment's reference

    [quality]                   # how the outputs sound (docs/quality.md; extra 'quality' for dnsmos, similarity)
    metrics = ["dnsmos", "joins"]   # of dnsmos, similarity, joins (default: all three)
    dnsmos_windows = 1          # DNSMOS on the first 9.01 s window of each output's speech (default: every request)
    conditions = ["immediate", "timer:w=4"]   # DNSMOS and similarity under these rules only (default: every rule)
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.core.errors import InputError
from simulplay.core.plugins import experiment_plugins
from simulplay.workflows.experiment_analysis import (
    analysis_bootstrap,
    analysis_sweep,
    analysis_sweep_commit,
    analysis_variants,
    edge_thresholds,
    quality_settings,
)
from simulplay.workflows.experiment_record import (  # noqa: F401 - written: the experiment's own, used with it
    experiment_fields,
    experiment_settings,
    written,
)
from simulplay.workflows.quality import DEMO_QUALITY, QualitySettings

if TYPE_CHECKING:
    from simulplay.backends import BackendConfig
    from simulplay.grouping import Rule
    from simulplay.grouping.grid import RuleGrid
    from simulplay.sim.variants import ReplayVariant
    from simulplay.synthesis.executors import ExecutorSpec
    from simulplay.workflows.diagnostics import ContentSettings

TOP_KEYS = {"name": str, "traces": list, "a": str, "f": str, "rules": list, "reference": str,
            "realizations": int, "order": str, "out": str, "store": str, "max_chars": int, "backend": (dict, list),
            "analysis": dict, "executor": str, "workers": int, "worker_cpus": float, "worker_gpus": float,
            "retries": int, "content": dict, "quality": dict, "commit": list, "talks": list, "events": str}
ANALYSIS_KEYS = {"draws": int, "seed": int, "quantile_method": str, "confidence": float, "bootstrap": str,
                 "bootstrap_rng": str, "talk_order": str, "tie_tolerance": float, "contrasts": list,
                 "variants": list, "edges": list, "silent_parts": str, "sweep": list, "sweep_confirm": int,
                 "sweep_commit": list}
REQUIRED = ("traces", "a", "f", "rules", "reference")


def _serial() -> ExecutorSpec:
    from simulplay.synthesis.executors import ExecutorSpec

    return ExecutorSpec()


@dataclass(frozen=True)
class Experiment:
    """An experiment, parsed once when it is loaded: its grouping rules, backend configs,
    executor, bootstrap and replay variants are the objects the run uses, each with a
    ``to_dict()`` that rebuilds it. ``spelled`` pairs a config with the text the experiment
    file wrote it as (``punct``, not its canonical ``punct:cap=2,min_words=3``): ``run.json``
    records that text and a variant's files are named by it; a config it does not list is
    written in its canonical form (:func:`written`)."""

    name: str
    traces: tuple[Path, ...]
    a: str
    f: str
    rules: tuple[Rule, ...]
    reference: str
    backends: tuple[BackendConfig, ...]  # every engine of the run, in listed order
    out: Path
    store: Path
    realizations: int = 1
    order: str = "counterbalanced"  # synthesis order: counterbalanced | fixed | paper
    max_chars: int | None = None
    executor: ExecutorSpec = field(default_factory=_serial)
    bootstrap: Bootstrap = Bootstrap()  # the paired talk bootstrap of the [analysis] table
    contrasts: tuple[tuple[str, str], ...] = ()
    variants: tuple[ReplayVariant, ...] = ()
    edges: tuple[float, ...] = ()  # edge-silence thresholds; empty: no edge replay
    silent_parts: str = "skip"  # skip | hold: the reading of parts without audio in every replay
    sweep: tuple[RuleGrid, ...] = ()  # grids of a modelled sweep after the run, parsed once; empty: none
    sweep_confirm: int = 0  # the sweep's best unmeasured points synthesized for real
    sweep_commit: tuple[RuleGrid, ...] = ()  # commit-policy families crossed with the sweep's grids
    content: ContentSettings | None = None  # the [content] table; None: no content diagnostics
    quality: QualitySettings | None = None  # how the outputs sound (the demo's DEMO_QUALITY); None: not scored
    talks: tuple[str, ...] = ()  # only these talks of the traces; empty: all
    events: str = "keep"  # non-speech event tags: keep (spoken) | drop (removed before grouping)
    commit: tuple[str, ...] = ()  # commit policies crossed with the rules (rules then hold POLICY+RULE)
    spelled: tuple[tuple[Any, str], ...] = field(default=(), compare=False)  # (config, its text in the file)
    source: str = field(default="experiment", compare=False)

    def to_record(self) -> dict[str, Any]:
        """``run.json``'s ``experiment`` key (:mod:`simulplay.report.record`, its format version)."""
        return experiment_settings(self).to_record()

    @classmethod
    def from_record(cls, data: dict[str, Any], *, source: str = "run.json") -> Experiment:
        """The experiment of :meth:`to_record`'s output: ``from_record(r).to_record() == r``."""
        from simulplay.report.record import RunSettings

        return cls(**experiment_fields(RunSettings.from_record(data, source=source), source))


#: The backends ``simulplay demo --backends`` knows: the bundled traces are English.
DEMO_BACKENDS = ("piper", "espeak")


def demo_experiment(out_dir: str | Path, *, realizations: int = 1, piper: str = "",
                    source: str = "--piper", backends: tuple[str, ...] = ("piper",)) -> Experiment:
    """The embedded demo (``demo.toml`` on the bundled sample traces, package ``simulplay.sample_traces``) with
    its store and outputs in ``out_dir``, ``realizations`` synthesis realizations and Piper on
    min(4, CPU cores) intra-op threads plus the settings ``piper`` adds (``key=value,…``, e.g.
    ``durations=fixed``; its own ``intra_op_threads`` wins). ``backends`` (of :data:`DEMO_BACKENDS`,
    in order; ``espeak`` is eSpeak NG's en-us voice) are the engines the design runs on. The
    backend specs are checked here, so a bad setting is an error naming ``source`` (or
    ``--backends``) before anything is written."""
    from simulplay.backends import parse_backend

    exp = load_experiment(Path(str(files("simulplay.sample_traces").joinpath("demo.toml"))))
    threads = "" if "intra_op_threads=" in piper else f"intra_op_threads={min(4, os.cpu_count() or 1)}"
    specs = {"piper": "piper:" + ",".join(filter(None, [threads, piper.strip()])), "espeak": "espeak:voice=en-us"}
    configs = [(parse_backend(specs[name], source=source if name == "piper" else "--backends"), specs[name])
               for name in backends]
    out = Path(out_dir).resolve()
    return dataclasses.replace(exp, backends=tuple(c for c, _ in configs), spelled=(*configs, *exp.spelled),
                               out=out, store=out / "store", realizations=realizations, quality=DEMO_QUALITY)


def parse_demo_backends(text: str, source: str = "--backends") -> tuple[str, ...]:
    """``piper``, ``piper,espeak`` …: names of :data:`DEMO_BACKENDS`, each once, in order."""
    names = tuple(n.strip() for n in text.split(","))
    accepted = "names of " + ", ".join(DEMO_BACKENDS) + " joined by commas, each once, e.g. piper,espeak"
    for n in names:
        if n not in DEMO_BACKENDS:
            raise InputError.at(f"{source} '{text}'", f"unknown demo backend '{n}'", accepted=accepted)
    if len(set(names)) != len(names):
        raise InputError.at(f"{source} '{text}'", "names a backend twice", accepted=accepted)
    return names


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment file; every problem names the key."""
    p = Path(path)
    if not p.is_file():
        raise InputError.at(p, "no such file" if not p.exists() else "is not a file", accepted="an EXPERIMENT.toml")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError.at(p, f"is not valid TOML ({e})") from e
    return experiment_from_dict(data, p)


def experiment_from_dict(data: dict[str, Any], path: Path) -> Experiment:
    """The experiment of a parsed TOML file at ``path`` (relative paths resolve against its
    folder), every spec parsed and checked here, once; errors name the key."""
    src = str(path)
    base = path.parent
    data = experiment_plugins(data, path)  # plugins = [...] first: the rules and backends may be theirs
    _check_keys(data, TOP_KEYS, "", src)
    for key in REQUIRED:
        if key not in data:
            raise _err(src, "is missing", field=key, accepted=_describe(key))
    analysis = data.get("analysis", {})
    _check_keys(analysis, ANALYSIS_KEYS, "analysis.", src)
    backends = _backend_specs(data.get("backend", {"name": "piper"}), src, base)
    traces = tuple(_path(base, t, "traces", src) for t in _strings(data["traces"], "traces", src))
    texts = _strings(data["rules"], "rules", src)
    from simulplay.grouping import canonical_condition, parse_rule

    rules = [parse_rule(r, source=f"{src}: key 'rules'") for r in texts]
    commits = tuple(_strings(data["commit"], "commit", src)) if "commit" in data else ()
    if commits:
        from simulplay.grouping import commit_rules

        rules = commit_rules(rules, list(commits), source=f"{src}: key 'commit'")
    canon = [r.canonical() for r in rules]
    if len(set(canon)) != len(canon):
        twice = next(c for c in canon if canon.count(c) > 1)
        raise _err(src, f"'{twice}' is listed twice", field="rules",
                   accepted="each grouping rule once (rules compare by canonical form)")
    if canonical_condition(data["reference"]) not in canon:
        raise _err(src, f"'{data['reference']}' is not one of the rules", field="reference",
                            accepted=", ".join(texts))
    contrasts = []
    for item in analysis.get("contrasts", []):
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)):
            raise _err(src, f"{item!r} is not a pair of rules", field="analysis.contrasts",
                                accepted='[["punct", "timer:w=2"], …]')
        contrasts.append((item[0], item[1]))
    variants = analysis_variants(_strings(analysis.get("variants", []), "analysis.variants", src), src)
    edges = edge_thresholds(analysis.get("edges", []), src)
    from simulplay.sim.variants import parse_silent_parts
    from simulplay.workflows.diagnostics import content_settings

    silent = parse_silent_parts(analysis.get("silent_parts", "skip"), source=f"{src}: key 'analysis.silent_parts'")
    grids = tuple(_strings(analysis["sweep"], "analysis.sweep", src)) if "sweep" in analysis else ()
    sweep, sweep_confirm = analysis_sweep(grids, analysis.get("sweep_confirm", 0), src)
    families = _strings(analysis["sweep_commit"], "analysis.sweep_commit", src) if "sweep_commit" in analysis else []
    sweep_commit = analysis_sweep_commit(families, sweep, src)
    out = _path(base, data.get("out", f"runs/{data.get('name', path.stem)}"), "out", src, must_exist=False)
    store = _path(base, data["store"], "store", src, must_exist=False) if "store" in data else out / "store"
    from simulplay.traces.events import check_events_mode

    talks = tuple(_strings(data["talks"], "talks", src)) if "talks" in data else ()
    events = check_events_mode(data.get("events", "keep"), f"{src}: key 'events'")
    realizations = data.get("realizations", 1)
    if realizations < 1:
        raise _err(src, f"{realizations} is not ≥ 1", field="realizations", accepted="an integer ≥ 1")
    return Experiment(
        name=data.get("name", path.stem), traces=traces, a=data["a"], f=data["f"], rules=tuple(rules), commit=commits,
        reference=data["reference"], backends=tuple(c for c, _ in backends), out=out, store=store,
        realizations=realizations,
        max_chars=data.get("max_chars"), order=_order(data.get("order", "counterbalanced"), src), source=src,
        content=content_settings(data["content"], src, canon) if "content" in data else None,
        quality=quality_settings(data["quality"], src, canon, data["reference"]) if "quality" in data else None,
        executor=_executor(data, src), bootstrap=analysis_bootstrap(analysis, src),
        contrasts=tuple(contrasts), variants=tuple(v for v, _ in variants), edges=edges, silent_parts=silent,
        sweep=sweep, sweep_confirm=sweep_confirm, sweep_commit=sweep_commit, talks=talks, events=events,
        spelled=(*zip(rules, texts), *backends, *variants))


def _executor(data: dict[str, Any], src: str) -> ExecutorSpec:
    """The executor of the file's top-level keys (errors name the key)."""
    from simulplay.synthesis.executors import parse_executor

    return parse_executor(data.get("executor", "serial"), worker_cpus=data.get("worker_cpus", 1.0),
                          worker_gpus=data.get("worker_gpus", 0.0), retries=data.get("retries", 2),
                          workers=data.get("workers"), source=f"{src}: key 'executor'")


def _check_keys(data: dict, schema: dict[str, type], prefix: str, src: str) -> None:
    for key, value in data.items():
        if key not in schema:
            known = [*schema, *(("plugins",) if schema is TOP_KEYS else ())]  # plugins: read first (plugins.py)
            raise _err(src, "is not a known key", field=prefix + key,
                                accepted="one of " + ", ".join(prefix + k for k in known))
        want = schema[key]
        ok = isinstance(value, want) and not (want in (int, float) and isinstance(value, bool))
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            raise _err(src, f"{value!r} is not {_article(want)}", field=prefix + key,
                                accepted=_describe(prefix + key, want))


def _article(t: type | tuple[type, ...]) -> str:
    if isinstance(t, tuple):
        return " or ".join(map(_article, t))
    return {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "a table"}[t]


def _describe(key: str, want: type | None = None) -> str:
    hints = {"traces": 'a list of trace files, e.g. ["traces/sample_traces.jsonl"]',
             "rules": 'a list of RULE strings, e.g. ["immediate", "timer:w=4"]',
             "a": "the name of translator A", "f": "the name of translator F",
             "reference": "the reference rule, e.g. immediate",
             "commit": 'a list of commit policies, e.g. ["eager", "stable:k=2"]'}
    return hints.get(key, _article(want) if want else key)


def _strings(value: list, key: str, src: str) -> list[str]:
    if not value or not all(isinstance(v, str) and v for v in value):
        if key == "analysis.variants" and value == []:
            return []
        raise _err(src, f"{value!r} is not a non-empty list of strings", field=key, accepted=_describe(key))
    return list(value)


def _path(base: Path, value: str, key: str, src: str, must_exist: bool = True) -> Path:
    p = Path(value)
    p = p if p.is_absolute() else base / p
    if must_exist and not p.exists():
        raise _err(src, f"'{value}' does not exist (resolved to {p})", field=key,
                            accepted="a path relative to the experiment file")
    return p


def _backend_specs(value: dict[str, Any] | list, src: str,
                   base: Path) -> tuple[tuple[BackendConfig, str], ...]:
    """The config and spec of the [backend] table, or of each [[backend]] table (their labels distinct)."""
    if isinstance(value, dict):
        return (_backend_spec(value, src, base),)
    if not value or not all(isinstance(t, dict) for t in value):
        raise _err(src, f"{value!r} is not a list of backend tables", field="backend",
                   accepted="[backend] once, or [[backend]] once per engine")
    specs = tuple(_backend_spec(t, src, base, f"backend[{i}]") for i, t in enumerate(value))
    labels = [config.create().label() for config, _ in specs]
    for i, label in enumerate(labels):
        if label in labels[:i]:
            raise _err(src, f"two backends label their rows '{label}'", field=f"backend[{i}]",
                       accepted="backends that differ in name, voice or settings")
    return specs


def _backend_spec(table: dict[str, Any], src: str, base: Path, key: str = "backend") -> tuple[BackendConfig, str]:
    """The backend config and its spec string; relative path settings resolve against the experiment's folder."""
    from simulplay.backends import BACKENDS

    if "name" not in table or not isinstance(table["name"], str):
        raise _err(src, "is missing", field=f"{key}.name", accepted=", ".join(BACKENDS.names()))
    cls = BACKENDS.get(table["name"], f"{src}: key '{key}.name'")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    parts = []
    for setting, value in table.items():
        if setting == "name":
            continue
        if setting not in fields:
            raise _err(src, "is not a setting of backend " + table["name"], field=f"{key}.{setting}",
                                accepted="one of " + ", ".join(f"{key}.{k}" for k in fields))
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if setting in cls.path_settings and text and not Path(text).is_absolute():
            text = str(base / text)
        parts.append(f"{setting}={text}")
    spec = table["name"] + (":" + ",".join(parts) if parts else "")
    from simulplay.backends import parse_backend

    return parse_backend(spec, source=f"{src}: table '{key}'"), spec  # values and files checked now


def _order(value: str, src: str) -> str:
    from simulplay.synthesis.plan import ORDERS, ORDERS_TEXT

    if value not in ORDERS:
        raise _err(src, f"'{value}' is not a synthesis order", field="order", accepted=ORDERS_TEXT)
    return value


def _err(src: str, message: str, **kw) -> InputError:
    """An error located by TOML key (``key 'analysis.draws'``)."""
    return InputError.at(src, message, field_label="key", **kw)
