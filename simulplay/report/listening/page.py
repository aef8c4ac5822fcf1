"""The listening test as files that open from disk, with no server and no network.

The folder::

    index.html            the page: a start form, one A/B trial at a time, the end with the export
    listening.js, .css    its code and style (no library, nothing fetched)
    data/test.js          the trials (stimulus ids only), the stimuli's audio as FLAC data: URLs,
                          and the key, encoded
    listening-key.json    the key in the clear (conditions, draws, signature): keep it from raters

A page opened from ``file://`` may not ``fetch`` files beside it, so the data is a script that
sets ``window.simulplayListening``. The conditions of each trial travel only encoded: the key's
JSON (the conditions of every trial's sides, whether it is a repeat, the signature) XORed with a
pad (SHA-256 of the test id and a counter, shipped beside it) and written as base64, so neither the page's text nor its
DOM holds a condition's name until the last rating is given. This keeps the labels out of sight,
not secret: a rater who decodes the script can read them.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from importlib.resources import files
from pathlib import Path
from typing import Any

from simulplay.core.signature import format_signature

KEY_FILE = "listening-key.json"
ASSETS = ("listening.js", "listening.css")
SCALE = ((-2, "A much better"), (-1, "A better"), (0, "No preference"), (1, "B better"), (2, "B much better"))


def pad(test_id: str, n: int) -> bytes:
    """``n`` bytes: SHA-256 of ``test_id:0``, ``test_id:1``, … back to back."""
    out = b""
    i = 0
    while len(out) < n:
        out += hashlib.sha256(f"{test_id}:{i}".encode()).digest()
        i += 1
    return out[:n]


def key_blob(key: dict[str, Any]) -> bytes:
    """The key as the page reads it at the end: the signature and each trial's
    ``[condition_a, condition_b, repeat]``, as UTF-8 JSON."""
    return json.dumps({"signature": format_signature(key["signature"]),
                       "trials": [[t["condition_a"], t["condition_b"], t["repeat"]] for t in key["trials"]]},
                      ensure_ascii=False).encode()


def encode_key(key: dict[str, Any]) -> str:
    """The page's encoded key (module docstring), base64."""
    blob = key_blob(key)
    return base64.b64encode(bytes(a ^ b for a, b in zip(blob, pad(key["test_id"], len(blob))))).decode()


def page_data(key: dict[str, Any], audio: Iterable[tuple[str, bytes]]) -> dict[str, Any]:
    """What the page gets: trials by stimulus id, the audio, the encoded key."""
    return {"test_id": key["test_id"], "scale": [list(s) for s in SCALE],
            "trials": [{"trial": t["trial"], "excerpt": t["excerpt"], "a": t["a"], "b": t["b"]}
                       for t in key["trials"]],
            "audio": {sid: "data:audio/flac;base64," + base64.b64encode(flac).decode() for sid, flac in audio},
            "key": encode_key(key), "pad": base64.b64encode(pad(key["test_id"], len(key_blob(key)))).decode()}


def index_html(n_trials: int) -> str:
    radios = "".join(f'<label><input type="radio" name="rating" value="{v}"> {text}</label>' for v, text in SCALE)
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<title>Listening test</title><link rel=\"stylesheet\" href=\"listening.css\"></head>"
            "<body data-state=\"loading\"><main>"
            "<section id=\"start\"><h1>Listening test</h1>"
            f"<p>You will hear {n_trials} pairs of short excerpts, A and B. Both say the same words. "
            "Play each as often as you like, then say which sounds better as speech to listen to: "
            "natural, smooth, pleasant. Nothing you enter leaves this computer: at the end you download "
            "your ratings as a file and send it to whoever runs the test.</p>"
            "<label>Your name or code <input id=\"rater\" autocomplete=\"off\"></label> "
            "<button id=\"begin\" disabled>Start</button></section>"
            "<section id=\"trial\" hidden><p id=\"progress\"></p>"
            "<div class=\"players\"><button id=\"play-a\">Play A</button><button id=\"play-b\">Play B</button></div>"
            "<p class=\"hint\">Play both to go on.</p>"
            f"<fieldset id=\"scale\"><legend>Which sounds better?</legend>{radios}</fieldset>"
            "<button id=\"next\" disabled>Next</button></section>"
            "<section id=\"done\" hidden><h2>Thank you</h2><p id=\"summary\"></p>"
            "<button id=\"export\">Download ratings (CSV)</button><table id=\"unblinded\"></table></section>"
            "<p id=\"problem\" hidden></p></main>"
            "<script src=\"data/test.js\"></script><script src=\"listening.js\"></script></body></html>\n")


def write_page(folder: Path, key: dict[str, Any], audio: Iterable[tuple[str, bytes]]) -> list[Path]:
    """Write the page, its code and data and the key into ``folder`` (which exists); the files."""
    (folder / "data").mkdir()
    written = [folder / "index.html", folder / "data" / "test.js", folder / KEY_FILE]
    written[0].write_text(index_html(len(key["trials"])), encoding="utf-8")
    data = json.dumps(page_data(key, audio), ensure_ascii=True, separators=(",", ":"))
    written[1].write_text(f"window.simulplayListening = {data};\n", encoding="utf-8")
    written[2].write_text(json.dumps(key, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for name in ASSETS:
        target = folder / name
        target.write_text(files("simulplay.report.listening").joinpath("assets", name).read_text("utf-8"), "utf-8")
        written.append(target)
    return written
