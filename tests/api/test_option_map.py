"""The Python API speaks the command line's language: docs/api.md's option map lists every
option of each command that has an API function and every parameter of that function,
checked here against the real typer commands and the real signatures; a flag and its
parameter share one name (``--quantile-method`` is ``quantile_method``) and one default;
what only one side has says why. The renamed keywords still work, with a warning, and
``bootstrap="paper"`` is the command line's ``--bootstrap paper``."""

from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path

import pandas as pd
import pytest
import typer.main

import simulplay
import simulplay.api
from simulplay.cli.app import app
from tests.support import cli

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api.md"
ROW = re.compile(r"^\| `([\w-]+)` \| (`[^`]+`|—) \| (`\w+`|—) \| (`\w+`|—) \| (.*?) \|$")
#: Pairs whose names differ on purpose: a progress bar on the command line, a Progress object in Python.
RENAMED_ON_PURPOSE = {("synth", "--quiet"), ("sweep", "--quiet")}


def option_map() -> list[tuple[str, str | None, str | None, str | None, str]]:
    """The rows of docs/api.md's option map: (command, option, function, parameter, note),
    None for a dash."""
    text = PAGE.read_text(encoding="utf-8")
    table = text[text.index("<!-- The table below is read by tests/api/test_option_map.py"):]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        m = ROW.match(line)
        if line.startswith("| command") or line.startswith("| ---"):
            continue
        assert m, f"docs/api.md: an option map row out of shape: {line}"
        rows.append(tuple(None if v == "—" else v.strip("`") for v in m.groups()[:4]) + (m.group(5).strip(),))
    return rows


@functools.cache
def command_options(name: str) -> dict:
    """A command's parameters by the label the map uses: ``--flag``, or an argument's name in capitals."""
    command = typer.main.get_command(app).commands[name]
    return {(p.name.upper() if p.param_type_name == "argument" else p.opts[0]): p for p in command.params}


def mapped() -> tuple[list, dict[str, str]]:
    rows = option_map()
    functions = {c: f for c, _, f, p, _ in rows if f and p and c}
    return rows, functions


def test_the_map_lists_every_option_of_each_command_and_nothing_else():
    rows, functions = mapped()
    assert set(functions) == {"validate", "group", "synth", "replay", "eta", "bootstrap", "sweep", "report"}
    for command in functions:
        listed = [o for c, o, _, _, _ in rows if c == command and o]
        assert len(listed) == len(set(listed)), f"{command}: an option twice"
        assert set(listed) == set(command_options(command)), \
            f"{command}: in the map, not the command: {set(listed) - set(command_options(command))}; " \
            f"in the command, not the map: {set(command_options(command)) - set(listed)}"


def test_the_map_lists_every_parameter_of_each_function_and_nothing_else():
    rows, functions = mapped()
    assert set(functions.values()) == {n for n in simulplay.api.__all__ if inspect.isfunction(getattr(simulplay, n))}
    for function in set(functions.values()):
        listed = [p for _, _, f, p, _ in rows if f == function and p]
        params = inspect.signature(getattr(simulplay, function)).parameters
        assert sorted(listed) == sorted(params), f"{function}: map {sorted(listed)}, signature {sorted(params)}"
        assert {c for c, _, f, _, _ in rows if f == function} == {functions_of(rows)[function]}


def functions_of(rows) -> dict[str, str]:
    return {f: c for c, _, f, p, _ in rows if f and p}


def test_a_flag_and_its_parameter_share_their_name_and_default():
    rows, _ = mapped()
    for command, option, function, param, note in rows:
        if option is None or param is None:
            assert note.startswith(("CLI-only: ", "API-only: ")) and len(note) > 20, \
                f"{command} {option or param}: on one side only, with no reason"
            continue
        if not option.startswith("--"):
            continue  # an argument: the function's positional parameter
        if (command, option) in RENAMED_ON_PURPOSE:
            assert note, f"{command} {option}: renamed with no reason"
            continue
        assert param == option[2:].replace("-", "_"), f"{command} {option} is {function}({param}=…)"
        flag = command_options(command)[option]
        default = inspect.signature(getattr(simulplay, function)).parameters[param].default
        if flag.required:
            continue
        empty = (None, (), [])
        same = (flag.default in empty and default in empty) or flag.default == default
        if param == "out" and function == "synthesize":
            continue  # required on the command line
        assert same, f"{command} {option} defaults to {flag.default!r}, {function}({param}=) to {default!r}"


def test_the_map_check_sees_a_missing_option(monkeypatch):
    """The check fails when a command gains an option the map does not list."""
    rows = [r for r in option_map() if r[1] != "--talk-order" or r[0] != "eta"]
    monkeypatch.setattr(__import__(__name__, fromlist=["x"]), "option_map", lambda: rows)
    with pytest.raises(AssertionError, match="in the command, not the map: {'--talk-order'}"):
        test_the_map_lists_every_option_of_each_command_and_nothing_else()


# ---- renamed keywords, and the paper's bootstrap -------------------------------------------

PER_TALK = pd.DataFrame({"talk_id": list("abcdef"), "u_s": [0.5, -0.2, 0.9, 0.1, 0.3, -0.4],
                         "w_s": [0.1, 0.2, 0.0, -0.3, 0.2, 0.1]})


@pytest.mark.parametrize("old, new, value", [("method", "quantile_method", "linear"),
                                             ("rng", "bootstrap_rng", "python"), ("pairs", "pair", ["u_s,w_s"])])
def test_an_old_keyword_still_works_with_a_deprecation_warning(old, new, value):
    expected = simulplay.bootstrap(PER_TALK, value=["u_s", "w_s"], draws=300, **{new: value})
    with pytest.warns(DeprecationWarning, match=f"{old}= is deprecated .* use {new}="):
        got = simulplay.bootstrap(PER_TALK, value=["u_s", "w_s"], draws=300, **{old: value})
    pd.testing.assert_frame_equal(got.table, expected.table)
    assert got.signatures == expected.signatures


def test_the_paper_preset_is_a_keyword_and_equals_the_command(tmp_path):
    """eta(…, bootstrap="paper") writes the table `simulplay eta --bootstrap paper` writes,
    signatures included, and its signature names the paper's generator and ranks."""
    from tests.api.test_api import random_manifest, same_table

    summary = simulplay.replay(random_manifest(n_talks=5, seed=2))
    summary.to_frame().to_csv(tmp_path / "s.csv", index=False)
    cli.run_cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "500",
                "--bootstrap", "paper", "--out", tmp_path / "e.parquet", check=True)
    api = simulplay.eta(tmp_path / "s.csv", a="A", f="F", reference="immediate", draws=500, bootstrap="paper")
    same_table(api.eta, api.signatures, tmp_path / "e.parquet", drop=("signature",))
    assert {(s["boot_rng"], s["quantile"]) for s in api.signatures} == {("python", "order:int(nq)")}
    default = simulplay.eta(tmp_path / "s.csv", a="A", f="F", reference="immediate", draws=500)
    assert default.eta["ci_low_s"].tolist() != api.eta["ci_low_s"].tolist()  # the preset changed the draws


def test_the_paper_preset_gives_the_papers_table_2_intervals():
    """Truong & Le (2026), Table 2, from their Table 4's per-talk XTTS η (the talks in its
    row order): η(2) −83.63 [−124.22, −44.66], η(4) −122.50 [−180.03, −69.92] seconds."""
    out = simulplay.bootstrap(ROOT / "examples" / "paper" / "table4_xtts.csv", talk="talk", value=["eta2", "eta4"],
                              bootstrap="paper", talk_order="given").table
    got = [[round(v, 2) for v in row] for row in out[["mean", "ci_low", "ci_high"]].to_numpy()]
    assert got == [[-83.63, -124.22, -44.66], [-122.50, -180.03, -69.92]]


def test_the_page_lists_every_renamed_keyword():
    """docs/api.md's list of renamed keywords is the one the functions keep working (@renamed)."""
    text = PAGE.read_text(encoding="utf-8")
    paragraph = text[text.index("Renamed since"):text.index("<!-- The table below")]
    listed = set(re.findall(r"`(\w+)`\s+→\s+`(\w+)`", paragraph))
    kept = {(old, new) for name in simulplay.api.__all__
            for old, new in getattr(getattr(simulplay.api, name), "renamed", {}).items()}
    assert kept and listed == kept, (listed - kept, kept - listed)
