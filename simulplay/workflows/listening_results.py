"""``simulplay listening-results``: the ratings the listening page exported, as preferences with
a paired bootstrap over excerpts and raters and each rater's consistency on the repeated pairs
(:mod:`simulplay.analysis.listening_prefs`; docs/quality.md#listening-tests).

Every CSV is checked row by row before anything is computed: the columns the page writes, one
test (``test_id``) in all files and, with the key, the key's test and every trial's conditions;
a rating is an integer from −2 to 2, ``repeat`` 0 or 1; a rater rates a trial once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.listening_prefs import consistency, preferences
from simulplay.core.errors import InputError
from simulplay.core.signature import base_signature, merge
from simulplay.core.tables import check_readable, write_table
from simulplay.workflows.listening import REFERENCE

CSV_COLUMNS = ("test_id", "rater", "trial", "excerpt", "condition_a", "condition_b", "repeat", "rating")
ACCEPTED = "a ratings CSV the listening page downloads (" + ", ".join(CSV_COLUMNS) + ", …)"


@dataclass
class ListeningResults:
    """The preference and consistency tables, with one signature for both."""

    preferences: pd.DataFrame
    consistency: pd.DataFrame
    signature: dict[str, Any]
    n_files: int


def read_key(path: str | Path) -> dict[str, Any]:
    """The key file ``listening-test`` wrote beside the page."""
    p = check_readable(path)
    try:
        key = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError.at(p, f"is not JSON ({e})", field="--key", accepted="listening-key.json") from e
    if not isinstance(key, dict) or not {"test_id", "trials", "compare", "signature"} <= set(key):
        raise InputError.at(p, "is not a listening-test key", field="--key", accepted="listening-key.json")
    return key


def _read_one(path: Path) -> pd.DataFrame:
    p = check_readable(path)
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError as e:
        raise InputError.at(p, "is empty", accepted=ACCEPTED) from e
    except (UnicodeDecodeError, pd.errors.ParserError) as e:
        raise InputError.at(p, f"is not a CSV table ({str(e).splitlines()[0]})", accepted=ACCEPTED) from e
    missing = [c for c in CSV_COLUMNS if c not in df]
    if missing:
        raise InputError.at(p, f"lacks the column(s) {', '.join(missing)}", accepted=ACCEPTED)
    if df.empty:
        raise InputError.at(p, "has no ratings (a header only)", accepted=ACCEPTED)
    for col, allowed in (("rating", {"-2", "-1", "0", "1", "2"}), ("repeat", {"0", "1"})):
        bad = ~df[col].str.strip().isin(allowed)
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise InputError.at(p, f"'{df[col].iloc[i]}' is not a {col}", row=i + 2, field=col,
                                accepted=", ".join(sorted(allowed, key=int)))
    bad = ~df["trial"].str.strip().str.fullmatch(r"[0-9]+")
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise InputError.at(p, f"'{df['trial'].iloc[i]}' is not a trial number", row=i + 2, field="trial",
                            accepted="a whole number ≥ 1")
    return df.assign(file=str(p), rating=df["rating"].astype(int), repeat=df["repeat"].astype(int),
                     trial=df["trial"].astype(int))


def read_ratings(paths: Sequence[str | Path], key: dict[str, Any] | None) -> pd.DataFrame:
    """Every CSV's ratings, checked (module docstring), in one table."""
    frames = [_read_one(Path(p)) for p in paths]
    want = key["test_id"] if key else str(frames[0]["test_id"].iloc[0])
    whose = "the key's" if key else f"{paths[0]}'s"
    for p, df in zip(paths, frames):
        other = df["test_id"] != want
        if other.any():
            i = int(other.to_numpy().nonzero()[0][0])
            raise InputError.at(p, f"belongs to test {df['test_id'].iloc[i]}, not to {whose} test {want}",
                                row=i + 2, field="test_id", accepted="ratings of one test (one key)")
    ratings = pd.concat(frames, ignore_index=True)
    dup = ratings.duplicated(["rater", "trial"], keep="first")
    if dup.any():
        r = ratings[dup].iloc[0]
        raise InputError.at(r["file"], f"rater '{r['rater']}' rates trial {r['trial']} a second time",
                            field="rater", accepted="each rater's ratings once (one name per rater)")
    if key:
        _check_against_key(ratings, key)
    return ratings


def _check_against_key(ratings: pd.DataFrame, key: dict[str, Any]) -> None:
    trials = {int(t["trial"]): t for t in key["trials"]}
    for row in ratings.itertuples(index=False):
        t = trials.get(int(row.trial))
        fields = ("excerpt", "condition_a", "condition_b", "repeat")
        bad = [f for f in fields if t is not None and str(getattr(row, f)) != str(t[f])]
        if t is None or bad:
            what = f"trial {row.trial} is not in the key" if t is None else f"trial {row.trial}'s {bad[0]} " \
                f"'{getattr(row, bad[0])}' differs from the key's '{t[bad[0]]}'"
            raise InputError.at(row.file, what, field="trial" if t is None else bad[0],
                                accepted="the ratings of the test the key describes")


def comparisons(key: dict[str, Any] | None, ratings: pd.DataFrame) -> list[tuple[str, str]]:
    """``(condition, versus)``: the second compared condition over the first, then each over
    the hidden reference when the test had one (the key's order; without a key, sorted)."""
    if key:
        first, second = key["compare"]
    else:
        names = sorted(set(ratings["condition_a"]) | set(ratings["condition_b"]))
        pair = [n for n in names if n != REFERENCE]
        if len(pair) != 2:
            raise InputError.at(str(ratings["file"].iloc[0]), f"names {len(pair)} conditions besides the reference",
                                field="condition_a", accepted="the two conditions of one test")
        first, second = pair
    has_ref = (ratings["condition_a"] == REFERENCE).any() or (ratings["condition_b"] == REFERENCE).any()
    return [(second, first)] + ([(first, REFERENCE), (second, REFERENCE)] if has_ref else [])


def listening_results(paths: Sequence[str | Path], key_path: str | Path | None, boot: Bootstrap) -> ListeningResults:
    """Read and check the ratings, then the preference and consistency tables."""
    key = read_key(key_path) if key_path is not None else None
    ratings = read_ratings(paths, key)
    prefs = preferences(ratings, comparisons(key, ratings), boot)
    sig = merge(key["signature"] if key else None,
                base_signature(table="listening-results", test=str(ratings["test_id"].iloc[0]),
                               resample="excerpts,raters", scale="-2..2", files=len(paths)), boot.signature())
    return ListeningResults(prefs, consistency(ratings), sig, len(paths))


def results_paths(out: Path) -> tuple[Path, Path]:
    """The preference table (``OUT``) and the consistency table beside it (``OUT.raters``)."""
    return out, out.with_name(f"{out.stem}.raters{out.suffix}")


def write_results(res: ListeningResults, out: Path) -> list[Path]:
    p_pref, p_raters = results_paths(out)
    write_table(res.preferences, p_pref, res.signature, kind="listening-results", signature_column=True)
    write_table(res.consistency, p_raters, {**res.signature, "table": "listening-consistency"},
                kind="listening-consistency", signature_column=True)
    return [p_pref, p_raters]
