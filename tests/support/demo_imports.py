"""Run a small `simulplay demo` and write the modules it imported (those not already imported
when Python started: the site's own `.pth` hooks), each with its file or null, to a JSON file.

``python -m tests.support.demo_imports OUT.json DEMO_DIR``: the demo's own command line and
design (every rule, replay variant, edge threshold, the sweep with its confirmed point, the
quality step, the report and explorer) on the bundled traces cut to their first two updates
per stream, so that real Piper synthesis, Silero VAD and DNSMOS take seconds, not minutes.
"""

from __future__ import annotations

import atexit
import json
import sys

BEFORE = set(sys.modules)  # what the interpreter and the site's hooks imported before this module


def small_traces(folder):
    """The bundled sample traces, each stream cut to its first two updates."""
    from importlib.resources import files
    from pathlib import Path

    text = files("simulplay.sample_traces").joinpath("sample_traces.jsonl").read_text("utf-8")
    streams = [json.loads(line) for line in text.splitlines()]
    for s in streams:
        s["updates"] = s["updates"][:2]
    end = {s["talk_id"]: max(u["time_s"] for t in streams if t["talk_id"] == s["talk_id"] for u in t["updates"])
           for s in streams}
    lines = [json.dumps(s | {"source_s": end[s["talk_id"]] + 2.0}) for s in streams]
    path = Path(folder, "small_traces.jsonl")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path  # a Path, as an experiment file's traces are


def main(out_json: str, demo_dir: str) -> None:
    import dataclasses
    from pathlib import Path

    from simulplay.cli.app import main as cli
    from simulplay.workflows import experiment

    demo = experiment.demo_experiment

    def small_demo(*args, **kwargs):
        exp = demo(*args, **kwargs)
        return dataclasses.replace(exp, traces=(small_traces(exp.out.parent),))

    experiment.demo_experiment = small_demo
    atexit.register(lambda: Path(out_json).write_text(json.dumps(
        {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items()) if name not in BEFORE})))
    sys.argv = ["simulplay", "demo", "--out-dir", demo_dir, "--quiet"]
    cli()


if __name__ == "__main__":
    main(*sys.argv[1:3])
