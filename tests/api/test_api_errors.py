"""Edge cases of the Python API: a wrong argument is an InputError of one line that names
the argument (as the command line names its flag), never a traceback from deep inside."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import simulplay
from simulplay.core.errors import IncompleteError, InputError
from simulplay.grouping.registry import RULES

TRACE = pd.DataFrame({"talk_id": "t1", "system": "A", "seq": [0, 1], "time_s": [0.5, 1.5],
                      "text": ["Hello there.", "Bye."], "source_s": 3.0})
MANIFEST = pd.DataFrame({"talk_id": "t1", "system": ["A", "F"], "condition": "immediate", "seq": 0,
                         "dispatch_s": 1.0, "service_s": 0.5, "audio_s": 1.0, "source_s": 3.0})
PER_TALK = pd.DataFrame({"talk_id": ["a", "b"], "v": [1.0, 2.0]})


def summary() -> pd.DataFrame:
    return simulplay.replay(pd.concat([MANIFEST, MANIFEST.assign(condition="timer:w=4")], ignore_index=True))


CASES = {
    "read_trace of a number": (lambda: simulplay.read_trace(42), r"^trace: is an int \(expected"),
    "read_trace of an empty list": (lambda: simulplay.read_trace([]), r"^trace: is empty"),
    "read_trace of a missing file": (lambda: simulplay.read_trace("no/such.csv"), r"no/such.csv"),
    "group with a number as rule": (lambda: simulplay.group(TRACE, 3), r"^rule: is an int"),
    "group with a list of numbers": (lambda: simulplay.group(TRACE, [3]), r"^rule: is a list holding"),
    "group with no rule": (lambda: simulplay.group(TRACE, []), r"^rule: is empty"),
    "group with an unknown rule": (lambda: simulplay.group(TRACE, "soon"),
                                   r"^rule 'soon': unknown grouping rule 'soon' "
                                   r"\(expected " + re.escape(", ".join(RULES.names())) + r"\)$"),
    "group with a bad parameter": (lambda: simulplay.group(TRACE, "timer:w=x"), r"^rule 'timer:w=x': 'w=x' is not"),
    "group with a rule twice": (lambda: simulplay.group(TRACE, ["punct", "punct:cap=2,min_words=3"]),
                                r"is given twice"),
    "group with max_chars 0": (lambda: simulplay.group(TRACE, "immediate", max_chars=0), r"^max_chars: is 0"),
    "group of a bad trace frame": (lambda: simulplay.group(TRACE.assign(time_s=[-1.0, 1.5]), "immediate"),
                                   r"^trace, row 1, field 'time_s'"),
    "group of a trace as a dict": (lambda: simulplay.group({"a": 1}, "immediate"), r"^trace: is a dict"),
    "synthesize without a plan": (lambda: simulplay.synthesize(store="s"), r"^synthesize: needs a plan"),
    "synthesize with both plans": (lambda: simulplay.synthesize(TRACE, "immediate", requests=TRACE, store="s"),
                                   r"^synthesize: needs a plan"),
    "synthesize with an unknown backend": (lambda: simulplay.synthesize(TRACE, "immediate", store="s",
                                                                        backend="nope"),
                                           r"^backend 'nope': unknown backend"),
    "synthesize with a bad reuse": (lambda: simulplay.synthesize(TRACE, "immediate", store="s", reuse="often"),
                                    r"^reuse 'often': unknown reuse policy"),
    "synthesize into a .txt manifest": (lambda: simulplay.synthesize(TRACE, "immediate", store="s", out="m.txt"),
                                        r"^m.txt: .*\(expected .*\.parquet"),
    "synthesize with no realization": (lambda: simulplay.synthesize(TRACE, "immediate", store="s", realizations=0),
                                       r"^realizations: is 0"),
    "synthesize with an unknown order": (lambda: simulplay.synthesize(TRACE, "immediate", store="s", order="random"),
                                         r"^order 'random'"),
    "synthesize a bad requests table": (lambda: simulplay.synthesize(requests=TRACE, store="s"),
                                        r"^requests: missing columns condition, dispatch_s"),
    "synthesize with a store as a number": (lambda: simulplay.synthesize(TRACE, "immediate", store=1),
                                            r"^store: is an int"),
    "group with an unknown talk": (lambda: simulplay.group(TRACE, "immediate", talks=["t1", "t9"]),
                                   r"^talks t9: not in the input \(expected talk ids such as t1\)$"),
    "group with talks as a number": (lambda: simulplay.group(TRACE, "immediate", talks=1), r"^talks: is an int"),
    "group with a missing talks_from": (lambda: simulplay.group(TRACE, "immediate", talks_from="no/such.txt"),
                                        r"^no/such.txt, field 'talks_from': cannot be read"),
    "group with an unknown events mode": (lambda: simulplay.group(TRACE, "immediate", events="skip"),
                                          r"^events: unknown value 'skip' \(expected keep or drop\)$"),
    "synthesize with an unknown talk": (lambda: simulplay.synthesize(TRACE, "immediate", store="s", talks="t2"),
                                        r"^talks t2: not in the input \(expected talk ids such as t1\)$"),
    "synthesize with events as a bool": (lambda: simulplay.synthesize(TRACE, "immediate", store="s", events=True),
                                         r"^events: is a bool \(expected keep or drop\)$"),
    "synthesize requests dropping tags": (lambda: simulplay.synthesize(requests=MANIFEST, store="s", events="drop"),
                                          r"^events 'drop': is given with requests, whose texts are synthesized as"),
    "replay with an unknown talk": (lambda: simulplay.replay(MANIFEST, talks="t2"),
                                    r"^talks t2: not in the input \(expected talk ids such as t1\)$"),
    "replay with an unknown service": (lambda: simulplay.replay(MANIFEST, service="fast"),
                                       r"^service 'fast': unknown service model"),
    "replay with an unknown release": (lambda: simulplay.replay(MANIFEST, release="word"),
                                       r"^release 'word': unknown release"),
    "replay chunks of a frame without them": (lambda: simulplay.replay(MANIFEST, release="chunk"),
                                              r"^chunks: chunk release needs the chunk table"),
    "replay of a manifest without audio_s": (lambda: simulplay.replay(MANIFEST.drop(columns="audio_s")),
                                             r"^manifest: missing column audio_s"),
    "replay with allow_incomplete as text": (lambda: simulplay.replay(MANIFEST, allow_incomplete="yes"),
                                             r"^allow_incomplete: is a str"),
    "eta with a as a number": (lambda: simulplay.eta(summary(), a=1, f="F", reference="immediate"),
                               r"^a: is an int"),
    "eta with an unknown system": (lambda: simulplay.eta(summary(), a="B", f="F", reference="immediate"),
                                   r"^summary, field '--a': no system 'B' \(expected A, F\)"),
    "eta with draws as a float": (lambda: simulplay.eta(summary(), a="A", f="F", reference="immediate",
                                                        draws=1.5), r"^draws: is a float"),
    "eta with a negative seed": (lambda: simulplay.eta(summary(), a="A", f="F", reference="immediate", seed=-1),
                                 r"^bootstrap settings: the bootstrap seed must be ≥ 0"),
    "eta with contrasts as text": (lambda: simulplay.eta(summary(), a="A", f="F", reference="immediate",
                                                         contrast="punct,immediate"), r"^contrast: is a str"),
    "eta with a bad contrast": (lambda: simulplay.eta(summary(), a="A", f="F", reference="immediate",
                                                      contrast=["punct"]), r"^contrast 'punct': is not two"),
    "eta of an eta result": (lambda: simulplay.eta(simulplay.eta(summary(), a="A", f="F", reference="immediate"),
                                                   a="A", f="F", reference="immediate"),
                             r"^summary: is an EtaOutput \(expected one of its tables, e.g. summary.to_frame\(\)\)"),
    "eta with an unknown preset": (lambda: simulplay.eta(summary(), a="A", f="F", reference="immediate",
                                                         bootstrap="moses"),
                                   r"^bootstrap: unknown bootstrap preset 'moses' \(known: paper\)"),
    "eta with a preset and another generator": (lambda: simulplay.eta(summary(), a="A", f="F", reference="immediate",
                                                                      bootstrap="paper", bootstrap_rng="numpy"),
                                                r"^bootstrap: preset 'paper' sets bootstrap_rng python, not numpy"),
    "eta with the old and the new name": (lambda: simulplay.eta(summary(), a="A", f="F", reference="immediate",
                                                                method="linear", quantile_method="linear"),
                                          r"^method: is given with quantile_method"),
    "bootstrap of a missing column": (lambda: simulplay.bootstrap(PER_TALK, value="w"), r"^table: missing column w"),
    "bootstrap of text values": (lambda: simulplay.bootstrap(PER_TALK.assign(v=["x", 2.0]), value="v"),
                                 r"^table, row 1, field 'v'"),
    "bootstrap with a talk twice": (lambda: simulplay.bootstrap(PER_TALK.assign(talk_id="a"), value="v"),
                                    r"^table, row 2, field 'talk_id': talk 'a' appears again \(first at row 1\)"),
    "bootstrap with a number as value": (lambda: simulplay.bootstrap(PER_TALK, value=3), r"^value: is an int"),
    "load_run of a missing folder": (lambda: simulplay.load_run("no/such/run"), r"no/such/run: no such folder"),
    "load_run of a number": (lambda: simulplay.load_run(3), r"^folder: is an int"),
    # a sweep is checked before the run is read and anything is written (out="s")
    "sweep with an empty range": (lambda: simulplay.sweep("run", "timer:w=8..0.5:0.5", out="s"),
                                  r"^rule 'timer:w=8..0.5:0.5': 'w=8..0.5:0.5' is an empty range"),
    "sweep with an unknown rule": (lambda: simulplay.sweep("run", ["timer:w=1..3", "timr:w=1..3"], out="s"),
                                   r"^rule 'timr:w=1..3': unknown grouping rule 'timr'"),
    "sweep with no rules": (lambda: simulplay.sweep("run", [], out="s"), r"^rule: is empty"),
    "sweep with a number as rules": (lambda: simulplay.sweep("run", 4, out="s"), r"^rule: is an int"),
    "sweep with an unknown criterion": (lambda: simulplay.sweep("run", "timer:w=1..3", by="speed", out="s"),
                                        r"^by 'speed': is not known \(expected L, eta\)"),
    "sweep with a negative confirm": (lambda: simulplay.sweep("run", "timer:w=1..3", confirm=-1, out="s"),
                                      r"^confirm: is -1 \(expected a whole number ≥ 0\)"),
    "sweep with unknown duration terms": (lambda: simulplay.sweep("run", "timer:w=1..3", duration_terms="words",
                                                                  out="s"),
                                          r"^duration_terms 'words': is not known \(expected auto, text, phonemes\)"),
    "sweep with one fold": (lambda: simulplay.sweep("run", "timer:w=1..3", folds=1, out="s"), r"^folds: is 1"),
    "sweep with measured service": (lambda: simulplay.sweep("run", "timer:w=1..3", service="measured", out="s"),
                                    r"^service 'measured': modelled requests have no measured service time"),
    "sweep of a folder that is no run": (lambda: simulplay.sweep("no/such/run", "timer:w=1..3", out="s"),
                                         r"^no/such/run: has no run.json and manifest.parquet"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_wrong_argument_is_a_one_line_input_error(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a refused call must not leave a store behind
    call, message = CASES[case]
    with pytest.raises(InputError, match=message) as info:
        call()
    assert "\n" not in str(info.value)
    assert not (tmp_path / "s").exists()


def test_incomplete_outputs_are_refused_then_counted_when_allowed():
    failed = pd.concat([MANIFEST, MANIFEST.iloc[:1].assign(system="G", error="boom")], ignore_index=True)
    with pytest.raises(IncompleteError, match="1 incomplete output"):
        simulplay.replay(failed)
    out = simulplay.replay(failed, allow_incomplete=True)
    assert out.summary["system"].tolist() == ["A", "F"]
    assert out.excluded == ("(talk_id=t1, system=G, condition=immediate)",)
    assert all(s["excluded"] == 1 for s in out.signatures)


def test_rows_of_a_result_follow_the_index_labels_given():
    """rows() takes what .loc takes: a mask, or labels in any order (signatures follow)."""
    s = summary()
    picked = s.rows([3, 0])
    assert picked.summary.index.tolist() == [0, 1]
    assert picked.summary["condition"].tolist() == ["timer:w=4", "immediate"]
    assert [x["rule"] for x in picked.signatures] == ["timer:w=4", "immediate"]
