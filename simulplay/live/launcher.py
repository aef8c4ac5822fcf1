"""A local backend served for one live run: ``simulplay serve`` as a child process.

It listens on a free loopback port (``--port 0``: the child prints its URL), the run waits
until ``GET /v1/models`` answers, and the child is stopped (SIGTERM, then SIGKILL after
10 s) when the run ends, fails or is interrupted. Its request log and any error go to
``server.log`` in the run folder.
"""

from __future__ import annotations

import contextlib
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx

from simulplay.core.errors import InputError

START_TIMEOUT_S = 300.0  # loading and warming up a model


@contextlib.contextmanager
def served(spec: str, log_path: Path, *, timeout: float = START_TIMEOUT_S,
           args: Sequence[str] = ()) -> Iterator[tuple[str, subprocess.Popen]]:
    """Serve ``spec`` (a local backend) on 127.0.0.1; yields its base URL (``…/v1``) and the process.
    ``args``: more options of ``simulplay serve`` (e.g. ``--workers 2``)."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "simulplay", "serve", "--backend", spec, "--host", "127.0.0.1",
                                 "--port", "0", *args], stdout=subprocess.PIPE, stderr=log, text=True,
                                start_new_session=True)  # our Ctrl-C reaches it through us, in order
        try:
            url = _announced_url(proc, log_path, time.monotonic() + timeout)
            _wait_ready(url, proc, log_path, time.monotonic() + timeout)
            yield url, proc
        finally:
            stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 10 s; reaps the child."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    if proc.stdout:
        proc.stdout.close()


def _failed(proc: subprocess.Popen, log_path: Path, what: str) -> InputError:
    tail = " | ".join(log_path.read_text(errors="replace").strip().splitlines()[-3:])
    return InputError.at("--backend", f"the served backend {what} (exit code {proc.poll()}; {log_path}: {tail})",
                         accepted="a backend `simulplay serve --backend …` can serve")


def _announced_url(proc: subprocess.Popen, log_path: Path, deadline: float) -> str:
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if sel.select(min(1.0, max(0.0, deadline - time.monotonic()))):
                line = proc.stdout.readline()
                if " at http://" in line:
                    return line.rsplit(" at ", 1)[1].strip()
                if not line:
                    break
            if proc.poll() is not None:
                break
    raise _failed(proc, log_path, "did not start" if proc.poll() is not None else "did not announce its URL in time")


def _wait_ready(url: str, proc: subprocess.Popen, log_path: Path, deadline: float) -> None:
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if client.get(f"{url}/models").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)  # polling a server that is starting: nothing to wait on
    raise _failed(proc, log_path, "did not answer GET /v1/models")
