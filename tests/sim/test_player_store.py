"""`simulplay player --store`: first audible audio read from the audio store of `simulplay synth`.

These tests need ``simulplay.store.store`` (the audio store) and its FLAC dependency.
"""

import numpy as np
import pandas as pd
import pytest

from tests.support.checks import assert_one_line_error
from tests.support.factories import MIDDLE_STALL_REQUESTS, manifest


def test_player_first_audible_from_the_audio_store(cli, tmp_path):
    from simulplay.store.store import AudioStore

    store = AudioStore(tmp_path / "store")
    rate = 16_000
    silent = np.zeros(rate // 2, np.int16)
    loud = (np.sin(np.arange(rate) / 5) * 8000).astype(np.int16)
    keys = [store.put_audio(silent, rate), store.put_audio(loud, rate)]
    m = manifest({("t1", "A", "immediate"): [(0.0, 0.5, 0.5), (2.0, 1.0, 1.0)]}, source_s=5.0)
    m["audio_key"], m["sample_rate"], m["n_samples"] = keys, rate, [len(silent), len(loud)]
    man = tmp_path / "m.csv"
    m.to_csv(man, index=False)
    out = tmp_path / "p.csv"
    cli("player", man, "--store", tmp_path / "store", "--prebuffer-s", "0", "--out", out, check=True)
    row = pd.read_csv(out).iloc[0]
    assert (row["first_ready_s"], row["first_audible_s"]) == (0.5, 3.0)
    assert "audible:-40dBFS/10ms" in row["signature"]


@pytest.mark.slow
def test_player_store_that_is_not_a_store_fails_before_writing(cli, tmp_path):
    man = tmp_path / "manifest.csv"
    manifest({("t1", "A", "immediate"): MIDDLE_STALL_REQUESTS}).to_csv(man, index=False)
    (tmp_path / "empty").mkdir()
    out = tmp_path / "player.csv"
    proc = cli("player", man, "--store", tmp_path / "empty", "--out", out)
    assert_one_line_error(proc, "is not an audio store")
    assert not out.exists()
    proc = cli("player", man, "--store", tmp_path / "store", "--out", out)
    assert_one_line_error(proc)
    assert not out.exists()
