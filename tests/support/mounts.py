"""Real file systems with faults, for the tests of what a command does when the machine refuses:
a small tmpfs that fills up (ENOSPC), a read-only bind mount (EROFS); ``/proc`` is a folder
where no file can be made. Mounting needs root (CI runs as root); every mount is undone in
the fixture's finalizer, in reverse order."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs or a bind mount needs root (CI is root)")

#: A folder in which no file can be made (writing one fails with ENOENT).
NO_FILES_HERE = Path("/proc")


class Mounts:
    """Mounts made by one test (or module), undone by :meth:`undo`."""

    def __init__(self) -> None:
        self.points: list[Path] = []

    def tmpfs(self, point: Path, size: str) -> Path:
        """A tmpfs of ``size`` (e.g. ``300k``) at ``point`` (made if missing): writes beyond it fail with ENOSPC."""
        point.mkdir(parents=True, exist_ok=True)
        self._mount(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], point)
        return point

    def resize(self, point: Path, size: str) -> None:
        """Give a tmpfs of :meth:`tmpfs` more room (its files stay)."""
        subprocess.run(["mount", "-o", f"remount,size={size}", str(point)], check=True, capture_output=True)

    def read_only(self, source: Path, point: Path) -> Path:
        """``source`` seen read-only at ``point``: every write under it fails with EROFS."""
        point.mkdir(parents=True, exist_ok=True)
        self._mount(["mount", "--bind", str(source), str(point)], point)
        subprocess.run(["mount", "-o", "remount,ro,bind", str(point)], check=True, capture_output=True)
        return point

    def _mount(self, argv: list[str], point: Path) -> None:
        subprocess.run(argv, check=True, capture_output=True)
        self.points.append(point)

    def undo(self) -> None:
        while self.points:
            point = self.points.pop()
            if subprocess.run(["umount", str(point)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", str(point)], capture_output=True)


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folder``: relative path → (size, mtime in ns)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        out[p.relative_to(folder).as_posix()] = (st.st_size if p.is_file() else 0, st.st_mtime_ns)
    return out
