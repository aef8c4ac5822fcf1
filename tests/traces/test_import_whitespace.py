"""Whitespace in translator logs is one word boundary, in both importers and under both clocks.

SeamlessStreamAtt emits lone ``▁`` pieces (a packet ends in ``['▁wir', '▁']``, the next starts
with ``'▁Geb'``), so the log's own detokenized text holds a double space. Whitespace-only
pieces, pieces holding several ``▁`` or ordinary spaces, and runs of whitespace must import
as single boundaries: no empty update, no boundary lost, no glue invented. Every expected
update below was worked out by hand from the pieces.
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.core.errors import InputError
from simulplay.traces import join_texts
from simulplay.traces.importers import import_simuleval, import_simulstream
from simulplay.traces.importers import simulstream as simulstream_module
from tests.support.factories import trace_updates

# (arrival, computation) of packets 1–4; packet 1 is slow, so the computation-aware clock
# queues packet 2 behind it: by hand 2.5, max(2, 2.5) + 0.25 = 2.75, 3.25, 4.25.
CLOCKS = {"source": [1.0, 2.0, 3.0, 4.0], "computation-aware": [2.5, 2.75, 3.25, 4.25]}
COMPUTE = [1.5, 0.25, 0.25, 0.25]

SPM_CASES = {
    "lone ▁ at a packet's end, next word with its own ▁": (
        [["▁wir", "▁"], ["▁Geb", "ä", "ude", ","]], [(0, "wir", False), (1, "Gebäude,", False)]),
    "lone ▁ before a continuation piece is still a boundary": (
        [["▁wir", "▁"], ["Geb", "äude"]], [(0, "wir", False), (1, "Gebäude", False)]),
    "pieces carrying several ▁": ([["▁wir▁▁"], ["▁▁Geb"]], [(0, "wir", False), (1, "Geb", False)]),
    "ordinary spaces inside pieces": ([["▁New York", "▁ist  groß"]], [(0, "New York ist groß", False)]),
    "a packet of nothing but whitespace makes no update": (
        [["▁Anno"], ["▁", " ", "\t"], ["1", "9"]], [(0, "Anno", False), (2, "19", False)]),
    "a run of lone ▁ inside a packet": ([["▁a", "▁", "▁", "▁b"]], [(0, "a b", False)]),
    "a word continued across packets keeps its glue": (
        [["▁Br"], ["ücken", ","], ["▁„", "Ja", ".", "“"]],
        [(0, "Br", False), (1, "ücken,", True), (2, "„Ja.“", False)]),
    "punctuation after a lone ▁ stays apart, as the log writes it": (
        [["▁Nein", "▁"], [".", "▁Gut"]], [(0, "Nein", False), (1, ". Gut", False)]),
    "whitespace before a talk's first word": ([["▁"], ["▁▁Hallo"]], [(1, "Hallo", False)]),
    "a newline inside a piece": ([["▁ja\n", "▁nein"], ["\ndoch"]], [(0, "ja nein", False), (1, "doch", False)]),
}
WORD_CASES = {
    "empty and blank words": ([["Hallo", "", "Welt"], [" ", "wieder"]], [(0, "Hallo Welt", False),
                                                                        (1, "wieder", False)]),
    "a packet of blank words": ([["Hallo"], ["", " "], ["Welt"]], [(0, "Hallo", False), (2, "Welt", False)]),
}
CHAR_CASES = {
    "a space character ends a packet": ([["你", "好", " "], ["世", "界"]], [(0, "你好", False), (1, "世界", False)]),
    "spaces inside a packet": ([["a", " ", " ", "b"], ["c"]], [(0, "a b", False), (1, "c", True)]),
}
CASES = [(unit, name, *case) for unit, cases in (("spm", SPM_CASES), ("word", WORD_CASES), ("char", CHAR_CASES))
         for name, case in cases.items()]


def simulstream_log(tmp_path, packets, wav="w.wav"):
    lines = [{"model_loading_time": 2.0}, {"id": 0, "metadata": {"wav_name": wav}}]
    lines += [{"id": 0, "total_audio_processed": float(k + 1), "computation_time": COMPUTE[k],
               "generated_tokens": toks, "deleted_tokens": []} for k, toks in enumerate(packets)]
    p = tmp_path / "metrics.jsonl"
    p.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return p


@pytest.mark.parametrize("clock", list(CLOCKS))
@pytest.mark.parametrize("unit,name,packets,expected", CASES, ids=[f"{u}: {n}" for u, n, *_ in CASES])
def test_simulstream_whitespace_is_one_word_boundary(tmp_path, clock, unit, name, packets, expected):
    res = import_simulstream(simulstream_log(tmp_path, packets), system="B", clock=clock, unit=unit)
    assert trace_updates(res.frame) == [(CLOCKS[clock][k], text, glue) for k, text, glue in expected]
    joined = join_texts(res.frame["text"].tolist(), res.frame["glue"].tolist())
    assert res.stats["chars"].tolist() == [len(joined)]


PIECES = ["▁", "▁▁", " ", "\t", "", "▁wir", "▁Geb", "ä", "ude", ",", ".", "“", "▁„", "▁a b", "x▁", "\u00a0"]
JOINERS = {"spm": lambda toks: "".join(toks).replace("▁", " "), "word": " ".join, "char": "".join}


@settings(max_examples=150, deadline=None)
@given(packets=st.lists(st.lists(st.sampled_from(PIECES), max_size=5), min_size=1, max_size=4),
       unit=st.sampled_from(list(JOINERS)), clock=st.sampled_from(list(CLOCKS)))
def test_any_whitespace_imports_as_single_boundaries(tmp_path_factory, packets, unit, clock):
    """Oracle: the log's whole output joined by the unit's rule, whitespace squeezed; one
    update per packet whose text is not only whitespace."""
    expected = " ".join(JOINERS[unit]([t for p in packets for t in p]).split())
    speaking = [k for k, p in enumerate(packets) if JOINERS[unit](p).strip()]
    log = simulstream_log(tmp_path_factory.mktemp("h"), packets)
    if unit == "spm" and not any("▁" in t for p in packets for t in p) and sum(map(len, packets)) > 1:
        with pytest.raises(InputError, match="are not SentencePiece pieces"):
            import_simulstream(log, system="B", clock=clock, unit=unit)
        return
    if not expected:
        with pytest.raises(InputError, match="has no output text"):
            import_simulstream(log, system="B", clock=clock, unit=unit)
        return
    res = import_simulstream(log, system="B", clock=clock, unit=unit)
    texts = res.frame["text"].tolist()
    assert all(t and t == " ".join(t.split()) for t in texts)
    assert join_texts(texts, res.frame["glue"].tolist()) == expected
    assert res.frame["time_s"].tolist() == [CLOCKS[clock][k] for k in speaking]


@pytest.mark.slow


def test_seamless_lone_space_through_the_cli(cli, tmp_path):
    """The packet pair of the real log imports under both clocks with nothing lost."""
    log = simulstream_log(tmp_path, [["▁Wir", "▁bauen", "▁wir", "▁"], ["▁Geb", "ä", "ude", ",", "▁Br", "ücken", ","],
                                     ["▁„", "Ja", ".", "“", "▁(", "App", "laus", ")"]])
    for clock in CLOCKS:
        out = tmp_path / f"{clock}.jsonl"
        proc = cli("import-simulstream", log, "--system", "B", "--out", out, "--clock", clock, check=True)
        assert "1 stream(s) imported" in proc.stdout
        stream = json.loads(out.read_text(encoding="utf-8"))
        assert [u["text"] for u in stream["updates"]] == ["Wir bauen wir", "Gebäude, Brücken,", "„Ja.“ (Applaus)"]
        assert [u["time_s"] for u in stream["updates"]] == CLOCKS[clock][:3]


def s2t(prediction, delays, **extra):
    return {"index": 0, "prediction": prediction, "delays": delays, "elapsed": [d + 100.0 for d in delays],
            "prediction_length": len(delays), "reference": "ref", "source": ["/data/ted_7_0.wav"],
            "source_length": 4000.0, **extra}


def simuleval_log(tmp_path, line):
    p = tmp_path / "instances.log"
    p.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    return p


SIMULEVAL_CASES = {
    "spm: a lone ▁ with its neighbours' delay": (
        s2t("wir  Gebäude. </s>", [1000.0, 1000.0, 2000.0, 2000.0, 2000.0, 3000.0],
            prediction_spm=["▁wir", "▁", "▁Geb", "äude", ".", "▁</s>"]),
        [(1.0, "wir", False), (2.0, "Gebäude.", False)]),
    "spm: a lone ▁ with a delay of its own makes no update": (
        s2t("wir  Gebäude.", [1000.0, 1500.0, 2000.0, 2000.0, 2500.0],
            prediction_spm=["▁wir", "▁", "▁Geb", "äude", "."]),
        [(1.0, "wir", False), (2.0, "Gebäude", False), (2.5, ".", True)]),
    "spm: prediction written with single spaces": (
        s2t("wir Gebäude", [1000.0, 1000.0, 2000.0], prediction_spm=["▁wir", "▁▁", "▁Gebäude"]),
        [(1.0, "wir", False), (2.0, "Gebäude", False)]),
    "word: runs of whitespace in the prediction": (
        s2t("Hallo  Welt \t!", [500.0, 500.0, 1500.0]), [(0.5, "Hallo Welt", False), (1.5, "!", False)]),
}


@pytest.mark.parametrize("clock", ["source", "computation-aware"])
@pytest.mark.parametrize("case", list(SIMULEVAL_CASES))
def test_simuleval_whitespace_is_one_word_boundary(tmp_path, clock, case):
    line, expected = SIMULEVAL_CASES[case]
    res = import_simuleval(simuleval_log(tmp_path, line), system="A", clock=clock)
    shift = 0.1 if clock == "computation-aware" else 0.0  # elapsed = delays + 100 ms
    assert trace_updates(res.frame) == [(pytest.approx(t + shift, abs=1e-12), x, g) for t, x, g in expected]


def test_simuleval_refuses_a_prediction_that_differs_in_characters(tmp_path):
    line = s2t("wir  Gebaude.", [1000.0, 1000.0, 2000.0, 2000.0, 2000.0],
               prediction_spm=["▁wir", "▁", "▁Geb", "äude", "."])
    with pytest.raises(InputError, match=r"line 1, field 'prediction_spm': does not detokenize to prediction"):
        import_simuleval(simuleval_log(tmp_path, line), system="A")


BROKEN_LOG = [["▁Das", "▁ist"], ["▁wir", "▁"], ["▁", "▁Geb", "ä", "ude"], ["▁und", "▁Br", "ücken", "."]]


def corrupt(change):
    """An ``assemble`` whose updates ``change`` corrupts the way a bug would (the check must catch it)."""
    real = simulstream_module.assemble

    def broken(times, segs):
        t, x, g = real(times, segs)
        return t, *change(list(x), list(g))
    return broken


def wrong_letter(x, g):
    return [s.replace("ü", "u") for s in x], g


def lost_boundary(x, g):
    return x, g[:2] + [True] + g[3:]  # "wir" + "Gebäude" glued


@pytest.mark.parametrize("change,line,at,ours,log_side", [
    # squeezed output "Das ist wir Gebäude und Brücken.": 'ü' is character 26, in the packet on line 6
    (wrong_letter, 6, 26, "…'bäude und Brucken.'", "…'bäude und Brücken.'"),
    # the boundary wir|Geb (character 11) is a run that starts with the lone ▁ of the packet on line 4;
    # both sides are quoted from 12 characters before the parting to 12 after it
    (lost_boundary, 4, 11, "'Das ist wirGebäude und '…", "'Das ist wir Gebäude und'…"),
])
def test_the_assembled_text_check_names_the_packet_where_texts_part(tmp_path, monkeypatch, change, line, at, ours,
                                                                    log_side):
    log = simulstream_log(tmp_path, BROKEN_LOG)
    import_simulstream(log, system="B")  # the log itself is fine: its double spaces are one boundary
    monkeypatch.setattr(simulstream_module, "assemble", corrupt(change))
    with pytest.raises(InputError) as e:
        import_simulstream(log, system="B")
    assert str(e.value) == (f"{log}, line {line}: talk w: the updates join to {ours} at character {at} where the "
                            f"log's detokenized output has {log_side} (expected updates that join to the log's output, "
                            "whitespace runs counting as one space)")
