"""`simulplay textlatency` in a process that has threads: OmniSTEval's aligner maps talks over
``multiprocessing.Pool()``, which forks; a worker forked beside live threads once waited
forever on a lock (CI hung 12.8 minutes in ``Pool.__exit__``). simulplay lends the aligner a
pool whose workers are not forked from the caller (simulplay.core.pools).

One real process starts an eSpeak NG engine thread and an onnxruntime session (real Piper,
which has run a request), then runs the command 30 times in process, each under a watchdog that
dumps every thread's stack and exits if a run takes over two minutes. A hang shows as that
stack; a fork of the caller is counted (``os.register_at_fork``), so today's code fails here
even on a run where no fork happens to hang.
"""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workflows.test_textlatency import talk_data, write_segments, write_summary, write_trace

ROOT = Path(__file__).resolve().parents[2]
RUNS = 30

CHILD = r"""
import faulthandler, json, os, sys, threading
forks = []
os.register_at_fork(before=lambda: forks.append(1))
import numpy as np
from simulplay.backends import parse_backend
espeak = parse_backend("espeak").create()
espeak.load()
piper = parse_backend("piper").create()
piper.load()
heard = sum(len(np.concatenate(list(b.stream("Threads are running.")))) for b in (espeak, piper))
from simulplay.cli import main
from simulplay.workflows import textlatency
argv = json.loads(sys.argv[1])
threads = threading.active_count()
for i in range(int(sys.argv[2])):
    textlatency.SERIAL_CELLS = 0 if i % 2 == 0 else 10**12  # a pool on every other run, the serial path between
    faulthandler.dump_traceback_later(120, exit=True)  # a hang: every thread's stack, then exit 1
    sys.argv = ["simulplay", *argv]
    try:
        main()
    except SystemExit as e:
        assert not e.code, e.code
    faulthandler.cancel_dump_traceback_later()
print(json.dumps({"forks": len(forks), "threads": threads, "samples": int(heard)}))
espeak.close()
piper.close()
"""


@pytest.mark.slow
def test_textlatency_never_forks_a_process_with_live_threads(tmp_path):
    rng = random.Random(33)
    segs, refs, streams, aware = [], [], {}, {}
    for talk in ("t1", "t2", "t3"):
        s, r, st, aw = talk_data(rng, talk)
        segs, refs, streams, aware = segs + s, refs + r, streams | st, aware | aw
    cu = write_trace(tmp_path / "cu.jsonl", streams)
    ca = write_trace(tmp_path / "ca.jsonl", aware)
    yml, txt = write_segments(tmp_path, segs, refs)
    summary = write_summary(tmp_path / "s.csv", [(t, s, "immediate", 1.0, 2.0, 11.0) for t, s in streams])
    argv = ["textlatency", cu, "--ca-trace", ca, "--references", txt, "--segmentation", yml, "--summary", summary,
            "--a", "A", "--f", "F", "--out", tmp_path / "cmp.csv", "--lang", "en"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps([str(a) for a in argv]), str(RUNS)],
                          capture_output=True, text=True, env=env, timeout=360, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-6000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["threads"] >= 2 and got["samples"] > 0  # the engine thread is alive, both voices spoke
    assert got["forks"] == 0, f"the process forked {got['forks']} time(s) while its threads ran"
    assert (tmp_path / "cmp.csv").exists()
