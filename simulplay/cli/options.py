"""Option declarations shared by the commands, defined once: output paths, ``--allow-incomplete``,
``--quiet``, ``--release``/``--chunks`` and the paired-bootstrap flags, with the checks that go
with them.

Each factory returns a fresh ``typer.Option`` (a command may word its help to say what it
excludes or resamples); the flag names and the conventions in the help live here. Library
modules are imported inside the checks, so that ``simulplay --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from simulplay.core.errors import InputError

OUT_HELP = "Output table: .parquet (canonical), .csv or .md, chosen by the suffix."

ALLOW_INCOMPLETE_HELP = ("Exclude outputs with failed requests instead of refusing; the count is recorded in every "
                         "signature.")
RELEASE_HELP = ("request: a part is a whole request, ready when it is done (primary); chunk: a part is a chunk, "
                "ready at its recorded time (reads the chunk table, --chunks).")
CHUNKS_HELP = "Chunk table for --release chunk (default: MANIFEST's sibling *.chunks.parquet)."
DRAWS, CONFIDENCE = 10_000, 0.95
#: simulplay's defaults (kept equal to simulplay.analysis.bootstrap's): full-talk endpoint
#: intervals (η, contrasts, interactions, edges, blocks) seed 1032026 (Truong & Le (2026)'s), NumPy's
#: generator, sorted talk ids and order:floor((n+1)a); word timing seed 20261005 with
#: NumPy's linear quantiles (Truong & Le (2026), Table 17). --bootstrap paper selects that paper's
#: generator and ranks (simulplay.analysis.bootstrap.PRESETS).
BOOT_SEED, QUANTILE_METHOD, BOOT_RNG, TALK_ORDER = 1032026, "order:floor((n+1)a)", "numpy", "sorted"
WORD_TIMING_SEED, WORD_TIMING_QUANTILE = 20261005, "linear"
QUANTILE_HELP = ("Interval ends from the sorted bootstrap means: order:floor((n+1)a) (default; 10,000 draws, 95 %: "
                 "the 250th and 9751st), order:floor(na)+1, order:int(nq) (--bootstrap paper), or a NumPy quantile "
                 "method (linear, inverted_cdf, …); defined in the docs, Concepts: Bootstrap conventions.")
RNG_HELP = ("Generator of the draws × talks index matrix: numpy (default_rng(seed), the default) or python "
            "(random.Random(seed), one randrange per cell; --bootstrap paper). In the signature (boot_rng).")
PRESET_HELP = ("A named setting: paper selects --bootstrap-rng python and --quantile-method order:int(nq), "
               "which with the default seed 1032026 and 10,000 draws give every interval Truong & Le (2026) print "
               "from their per-talk values (with the talks in their table's order). A different "
               "--bootstrap-rng or --quantile-method with it is an error.")
TALK_ORDER_HELP = ("Which talk each matrix column is (it changes the draws): sorted (talk ids as text, the "
                   "default) or given (the input's order, e.g. a paper table's rows). In the signature (talk_order).")


COMMIT_HELP = ("Commit policy, repeatable: what of a revising trace (updates with retract) is spoken before "
               "grouping: eager (each update as it arrives; the default, left out of condition names), "
               "stable[:k=2] (unit=char: by character), hold[:t=1] (seconds), mask[:k=3], final (a "
               "non-causal oracle). Each output's condition is POLICY+RULE, e.g. stable:k=2+punct. Without it "
               "a revising trace is refused.")


def commit_option(help: str = COMMIT_HELP) -> Any:
    """``--commit POLICY``, repeatable (None when not given)."""
    return typer.Option(None, "--commit", help=help)


def out_option(help: str, *, flag: str = "--out", table: bool = True) -> Any:
    """A required output path (``--out PATH``); ``table`` appends the suffix convention
    (:data:`OUT_HELP`) to the help."""
    return typer.Option(..., flag, help=help + (" " + OUT_HELP if table else ""))


def table_option(flag: str, help: str) -> Any:
    """An optional extra output table (``--per-talk PATH`` …), in the suffix convention."""
    return typer.Option(None, flag, help=help + " " + OUT_HELP)


def allow_incomplete_option(help: str = ALLOW_INCOMPLETE_HELP) -> Any:
    """``--allow-incomplete``: exclude what is incomplete and count it, instead of refusing."""
    return typer.Option(False, "--allow-incomplete", help=help)


def release_option(help: str = RELEASE_HELP) -> Any:
    """``--release request|chunk`` (default ``request``; parsed by ``sim.variants.parse_release``)."""
    return typer.Option("request", "--release", help=help)


def chunks_option(help: str = CHUNKS_HELP) -> Any:
    """``--chunks PATH``: the chunk table a chunk release reads."""
    return typer.Option(None, "--chunks", help=help)


def quiet_option(help: str = "No progress bar.") -> Any:
    """``--quiet``."""
    return typer.Option(False, "--quiet", help=help)


def draws_option(help: str = "Paired talk-bootstrap draws.") -> Any:
    return typer.Option(DRAWS, "--draws", min=1, help=help)


def seed_option(flag: str = "--seed", help: str = "Bootstrap seed (0 is a seed).",
                default: int = BOOT_SEED) -> Any:
    return typer.Option(default, flag, min=0, help=help)


def quantile_option(help: str = QUANTILE_HELP, default: str | None = None) -> Any:
    """``--quantile-method``: how the interval ends are read off the bootstrap means
    (``None``: :data:`QUANTILE_METHOD`, or the ``--bootstrap`` preset's)."""
    return typer.Option(default, "--quantile-method", help=help)


TIE_HELP = ("A per-talk value whose magnitude is below this is a tie (n_zero), neither negative nor positive, "
            "and taken as 0; in the values' unit (1e-6: 1 µs for seconds). Recorded in the signature.")


def tie_option(help: str = TIE_HELP) -> Any:
    """``--tie-tolerance X``: per-talk values within X of zero are ties (default 1e-6)."""
    from simulplay.analysis.bootstrap import TIE_TOLERANCE

    return typer.Option(TIE_TOLERANCE, "--tie-tolerance", min=0.0, help=help)


def talks_option(help: str = "Only these talk ids (repeatable; commas separate several).") -> Any:
    """``--talks ID…``: pick talks (every one when not given)."""
    return typer.Option([], "--talks", help=help, metavar="ID")


def talks_from_option(help: str = "Only the talk ids listed in this file (one per line; # starts a comment); "
                      "with --talks, both.") -> Any:
    """``--talks-from FILE``: pick the talks a file lists."""
    return typer.Option(None, "--talks-from", help=help)


EVENTS_HELP = ("Non-speech event tags in the text ((Applaus), (Laughter), [Music], …): keep (spoken as text, the "
               "default; a warning names their counts) or drop (removed before grouping; an update left empty is "
               "skipped). Recorded in the signature when the traces hold any.")


def events_option(help: str = EVENTS_HELP) -> Any:
    """``--events keep|drop``: what event tags do (:mod:`simulplay.traces.events`)."""
    return typer.Option("keep", "--events", help=help)


def confidence_option(help: str = "Interval coverage, in (0, 1).") -> Any:
    return typer.Option(CONFIDENCE, "--confidence", help=help)


def rng_option(help: str = RNG_HELP) -> Any:
    """``--bootstrap-rng numpy|python``: the generator of the index matrix (``None``:
    :data:`BOOT_RNG`, or the ``--bootstrap`` preset's)."""
    return typer.Option(None, "--bootstrap-rng", help=help, show_default=False)


def preset_option(help: str = PRESET_HELP) -> Any:
    """``--bootstrap NAME``: a named bootstrap setting (``paper``)."""
    return typer.Option(None, "--bootstrap", help=help)


def talk_order_option(help: str = TALK_ORDER_HELP) -> Any:
    """``--talk-order sorted|given``: the talks as the index matrix's columns."""
    return typer.Option(TALK_ORDER, "--talk-order", help=help)


def bootstrap(draws: int, seed: int, method: str | None, confidence: float, *, seed_flag: str = "--seed",
              rng: str | None = None, preset: str | None = None, talk_order: str = TALK_ORDER,
              tie_tolerance: float | None = None) -> Any:
    """The paired :class:`~simulplay.analysis.bootstrap.Bootstrap` from the command's flags
    (``preset``: ``--bootstrap``, which sets ``rng`` and ``method``; given as well, they
    must agree with it; ``None``: the defaults; ``tie_tolerance``: ``--tie-tolerance``, ``None``
    the default); a bad value is an InputError naming the
    flags of this command (``seed_flag``: ``--seed``, or ``--boot-seed`` for ``blocks``)."""
    from simulplay.analysis.bootstrap import PRESETS, RNGS, TALK_ORDERS, Bootstrap, PresetError

    for flag, given, known in (("--bootstrap-rng", rng, RNGS), ("--talk-order", talk_order, TALK_ORDERS)):
        if given is not None and given not in known:
            raise InputError.at(flag, f"unknown value '{given}'", accepted=" or ".join(known))
    chosen = {k: v for k, v in (("rng", rng), ("method", method), ("tie_tolerance", tie_tolerance)) if v is not None}
    try:
        return Bootstrap.preset(preset, names={"rng": "--bootstrap-rng", "method": "--quantile-method"}, draws=draws,
                                seed=seed, confidence=confidence, talk_order=talk_order, **chosen)
    except PresetError as e:
        raise InputError.at("--bootstrap", str(e), accepted=f"one of {', '.join(PRESETS)}, without a different "
                            "--bootstrap-rng or --quantile-method") from e
    except ValueError as e:
        flags = [seed_flag, "--draws", "--quantile-method", "--confidence"]
        raise InputError.at("/".join(flags), str(e), accepted=f"{seed_flag.lstrip('-')} ≥ 0, draws ≥ 1, a NumPy "
                            "quantile method or an order:… convention, and 0 < confidence < 1") from e


SILENT_PARTS_HELP = ("What a part without audio (a punctuation-only request) does to playback; it costs its "
                     "service time either way. skip: not played (as SimulEval), so it neither starts playback "
                     "nor adds idle. hold: Eq. 1 taken literally, p_j = max(r_j, C_{j−1}), C_j = p_j: it holds the "
                     "clock at its readiness, so a silent first part is the first playback and a silent last "
                     "part ready after the audio moves the end (and is the limiting part). Recorded in every "
                     "signature (silent).")


def silent_parts_option(help: str = SILENT_PARTS_HELP) -> Any:
    """``--silent-parts skip|hold`` (:mod:`simulplay.sim.playback`)."""
    return typer.Option("skip", "--silent-parts", help=help)


def check_outputs(*paths: Path | None, allowed: Sequence[str] | None = None) -> None:
    """Every given output path is writable in a known format (``allowed`` suffixes, by
    default the table formats), before any work: its folder exists and a test file can be
    written and removed there (:func:`simulplay.core.tables.check_writable`); else one line, exit code 2."""
    from simulplay.core.tables import TABLE_SUFFIXES, check_writable

    for p in paths:
        if p:
            check_writable(p, allowed or TABLE_SUFFIXES)


def beside(out: Path, infix: str) -> Path:
    """``OUT`` with ``infix`` before its suffix (``e.csv`` → ``e.contrasts.csv``)."""
    return out.with_name(out.stem + infix + out.suffix)


SERVICE_HELP = ("measured, zero, scale=F (service time × F), or fit: a modelled clock, each request's service "
                "time predicted as b0 + b1·audio_s + b2·chars by a least-absolute-deviations fit over the replayed "
                "requests, one per backend and realization (coefficients in the signature's 'fit'); or "
                "servers=K,share=G, optionally with ,load_curve=TABLE and ,slowdown=F|TABLE: shared servers "
                "(replay --servers).")
SERVERS_HELP = ("Shared servers: the outputs of a share group (--share) queue for K identical workers, one request "
                "in flight per output; a request starts when it is eligible (dispatched, its output's previous "
                "request ready) and a worker is free, and takes its measured service × the load curve's slowdown "
                "at the number then in service. K ≥ the outputs with no load curve is the plain replay.")
SHARE_HELP = ("Share group of --servers (never across conditions, backends or realizations): panel (every talk and "
              "system), talk (one talk's systems), system (one system's talks) or output (each alone).")
LOAD_CURVE_HELP = ("Load curve of --servers (CSV or Parquet; `simulplay load` writes one): columns concurrency (1, "
                   "…, up to K or beyond) and service_p50_s; slowdown(c) = p50(c) / p50(1), linear between levels. "
                   "Default: slowdown 1. Its SHA-256 goes into the signature.")
SLOWDOWN_HELP = ("Calibrated slowdown of --servers: a factor (1.2: every service time × 1.2) or a calibration table "
                 "(`simulplay live --predict` writes calibration.parquet; columns in_flight and slowdown): service × "
                 "the factor at the number of requests in flight (queued or in service) when the request starts, "
                 "linear between listed numbers, flat beyond. Default: 1. The points go into the signature.")
