"""Each importer, given the other importer's log, says so in one line (exit code 2) instead
of a problem on every line."""

from __future__ import annotations

import json

SIMULSTREAM = [{"model_loading_time": 41.5},
               {"id": 0, "metadata": {"wav_name": "ted_1.wav"}},
               {"id": 0, "generated_tokens": ["Hallo"], "deleted_tokens": [], "total_audio_processed": 1.0,
                "computation_time": 0.2}]
SIMULEVAL = [{"index": 0, "prediction": "Hello world", "delays": [1000.0, 2000.0], "elapsed": [1100.0, 2100.0],
              "prediction_length": 2, "reference": "", "source": ["ted_1.wav"], "source_length": 3000.0}]


def write(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


def test_import_simuleval_names_a_simulstream_log(cli, tmp_path):
    log = write(tmp_path / "metrics.jsonl", SIMULSTREAM)
    done = cli("import-simuleval", log, "--system", "S", "--out", tmp_path / "t.jsonl")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"simulplay: error: {log}: this looks like a simulstream log: use "
                                        "import-simulstream (expected a SimulEval log)"]
    assert not (tmp_path / "t.jsonl").exists()


def test_import_simulstream_names_a_simuleval_log(cli, tmp_path):
    log = write(tmp_path / "instances.log", SIMULEVAL)
    done = cli("import-simulstream", log, "--system", "S", "--out", tmp_path / "t.jsonl")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"simulplay: error: {log}: this looks like a SimulEval log: use "
                                        "import-simuleval (expected a simulstream log)"]


def test_each_importer_reads_its_own_log(cli, tmp_path):
    done = cli("import-simuleval", write(tmp_path / "instances.log", SIMULEVAL), "--system", "S", "--out",
               tmp_path / "a.jsonl")
    assert done.returncode == 0, done.stderr
    done = cli("import-simulstream", write(tmp_path / "metrics.jsonl", SIMULSTREAM), "--system", "S", "--out",
               tmp_path / "b.jsonl")
    assert done.returncode == 0, done.stderr
