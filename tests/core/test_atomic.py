"""Files are written with the mode any tool gives a new file: 0666 less the umask (mkstemp,
which the atomic writes start from, makes 0600, which hid tables from a group's readers)."""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest

from simulplay.core.atomic import atomic_path, write_atomic
from simulplay.core.tables import write_table


@pytest.fixture
def umask():
    before = os.umask(0o022)
    os.umask(before)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(before)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600), (0o002, 0o664)])
def test_every_atomic_write_takes_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    write_atomic(tmp_path / "sub" / "a.bin", b"x")
    with atomic_path(tmp_path / "b.txt") as tmp:
        tmp.write_text("y")
    write_table(pd.DataFrame({"v": [1.0]}), tmp_path / "t.csv", {"table": "test"}, kind="test")
    write_table(pd.DataFrame({"v": [1.0]}), tmp_path / "t.parquet", {"table": "test"}, kind="test")
    for name in ("sub/a.bin", "b.txt", "t.csv", "t.parquet"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
