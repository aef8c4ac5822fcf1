"""``simulplay demo --revisions``: commit policies side by side on the bundled re-translating
translator (docs/retranslation.md).

The experiment ``revisions.toml`` of the bundled traces: the re-translating translator
``retranslating`` (``revising_traces.jsonl``, a simulstream-shaped re-translation log
imported with its retractions) as A against the append-only ``eager`` translator as F,
under ``eager``, ``stable:k=2``, ``hold:t=1``, ``mask:k=3`` and the non-causal oracle
``final`` (the reference), each followed by ``punct``. The demo's Piper voice; no
sensitivity replays, edge sweep, modelled sweep or quality scores. It writes into
``OUT_DIR/revisions`` and shares the demo's store.
"""

from __future__ import annotations

import dataclasses
from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.analysis.spoken import spoken_per_policy
from simulplay.grouping import canonical_condition
from simulplay.grouping.registry import split_commit
from simulplay.workflows.experiment import Experiment, demo_experiment, load_experiment

REVISIONS_COLUMNS = ("commit", "words_spoken", "spoken_then_retracted", "retracted_per_min", "wer_pct",
                     "lag_p50_s", "lag_p90_s", "mean_L_s", "eta_s")


def revisions_experiment(out_dir: str | Path, *, piper: str = "", path: Path | None = None) -> Experiment:
    """``revisions.toml`` (the bundled one, or ``path``) with the demo's backend (Piper and its
    settings ``piper``), outputs in ``out_dir/revisions``, the demo's store in ``out_dir/store``."""
    demo = demo_experiment(out_dir, piper=piper)
    exp = load_experiment(path or Path(str(files("simulplay.sample_traces").joinpath("revisions.toml"))))
    backends = tuple((c, t) for c, t in demo.spelled if c in demo.backends)
    return dataclasses.replace(exp, backends=demo.backends, spelled=(*backends, *exp.spelled),
                               out=demo.out / "revisions", store=demo.store)


def revisions_table(spoken: pd.DataFrame, summary: pd.DataFrame, eta: pd.DataFrame, *, a: str,
                    reference: str) -> pd.DataFrame:
    """One row per condition of ``summary`` (in its order) for translator ``a``: what its
    listener got under the condition's commit policy (``spoken``, the run's listener table:
    words spoken and spoken-then-retracted summed over the talks, per minute of source, WER
    against the final hypothesis and the commit-lag p50 and p90, equal-talk means), its mean
    offset L (seconds, playback end − source end) and η against ``reference`` (0 for it)."""
    per = spoken_per_policy(spoken, summary)
    per = per[per["system"] == a].set_index("commit")
    eta_of = {canonical_condition(c): e for c, e in zip(eta["condition"], eta["eta_s"])}
    ref = canonical_condition(reference)
    rows = []
    for cond in dict.fromkeys(summary["condition"]):
        policy, _ = split_commit(canonical_condition(cond))
        label = "eager" if policy is None else policy.label()
        out = summary[(summary["condition"] == cond) & (summary["system"] == a)]
        row = per.loc[label]
        rows.append({"commit": label, **{c: row[c] for c in REVISIONS_COLUMNS[1:7]},
                     "mean_L_s": float(np.nanmean(out["offset_s"])),
                     "eta_s": 0.0 if canonical_condition(cond) == ref else eta_of.get(canonical_condition(cond))})
    return pd.DataFrame(rows, columns=list(REVISIONS_COLUMNS))
