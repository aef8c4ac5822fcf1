"""``simulplay demo --live``: the demo's design played live (docs/live.md, "The demo, live").

The bundled sample traces (three talks, translators ``eager`` and ``batched``) under
``immediate`` and ``timer:w=4``: twelve outputs at once, at speed 1 (the talks are about
two minutes long, so the live part takes as long), against Piper with
``durations=fixed`` served on loopback, after a load burst against the same server that calibrates its
slowdown (``--calibrate``), then the isolated synthesis and comparisons (a) to (c), (c)
three ways, with η of ``eager`` against ``batched`` (reference ``immediate``). Everything goes
into ``OUT_DIR/live`` (``live-2``, … when that is taken), with its own store: the
isolated synthesis measures its service times in this run, never reuses the demo's.
"""

from __future__ import annotations

import os
from pathlib import Path

from simulplay.grouping import parse_rule
from simulplay.live.predict import EtaDesign
from simulplay.live.run import LiveResult, live_run

#: The rules the live demo plays.
LIVE_RULES = ("immediate", "timer:w=4")


def live_folder(out_dir: Path) -> Path:
    """``out_dir/live``, or the first of ``live-2``, ``live-3``, … that is new or empty."""
    n = 1
    while True:
        p = out_dir / ("live" if n == 1 else f"live-{n}")
        if not p.exists() or (p.is_dir() and not any(p.iterdir())):
            return p
        n += 1


def demo_live(out_dir: str | Path, *, piper: str = "", speed: float = 1.0) -> LiveResult:
    """Play the demo live and compare (module docstring); ``piper`` adds Piper settings
    (``durations=fixed`` is always set), ``speed`` divides the trace times (1: real time)."""
    from simulplay.workflows.experiment import demo_experiment

    threads = "" if "intra_op_threads=" in piper else f"intra_op_threads={min(2, os.cpu_count() or 1)}"
    spec = "piper:" + ",".join(filter(None, ["durations=fixed", threads, piper.strip()]))
    exp = demo_experiment(out_dir, piper=piper)
    exp.out.mkdir(parents=True, exist_ok=True)
    out = live_folder(exp.out)
    return live_run(list(exp.traces), [parse_rule(r) for r in LIVE_RULES], spec, out, speed=speed, predict=True,
                    design=EtaDesign(exp.a, exp.f, LIVE_RULES[0]), calibrate=True)
