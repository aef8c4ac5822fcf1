"""simulplay: replay simultaneous-translation text streams through TTS and serial playback.

The method is that of Hieu Minh Truong and Dung D. Le, "Text Grouping Changes Completion-Time
Comparisons in Long-Form Simultaneous Speech Translation", arXiv:2611.12501 (2026). Docstrings
cite its tables, figures and appendices as "Truong & Le (2026), Table 18"; the report's
table and figure numbers are that paper's.

The package's attributes are its Python API (:mod:`simulplay.api`): ``read_trace``,
``group``, ``synthesize``, ``replay``, ``eta``, ``bootstrap``, ``load_run`` and ``sweep``, each
returning a frozen result object that holds its pandas DataFrames with their signatures.
They are loaded on first use (PEP 562), so that ``import simulplay.traces`` and the
command line do not pay for them.
"""

from simulplay.core.version import __version__

#: The Python API, loaded from :mod:`simulplay.api` when first used.
_API = ("read_trace", "group", "synthesize", "replay", "eta", "bootstrap", "load_run", "sweep", "Run",
        "EtaOutput", "ManifestOutput", "ReplayOutput", "SignedTable", "SweepOutput")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from simulplay import api

        return getattr(api, name)
    raise AttributeError(f"module 'simulplay' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
