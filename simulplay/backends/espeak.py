"""eSpeak NG (Debian's ``espeak-ng``) on the CPU: a formant synthesizer, the second real engine.

The backend calls the library ``libespeak-ng.so.1`` in-process through ctypes: the library
is loaded and initialized once per process and its voice set in ``load()``, so no process
or library start lands in a request's service time. One long-lived thread of the backend
runs ``espeak_Synth`` (synchronous mode) for each request and hands the samples over at
each sentence boundary the library reports, so a request yields one int16 chunk per
sentence (as Piper does) at the moment the library has produced it. Audio is 22,050 Hz mono.

Settings: ``voice`` (what ``espeak-ng -v`` takes: a language such as ``de``, ``fr``,
``en-us``, a voice name, or a voice with a variant, ``de+f2``; default ``en-us``), ``rate``
(words per minute, 80–450, default 175) and ``pitch`` (0–100, default 50); all three are in
the identity, with the resolved voice file, the library's version and a hash of its data
folder. Each request ends with the sentence pause the ``espeak-ng`` command adds
(``espeakENDPAUSE``). MBROLA voices (``mb-…``) run an external program and are refused.

eSpeak NG carries state from one request to the next in its waveform generator: the same
text synthesized again, after other text, comes out a few samples (up to tens of
milliseconds) longer or shorter, and its samples differ. So, as for Piper, a rerun does not
reproduce a request's samples independently of the requests before it, and audio is reused
only within one realization by default (``reuse=same-realization``).

The library's state is process-wide: two eSpeak NG backends in one process (other voices or
settings) each set theirs again before a request when the other one synthesized last.
A missing library, data folder or voice is a one-line error naming the Debian package
(docs/backends.md#espeak-ng).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from simulplay.backends.base import Backend, BackendConfig, BackendError, register_backend
from simulplay.core.provenance import cpu_model

#: The library's soname (Debian's libespeak-ng1, a dependency of espeak-ng).
LIBRARY = "libespeak-ng.so.1"
#: What a missing library or voice asks for.
INSTALL = "Debian's espeak-ng installed (apt-get install --no-install-recommends espeak-ng)"
RATES = (80, 450)  # words per minute, the library's espeakRATE range
PITCHES = (0, 100)
MBROLA = "voice '{voice}' is an MBROLA voice, which runs the external program mbrola: not supported"
BUFFER_MS = 100  # the library's output buffer: how often it hands samples to the callback

# espeak-ng's speak_lib.h
AUDIO_OUTPUT_SYNCHRONOUS = 2
INITIALIZE_DONT_EXIT = 0x8000
POS_CHARACTER = 1
CHARS_UTF8 = 1
ENDPAUSE = 0x1000
EVENT_LIST_TERMINATED = 0
EVENT_SENTENCE = 2
PARAM_RATE = 1
PARAM_PITCH = 3
EE_OK = 0


class EspeakMissing(ValueError):
    """eSpeak NG's library, data or a voice is missing on this machine."""

    def __init__(self, message: str, accepted: str = INSTALL):
        super().__init__(message)
        self.accepted = accepted


class _Event(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint), ("text_position", ctypes.c_int),
                ("length", ctypes.c_int), ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
                ("user_data", ctypes.c_void_p), ("id", ctypes.c_char * 8)]


class _Voice(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("languages", ctypes.c_char_p), ("identifier", ctypes.c_char_p),
                ("gender", ctypes.c_ubyte), ("age", ctypes.c_ubyte), ("variant", ctypes.c_ubyte),
                ("xx1", ctypes.c_ubyte), ("score", ctypes.c_int), ("spare", ctypes.c_void_p)]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))


@register_backend("espeak")
@dataclass(frozen=True)
class EspeakSettings(BackendConfig):
    """eSpeak NG settings: ``voice`` (a language, voice name or ``voice+variant``), ``rate``
    (words per minute, 80–450) and ``pitch`` (0–100)."""

    voice: str = "en-us"
    rate: int = 175
    pitch: int = 50
    reuse: str = ""

    def __post_init__(self):
        if not self.voice or any(c.isspace() or c in ",=" for c in self.voice):
            raise ValueError(f"voice '{self.voice}' is not a voice name (e.g. de, fr, en-us, de+f2)")
        if self.voice.startswith(("mb-", "mb/")):  # refused before the library tries to start mbrola
            raise EspeakMissing(MBROLA.format(voice=self.voice), "an eSpeak NG voice, e.g. de, fr, en-us")
        for name, (low, high) in (("rate", RATES), ("pitch", PITCHES)):
            value = getattr(self, name)
            if not low <= value <= high:
                raise ValueError(f"{name}={value} is out of range ({name} must be {low}–{high})")
        self.reuse_policy()

    def check(self) -> None:
        """The library and its data load, and the voice exists (an :class:`EspeakMissing`)."""
        engine().describe_voice(self.voice)

    def voice_language(self) -> tuple[str, str] | None:
        """The voice's language (``de`` for ``de``, ``de+f2``; ``en`` for ``en-us``) and
        ``espeak:voice=…``; None for a voice named otherwise than by its language."""
        from simulplay.traces.language import base_code

        code = base_code(self.voice)
        return (code, f"espeak:voice={self.voice}") if code.isalpha() and 2 <= len(code) <= 3 else None

    def create(self) -> EspeakBackend:
        return EspeakBackend(self)


def library_path() -> str | None:
    """Where the dynamic linker finds eSpeak NG's library, or None."""
    return ctypes.util.find_library("espeak-ng")


class Engine:
    """The process's one libespeak-ng (its state is global): loaded and initialized once, a
    synthesis thread started while a backend is loaded."""

    def __init__(self, path: str):
        lib = ctypes.CDLL(path)
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_GetCurrentVoice.restype = ctypes.POINTER(_Voice)
        lib.espeak_Info.restype = ctypes.c_char_p
        lib.espeak_Info.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
        lib.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
                                     ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
        self.lib = lib
        self.path = path
        self.sample_rate = int(lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, BUFFER_MS, None, INITIALIZE_DONT_EXIT))
        data = ctypes.c_char_p()
        self.version = (lib.espeak_Info(ctypes.byref(data)) or b"?").decode()
        self.data_path = Path((data.value or b"").decode())
        if self.sample_rate <= 0:
            raise EspeakMissing(f"eSpeak NG's data folder is missing ({self.data_path or 'none found'})",
                                "Debian's espeak-ng-data installed (apt-get install espeak-ng-data)")
        self.callback = _CALLBACK(self._on_audio)  # kept referenced: the library calls it
        lib.espeak_SetSynthCallback(self.callback)
        self.current: EspeakSettings | None = None  # the settings in force in the library
        self.voices: dict[str, dict[str, str] | EspeakMissing] = {}  # voice → what describe_voice found
        self.users = 0
        self.jobs: queue.Queue | None = None
        self.thread: threading.Thread | None = None
        self._request: _Request | None = None

    # ---- voices and settings (outside any clock) ----------------------------------------

    def describe_voice(self, voice: str) -> dict[str, str]:
        """The voice's name and file (``gmw/de``), or an :class:`EspeakMissing` naming the
        package; looked up once per voice, and the settings in force are put back."""
        if voice not in self.voices:
            before, self.current = self.current, None
            self.voices[voice] = self._look_up(voice)
            if before is not None:
                self.apply(before)
        found = self.voices[voice]
        if isinstance(found, EspeakMissing):
            raise found
        return found

    def _look_up(self, voice: str) -> dict[str, str] | EspeakMissing:
        if self.lib.espeak_SetVoiceByName(voice.encode()) != EE_OK:
            return EspeakMissing(f"eSpeak NG has no voice '{voice}' (`espeak-ng --voices` lists the installed ones)",
                                 "a voice of Debian's espeak-ng-data, e.g. de, fr, en-us (apt-get install "
                                 "espeak-ng-data)")
        v = self.lib.espeak_GetCurrentVoice().contents
        name, ident = (v.name or b"").decode(), (v.identifier or b"").decode()
        if ident.startswith("mb/"):
            return EspeakMissing(MBROLA.format(voice=f"{voice}' ('{ident}"), "an eSpeak NG voice, e.g. de, fr, en-us")
        return {"name": name, "file": ident}

    def apply(self, settings: EspeakSettings) -> None:
        """Put ``settings``' voice, rate and pitch in force (no-op when they are)."""
        if self.current == settings:
            return
        self.current = None
        if self.lib.espeak_SetVoiceByName(settings.voice.encode()) != EE_OK:
            raise BackendError(f"eSpeak NG could not set voice '{settings.voice}'")
        self.lib.espeak_SetParameter(PARAM_RATE, settings.rate, 0)
        self.lib.espeak_SetParameter(PARAM_PITCH, settings.pitch, 0)
        self.current = settings

    # ---- the synthesis thread ---------------------------------------------------------

    def acquire(self) -> None:
        """A backend loaded: start the synthesis thread if it is not running."""
        self.users += 1
        if self.thread is None:
            self.jobs = queue.Queue()
            self.thread = threading.Thread(target=self._serve, args=(self.jobs,), name="espeak-ng", daemon=True)
            self.thread.start()

    def release(self) -> None:
        """A backend closed: stop the thread when no loaded backend is left."""
        self.users = max(0, self.users - 1)
        if self.users == 0 and self.thread is not None:
            self.jobs.put(None)
            self.thread.join()
            self.thread = self.jobs = None

    def synthesize(self, text: str) -> Iterator[np.ndarray]:
        """Yield the int16 samples of ``text`` sentence by sentence as the thread produces them."""
        out: queue.Queue = queue.Queue()
        self.jobs.put((text, out))
        while (item := out.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    def _serve(self, jobs: queue.Queue) -> None:
        while (job := jobs.get()) is not None:
            text, out = job
            self._request = request = _Request(out)
            try:
                data = text.encode("utf-8") + b"\0"
                rc = self.lib.espeak_Synth(data, len(data), 0, POS_CHARACTER, 0, CHARS_UTF8 | ENDPAUSE, None, None)
                if request.error is not None:
                    raise request.error
                if rc != EE_OK:
                    raise BackendError(f"espeak_Synth returned error {rc}")
                request.flush(request.received)
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread, which raises it
                out.put(e)
            finally:
                self._request = None
                out.put(None)

    def _on_audio(self, wav, n: int, events) -> int:
        request = self._request
        if request is None:
            return 0
        try:
            if wav and n > 0:
                request.add(np.ctypeslib.as_array(wav, shape=(n,)).copy())
            i = 0
            while events and events[i].type != EVENT_LIST_TERMINATED:
                if events[i].type == EVENT_SENTENCE:  # a sentence starts: the one before it is done
                    request.sentences += 1
                    if request.sentences > 1:
                        request.cuts.append(int(events[i].sample))
                i += 1
            while request.cuts and request.cuts[0] <= request.received:
                request.flush(request.cuts.pop(0))
        except Exception as e:  # noqa: BLE001 - raised in the caller's thread after the request
            request.error = e
            return 1  # stops the synthesis
        return 0


class _Request:
    """One request's samples so far: received, handed over up to ``emitted``."""

    def __init__(self, out: queue.Queue):
        self.out = out
        self.pending: list[np.ndarray] = []
        self.received = 0
        self.emitted = 0
        self.cuts: list[int] = []
        self.sentences = 0  # sentence starts the library reported
        self.error: Exception | None = None

    def add(self, samples: np.ndarray) -> None:
        self.pending.append(samples)
        self.received += len(samples)

    def flush(self, upto: int) -> None:
        """Hand over the samples before ``upto`` (absolute sample index) as one chunk."""
        if upto <= self.emitted or not self.pending:
            return
        audio = np.concatenate(self.pending)
        cut = upto - self.emitted
        self.out.put(audio[:cut].astype(np.int16, copy=False))
        self.pending = [audio[cut:]] if cut < len(audio) else []
        self.emitted = upto


_ENGINE: Engine | None = None


def engine() -> Engine:
    """The process's eSpeak NG engine, loaded on first use (an :class:`EspeakMissing`
    naming the Debian package when the library is not installed)."""
    global _ENGINE
    if _ENGINE is None:
        path = library_path()
        if path is None:
            raise EspeakMissing(f"eSpeak NG is not installed (no {LIBRARY})")
        try:
            _ENGINE = Engine(path)
        except OSError as e:
            raise EspeakMissing(f"eSpeak NG's library {path} does not load ({e})") from e
    return _ENGINE


@lru_cache(maxsize=4)
def data_sha256(folder: str) -> str:
    """SHA-256 over eSpeak NG's data folder: every file's relative path and content, sorted."""
    root = Path(folder)
    h = hashlib.sha256()
    for p in sorted(q for q in root.rglob("*") if q.is_file()):
        h.update(f"{p.relative_to(root).as_posix()}:{hashlib.sha256(p.read_bytes()).hexdigest()}\n".encode())
    return h.hexdigest()


class EspeakBackend(Backend):
    config: EspeakSettings

    def __init__(self, config: EspeakSettings):
        super().__init__(config)
        self.engine: Engine | None = None
        self.sample_rate = 0  # Hz, known once the library is initialized (load or identity)
        self.load_count = 0

    def load(self) -> None:
        if self.loaded:
            return
        self.check_files()
        self.engine = engine()
        self.engine.describe_voice(self.config.voice)
        self.engine.apply(self.config)
        self.engine.acquire()
        self.sample_rate = self.engine.sample_rate
        self.load_count += 1
        self.loaded = True

    def stream(self, text: str) -> Iterator[np.ndarray]:
        """One int16 chunk per sentence, as the library produces it."""
        self.engine.apply(self.config)
        yield from self.engine.synthesize(text)

    def close(self) -> None:
        if self.loaded:
            self.engine.release()
            self.loaded = False

    def label(self) -> str:
        """``espeak:VOICE``, with the rate and pitch when they are not the defaults."""
        c = self.config
        extra = "".join(f"/{k}={v}" for k, v, d in (("rate", c.rate, 175), ("pitch", c.pitch, 50)) if v != d)
        return f"espeak:{c.voice}{extra}"

    def identity(self) -> dict[str, Any]:
        self.check_files()
        eng = engine()
        voice = eng.describe_voice(self.config.voice)
        self.sample_rate = eng.sample_rate
        return {
            "package": f"espeak-ng@{eng.version}",
            "library": Path(eng.path).name,
            "voice": self.config.voice,
            "voice_name": voice["name"],
            "voice_file": voice["file"],
            "data_sha256": data_sha256(str(eng.data_path)),
            "settings": {"voice": self.config.voice, "rate": self.config.rate, "pitch": self.config.pitch,
                         "end_pause": True},
            "seed": None,
            "device": f"cpu:{cpu_model()}",
            "threads": "1",
            "sample_rate": eng.sample_rate,
        }
