"""How close a modelled sweep comes to measurement: held-out conditions of real runs.

For each demo run folder given (``simulplay demo --out-dir DIR``, e.g. one with
``--backend 'piper:durations=fixed'`` and one on Piper's default noise), the duration model
is trained on ``immediate`` and ``timer:w=2`` only, and the run's other conditions are
modelled and set beside their measurements, under ``--service zero`` (the duration model
alone) and ``--service fit`` (the fitted clock against the measured service times). Printed
per condition: measured and modelled η (mean over talks), their difference, the largest
per-talk difference, the largest difference of L (A or F) and the measured interval's
half-width; all seconds. Run::

    .venv/bin/python bench/bench_sweep_accuracy.py DEMO_RUN_DIR [DEMO_RUN_DIR …] [--terms text|phonemes]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.analysis.sweep import replay_eta, run_sweep, sweep_service  # noqa: E402
from simulplay.analysis.sweep_check import check_sweep  # noqa: E402
from simulplay.workflows.sweep import read_run  # noqa: E402

TRAIN = ("immediate", "timer:w=2")


def accuracy(folder: str, terms: str) -> list[dict]:
    run = read_run(folder)
    phonemize = None
    if terms == "phonemes":
        from simulplay.backends import parse_backend

        phonemize = parse_backend(run.backend).create().phonemizer()
    kw = dict(a=run.exp["a"], f=run.exp["f"], reference=run.exp["reference"], boot=run.boot)
    rows = []
    for service in ("zero", "fit"):
        measured = replay_eta(run.manifest, service=sweep_service(service), **kw)
        res = run_sweep(run.streams, run.manifest, [], phonemize=phonemize, train=list(TRAIN), service=service,
                        **kw)
        check = check_sweep(res.modelled, measured, a=kw["a"], f=kw["f"], sig={})
        table, per_talk = check.table.set_index("condition"), check.per_talk
        print(f"{folder} ({run.backend}), service {service}: {res.models[0].durations.describe()}")
        for cond in table.index:
            if cond == run.exp["reference"]:
                continue
            t = table.loc[cond]
            rows.append({"run": Path(folder).name, "backend": run.backend, "service": service,
                         "condition": cond + (" (trained)" if cond in TRAIN else ""),
                         "measured η": t["measured_eta_s"], "modelled η": t["modelled_eta_s"],
                         "Δη mean": t["eta_diff_s"],
                         "max |Δη| per talk": per_talk.loc[per_talk["condition"] == cond, "eta_diff_s"].abs().max(),
                         "max |ΔL|": max(abs(t["L_a_diff_s"]), abs(t["L_f_diff_s"])),
                         "half-width": t["half_width_s"]})
    return rows


def main() -> None:
    args = sys.argv[1:]
    terms = "phonemes"
    if "--terms" in args:
        i = args.index("--terms")
        terms = args[i + 1]
        del args[i:i + 2]
    rows = [r for folder in args for r in accuracy(folder, terms)]
    print(f"duration terms: {terms}; trained on {', '.join(TRAIN)}")
    print(pd.DataFrame(rows).round(3).to_markdown(index=False))


if __name__ == "__main__":
    main()
