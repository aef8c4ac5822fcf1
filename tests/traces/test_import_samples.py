"""docs/importing.md's sample log lines stay true: each sample's files are written as the
page shows them, each command shown is run as written, and the rows it writes are the rows
the page shows (the shown columns, every row, in order). The page's rows were worked out by
hand from the import rules the page states; this test keeps code and page in step."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "importing.md"
MARK = re.compile(r"^<!-- sample: ([\w-]+) -->$", re.M)
IMPORTERS = {"simuleval", "simuleval-speech", "simuleval-segmented", "simulstream"}


def samples(text: str) -> dict[str, list]:
    """Each sample's items in page order: ("file", name, content), ("command", line) and
    ("rows", header, rows), read from the marker to the next marker or heading."""
    out = {}
    for m in MARK.finditer(text):
        end = re.compile(r"^(<!-- sample: |#{1,3} )", re.M).search(text, m.end())
        body = text[m.end():end.start() if end else None]
        items, name = [], None
        lines = body.splitlines()
        k = 0
        while k < len(lines):
            line = lines[k]
            named = re.match(r"^`([\w.-]+)`[,:]? ", line + " ")
            if named and not line.startswith("```"):
                name = named.group(1)
            if line.startswith("```"):
                lang, block = line[3:].strip(), []
                k += 1
                while not lines[k].startswith("```"):
                    block.append(lines[k])
                    k += 1
                if lang == "sh":
                    items.append(("command", "\n".join(block).strip()))
                else:
                    assert name, f"sample {m.group(1)}: a {lang} block with no file name before it"
                    items.append(("file", name, "\n".join(block) + "\n"))
                    name = None
            elif line.startswith("| "):
                header = [c.strip() for c in line.strip("|").split("|")]
                rows = []
                k += 2  # the separator line
                while k < len(lines) and lines[k].startswith("| "):
                    rows.append([c.strip() for c in lines[k].strip().strip("|").split("|")])
                    k += 1
                items.append(("rows", header, rows))
                continue
            k += 1
        out[m.group(1)] = items
    return out


def test_the_sample_reader_reads_files_commands_and_rows():
    text = ("<!-- sample: x -->\n\n`a.log`, a log:\n\n```json\n{\"a\": 1}\n```\n\n```sh\nsimulplay v a.log\n```\n\n"
            "| k | v |\n| --- | --- |\n| 1 | x y |\n\n## Next\n\n| z |\n")
    assert samples(text) == {"x": [("file", "a.log", "{\"a\": 1}\n"), ("command", "simulplay v a.log"),
                                   ("rows", ["k", "v"], [["1", "x y"]])]}


def test_every_importer_has_a_sample():
    assert set(samples(PAGE.read_text(encoding="utf-8"))) == IMPORTERS


def same_cell(shown: str, value) -> bool:
    """A shown cell against a written value: numbers to 1e-9 s, booleans by name, text exactly."""
    if isinstance(value, (bool, type(pd.NA))) or str(value) in ("True", "False"):
        return shown == str(bool(value))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return abs(float(shown) - float(value)) < 1e-9
    return shown == str(value)


@pytest.mark.parametrize("name", sorted(IMPORTERS))
def test_the_sample_imports_to_the_rows_shown(name, tmp_path):
    items = samples(PAGE.read_text(encoding="utf-8"))[name]
    pending = None
    checked = 0
    for item in items:
        if item[0] == "file":
            (tmp_path / item[1]).write_text(item[2], encoding="utf-8")
        elif item[0] == "command":
            argv = shlex.split(item[1])
            assert argv[0] == "simulplay" and "--out" in argv, item[1]
            run_cli(*argv[1:], cwd=tmp_path, check=True)
            pending = tmp_path / argv[argv.index("--out") + 1]
        else:
            assert pending is not None, f"sample {name}: rows with no command before them"
            header, rows = item[1], item[2]
            written = pd.read_csv(pending, keep_default_na=False, dtype={"talk_id": str, "text": str})
            assert len(written) == len(rows), f"{pending.name}: {len(written)} rows, the page shows {len(rows)}"
            for k, (row, shown) in enumerate(zip(written.to_dict("records"), rows)):
                for column, cell in zip(header, shown):
                    assert same_cell(cell, row[column]), f"{pending.name} row {k} {column}: {row[column]!r}, " \
                                                         f"the page shows {cell!r}"
            pending, checked = None, checked + 1
    assert checked >= 1, f"sample {name}: no rows checked"
