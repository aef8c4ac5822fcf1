"""The ``[analysis]`` keys of an experiment file: the paired talk bootstrap (a preset
applied), the sensitivity replays, the edge-silence thresholds and the modelled sweep; and
its ``[quality]`` table. Each is checked with errors that name the TOML key."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.core.errors import InputError
from simulplay.grouping import canonical_condition
from simulplay.workflows.quality import METRICS, QualitySettings, limited_conditions, parse_metrics

if TYPE_CHECKING:
    from simulplay.grouping.grid import RuleGrid
    from simulplay.sim.variants import ReplayVariant


def analysis_variants(texts: list[str], src: str) -> tuple[tuple[ReplayVariant, str], ...]:
    """Each variant with its text, each once (two spellings of one variant would replay it twice);
    the tables a ``servers=K,…`` variant names are read here (:mod:`simulplay.formats.service_spec`)."""
    from simulplay.formats.service_spec import with_tables
    from simulplay.sim.variants import parse_variant

    out = tuple((with_tables(v, lambda t: parse_variant(t, source=src, key="analysis.variants")), v) for v in texts)
    for i, (variant, text) in enumerate(out):
        if any(variant == earlier for earlier, _ in out[:i]):
            raise _err(src, f"'{text}' repeats a variant listed before it", field="analysis.variants",
                       accepted="each replay variant once")
    return out


def edge_thresholds(values: list, src: str) -> tuple[float, ...]:
    accepted = "distinct speech-probability thresholds in (0, 1], e.g. [0.3, 0.5, 0.7]"
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise _err(src, f"{v!r} is not a threshold in (0, 1]", field="analysis.edges", accepted=accepted)
    if len(set(values)) != len(values):
        raise _err(src, f"{values!r} repeats a threshold", field="analysis.edges", accepted=accepted)
    return tuple(sorted(float(v) for v in values))


def analysis_sweep(grids: tuple[str, ...], confirm: int, src: str) -> tuple[tuple[RuleGrid, ...], int]:
    """The sweep's grids, parsed once (:mod:`simulplay.grouping.grid`; the run's sweep takes
    them as they are), and how many points to confirm."""
    from simulplay.grouping.grid import parse_grids

    parsed = tuple(parse_grids(list(grids), source=f"{src}: key 'analysis.sweep'"))
    if confirm < 0 or (confirm and not grids):
        raise _err(src, f"{confirm} needs a sweep and must be ≥ 0", field="analysis.sweep_confirm",
                   accepted="a number of grid points ≥ 0, with analysis.sweep")
    return parsed, confirm


def analysis_sweep_commit(families: list[str], sweep: tuple[RuleGrid, ...], src: str) -> tuple[RuleGrid, ...]:
    """The commit-policy families crossed with the sweep's grids (``analysis.sweep_commit``),
    parsed once; they need a sweep."""
    from simulplay.grouping.grid import parse_commit_grids

    parsed = tuple(parse_commit_grids(list(families), source=f"{src}: key 'analysis.sweep_commit'"))
    if parsed and not sweep:
        raise _err(src, f"{list(families)!r} needs a sweep", field="analysis.sweep_commit",
                   accepted="commit-policy families with analysis.sweep")
    return parsed


def analysis_bootstrap(analysis: dict[str, Any], src: str) -> Bootstrap:
    """The paired talk bootstrap of the [analysis] keys, a preset (``bootstrap``) applied: a
    key it sets may be absent or agree with it."""
    keys = {f: analysis[k] for f, k in (("draws", "draws"), ("seed", "seed"), ("method", "quantile_method"),
                                        ("confidence", "confidence"), ("rng", "bootstrap_rng"),
                                        ("talk_order", "talk_order"),
                                        ("tie_tolerance", "tie_tolerance")) if k in analysis}
    from simulplay.analysis.bootstrap import PRESETS, PresetError

    try:
        return Bootstrap.preset(analysis.get("bootstrap"), **keys,
                                names={"rng": "analysis.bootstrap_rng", "method": "analysis.quantile_method"})
    except PresetError as e:
        raise _err(src, str(e), field="analysis.bootstrap", accepted=f"one of {', '.join(PRESETS)}, without a "
                   "different bootstrap_rng or quantile_method") from e
    except ValueError as e:
        raise _err(src, str(e), field="analysis",
                            accepted="draws ≥ 1, a NumPy quantile method or an order:… convention, "
                            "0 < confidence < 1, bootstrap_rng numpy or python, talk_order sorted or given, "
                            "tie_tolerance ≥ 0") from e


def _err(src: str, message: str, **kw) -> InputError:
    """An error located by TOML key (``key 'analysis.draws'``)."""
    return InputError.at(src, message, field_label="key", **kw)


#: The keys of an experiment file's ``[quality]`` table (:class:`QualitySettings`'s fields).
QUALITY_KEYS = {"metrics": list, "dnsmos_windows": int, "conditions": list}


def quality_settings(table: Mapping[str, Any], src: str, rules: Sequence[str], reference: str) -> QualitySettings:
    """An experiment file's ``[quality]`` table (``src`` the file, ``rules`` its canonical
    conditions, ``reference`` its reference rule); every problem names its key
    (``quality.metrics``). Left out: every metric, DNSMOS on every request, every rule."""

    def err(message: str, key: str) -> InputError:
        return InputError.at(src, message, field=f"quality.{key}", field_label="key", accepted=hints[key])

    hints = {"metrics": "a non-empty list of " + ", ".join(f'"{m}"' for m in METRICS),
             "dnsmos_windows": "an integer ≥ 1: the 9.01 s windows of each output's speech DNSMOS scores",
             "conditions": "a list of the experiment's rules, the reference among them, "
                           'e.g. ["immediate", "timer:w=4"]'}
    for key, value in table.items():
        if key not in QUALITY_KEYS:
            raise InputError.at(src, "is not a known key", field=f"quality.{key}", field_label="key",
                                accepted="one of " + ", ".join(f"quality.{k}" for k in QUALITY_KEYS))
        want = QUALITY_KEYS[key]
        if not isinstance(value, want) or isinstance(value, bool) or \
                (want is list and not all(isinstance(v, str) and v for v in value)):
            raise err(f"{value!r} is not {'an integer' if want is int else 'a list of strings'}", key)
    metrics = parse_metrics(table.get("metrics", list(METRICS)), src)
    windows = table.get("dnsmos_windows")
    if windows is not None and windows < 1:
        raise err(f"{windows} is not ≥ 1", "dnsmos_windows")
    if windows is not None and "dnsmos" not in metrics:
        raise err("is set, but quality.metrics leave out dnsmos", "dnsmos_windows")
    conditions = limited_conditions(table.get("conditions", []), list(rules), canonical_condition(reference),
                                    "the experiment's rules", src)
    return QualitySettings(metrics=metrics, dnsmos_windows=windows, conditions=tuple(conditions))
