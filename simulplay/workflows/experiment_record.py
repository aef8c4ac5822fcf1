"""An :class:`~simulplay.workflows.experiment.Experiment` as ``run.json``'s ``experiment``
key and back: the settings become :class:`~simulplay.report.record.RunSettings`, the one
home of the record's keys and format; the content and quality settings, which the report
does not read, are rebuilt here from their ``to_dict()``."""

from __future__ import annotations

from typing import Any

from simulplay.core.errors import InputError
from simulplay.report.record import RunSettings, Written


def written(exp: Any, config: Any) -> str:
    """How the experiment ``exp`` writes ``config`` (a rule, backend config or replay
    variant): its text in the experiment file, else its canonical form."""
    for known, text in exp.spelled:
        if type(known) is type(config) and known == config:
            return text
    if hasattr(config, "canonical"):
        return config.canonical()
    return config.spec()


def experiment_settings(exp: Any) -> RunSettings:
    """The settings of an :class:`~simulplay.workflows.experiment.Experiment` as the record
    holds them (each config with its text)."""

    def pair(configs) -> tuple[Written, ...]:
        return tuple(Written(written(exp, c), c) for c in configs)

    content = None
    if exp.content is not None:  # each field, the recognizer as its text and its config
        from dataclasses import fields

        c = exp.content
        content = {f.name: getattr(c, f.name) for f in fields(c) if f.name != "config"}
        content["pairs"] = [list(p) for p in c.pairs]
        content["recognizer"] = Written(c.recognizer, c.recognizer_config(exp.source)).to_record()
    return RunSettings(
        name=exp.name, traces=exp.traces, a=exp.a, f=exp.f, rules=pair(exp.rules), reference=exp.reference,
        backends=pair(exp.backends), out=exp.out, store=exp.store, realizations=exp.realizations, order=exp.order,
        max_chars=exp.max_chars, executor=exp.executor.to_dict(), bootstrap=exp.bootstrap, contrasts=exp.contrasts,
        variants=pair(exp.variants), edges=exp.edges, silent_parts=exp.silent_parts,
        sweep=tuple(g.text for g in exp.sweep), sweep_confirm=exp.sweep_confirm,
        sweep_commit=tuple(g.text for g in exp.sweep_commit), content=content,
        quality=None if exp.quality is None else exp.quality.to_dict(), talks=exp.talks, events=exp.events,
        commit=exp.commit, source=exp.source)


def experiment_fields(s: RunSettings, source: str = "run.json") -> dict[str, Any]:
    """The fields of the :class:`~simulplay.workflows.experiment.Experiment` a record's
    settings describe (a record without a format is refused: it kept only texts)."""
    from simulplay.grouping.grid import parse_commit_grids, parse_grids
    from simulplay.synthesis.executors import executor_from_dict

    if s.format == 0:
        raise InputError.at(source, "was written before run records had a format", field="experiment.format",
                            field_label="key", accepted="a run folder written by this version (run it again)")
    unknown = [w.text for w in (*s.rules, *s.backends, *s.variants) if w.config is None]
    if unknown:
        raise InputError.at(source, f"names {', '.join(unknown)}, which no loaded module registers",
                            field="experiment", field_label="key",
                            accepted="the plugins the run used, loaded first (--plugin or plugins = [...])")
    rules, backends, variants = (tuple(w.config for w in items) for items in (s.rules, s.backends, s.variants))
    spelled = tuple((w.config, w.text) for w in (*s.rules, *s.backends, *s.variants))
    return dict(
        name=s.name, traces=s.traces, a=s.a, f=s.f, rules=rules, reference=s.reference, backends=backends,
        out=s.out, store=s.store, realizations=s.realizations, order=s.order, max_chars=s.max_chars,
        executor=executor_from_dict(s.executor, source=source), bootstrap=s.bootstrap, contrasts=s.contrasts,
        variants=variants, edges=s.edges,
        silent_parts=s.silent_parts,
        sweep=tuple(parse_grids(list(s.sweep), source=f"{source}: key 'experiment.sweep'")),
        sweep_confirm=s.sweep_confirm, content=_content(s.content),
        sweep_commit=tuple(parse_commit_grids(list(s.sweep_commit), source=f"{source}: key 'experiment.sweep_commit'")),
        quality=_quality(s.quality), talks=s.talks, events=s.events, commit=s.commit, spelled=spelled,
        source=s.source)


def _content(data: dict[str, Any] | None):
    if data is None:
        return None
    from simulplay.recognizers.base import RECOGNIZERS
    from simulplay.workflows.diagnostics import ContentSettings

    recognizer = data["recognizer"]
    config = RECOGNIZERS.from_dict(dict(recognizer["config"]), key="recognizer", source="run.json")
    return ContentSettings(**{**data, "pairs": tuple(tuple(p) for p in data["pairs"]),
                              "recognizer": recognizer["written"], "config": config})


def _quality(data: dict[str, Any] | None):
    if data is None:
        return None
    from simulplay.workflows.quality import QualitySettings

    return QualitySettings(metrics=tuple(data["metrics"]), dnsmos_windows=data["dnsmos_windows"],
                           conditions=tuple(data["conditions"]))
