"""Signatures: a structured record of everything that shapes a number (docs/concepts.md#signatures).

A signature is a plain ``dict``. It is stored structured (Parquet metadata, JSON) and
rendered as one line only for display, in a fixed key order with ``None`` left out and
the version last, in the manner of sacreBLEU's signatures. It is never parsed back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from simulplay.core.keys import PER_ROW_DISPLAY
from simulplay.core.plugins import with_plugins
from simulplay.core.version import __version__

#: Display order; keys not listed follow in alphabetical order, ``version`` is last.
KEY_ORDER = (
    "table",
    "a",
    "f",
    "reference",
    "rule",
    "release",
    "splitter",
    "backend",
    "realization",
    "settings",
    "preset",
    "waveforms",
    "seed",
    "reuse",
    "clock",
    "service",
    "trim",
    "silent",
    "threshold",
    "prebuffer",
    "frame",
    "recognizer",
    "trace",
    "draws",
    "boot_seed",
    "quantile",
    "confidence",
    "boot_rng",
    "talk_order",
    "tie_tolerance",
    "excluded",
)


def base_signature(**fields: Any) -> dict[str, Any]:
    """A signature dict with the simulplay version added."""
    sig = with_plugins({k: v for k, v in fields.items() if v is not None})
    sig["version"] = f"simulplay-{__version__}"
    return sig


def merge(*parts: Mapping[str, Any] | None) -> dict[str, Any]:
    """Later parts win; ``None`` values are dropped; the ``plugin`` entries of all parts are
    kept (with those of the plugin components the result names, :mod:`simulplay.core.plugins`)."""
    out: dict[str, Any] = {}
    for part in parts:
        if part:
            out.update({k: v for k, v in part.items() if v is not None})
    return with_plugins(out, parts)


def _render_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Mapping):
        return settings_hash(value)
    if isinstance(value, (list, tuple)):
        return ",".join(_render_value(v) for v in value)
    return str(value)


def format_signature(sig: Mapping[str, Any]) -> str:
    """Render a signature as ``key:value|key:value|…|version:simulplay-X``."""
    keys = [k for k in KEY_ORDER if k in sig]
    keys += sorted(k for k in sig if k not in KEY_ORDER and k != "version")
    if "version" in sig:
        keys.append("version")
    return "|".join(f"{k}:{_render_value(sig[k])}" for k in keys if sig[k] is not None)


def settings_hash(settings: Mapping[str, Any]) -> str:
    """Short stable hash of a settings mapping (canonical JSON, sorted keys)."""
    blob = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


#: Signature keys that are table columns: rows differing only in them share one display.


def compact_signatures(sigs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Rows that differ only in keys shown as table columns (rule, reference, backend,
    realization, threshold) share one displayed signature with those keys marked ``(per row)``."""
    per_row = set(PER_ROW_DISPLAY)
    if len(sigs) < 2:
        return list(sigs)
    keys = set().union(*sigs)
    varying = {k for k in keys if len({str(s.get(k)) for s in sigs}) > 1}
    if not varying or not varying <= per_row:
        return list(sigs)
    return [{k: ("(per row)" if k in varying else v) for k, v in sigs[0].items()}]
