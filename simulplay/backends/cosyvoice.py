"""CosyVoice 3 continuing (bistream) sessions, optional extra ``cosyvoice``.

CosyVoice is not on the package registry: the backend imports ``cosyvoice`` from a
user-provided source checkout (``checkout=PATH``, a clone of FunAudioLLM/CosyVoice with
its ``third_party/Matcha-TTS``; the extra installs the registry packages it needs) and
loads the model from a local folder (``model_dir=PATH``, e.g. Fun-CosyVoice3-0.5B-2512).

One session per block: the text enters the model's streaming-text (bistream) interface,
``inference_zero_shot(generator, …)``, where the generator is backed by a queue that the
block runner fills at each group's dispatch time. The model keeps its state across feeds
within the session; a new session starts from fresh state. Settings follow
docs/backends.md#cosyvoice-3-continuing-sessions:
FP32 (``fp16=false``), seed 5242 reset at the start of each session, speed 1.0, frontend
normalization off (``text_frontend=false``), streaming output (``stream=true``) so that
each audio chunk's arrival is recorded. The voice prompt (``prompt_wav`` with its
transcript ``prompt_text``) is prepared once at load (``add_zero_shot_spk``), outside
every clock.
"""

from __future__ import annotations

import ast
import queue
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulplay.backends.base import BackendConfig, BackendError, Session, SessionBackend, register_backend
from simulplay.backends.process_state import ProcessState
from simulplay.core.errors import InputError
from simulplay.core.extras import EXTRAS, MissingExtra, found, missing_from
from simulplay.core.provenance import cpu_model, file_sha256, git_revision

CHECKOUT_HINT = ("CosyVoice is not on the package registry: clone FunAudioLLM/CosyVoice (with its "
                 "third_party/Matcha-TTS submodule) and give the folder as checkout=PATH")
SPEAKER_ID = "simulplay-prompt"


@register_backend("cosyvoice")
@dataclass(frozen=True)
class CosyVoiceSettings(BackendConfig):
    """``checkout``: CosyVoice source folder; ``model_dir``: model folder; ``prompt_wav`` and
    ``prompt_text``: the reference voice and its transcript (CosyVoice 3 prompts start
    with ``You are a helpful assistant.<|endofprompt|>``)."""

    kind = "session"
    seed_reproducible = True
    typical_sample_rate = 24_000

    path_settings = ("checkout", "model_dir", "prompt_wav")

    checkout: str = ""
    model_dir: str = ""
    prompt_wav: str = ""
    prompt_text: str = ""
    seed: int = 5242
    speed: float = 1.0
    text_frontend: bool = False
    fp16: bool = False
    stream: bool = True

    def __post_init__(self):
        if not self.prompt_text:
            raise ValueError("prompt_text is required (the transcript of prompt_wav)")
        if self.speed <= 0:
            raise ValueError("speed must be > 0")

    def check(self) -> None:
        """The checkout holds the cosyvoice package, the model folder and the prompt exist."""
        if not self.checkout or not Path(self.checkout, "cosyvoice").is_dir():
            raise ValueError(f"checkout '{self.checkout}' holds no cosyvoice package ({CHECKOUT_HINT})")
        if any(not found(m) for m in checkout_imports(self.checkout) & set(EXTRAS["cosyvoice"])):
            raise MissingExtra("cosyvoice")
        if not self.model_dir or not Path(self.model_dir).is_dir():
            raise ValueError(f"model_dir '{self.model_dir}' is not a folder (the CosyVoice 3 model, e.g. "
                             "Fun-CosyVoice3-0.5B-2512, downloaded once; simulplay never downloads weights)")
        if not self.prompt_wav or not Path(self.prompt_wav).is_file():
            raise ValueError(f"prompt_wav '{self.prompt_wav}' does not exist (the reference voice recording)")

    def create(self) -> CosyVoiceBackend:
        return CosyVoiceBackend(self)


def checkout_imports(checkout: str) -> set[str]:
    """The top-level modules the checkout's ``cosyvoice`` package imports (read, not run)."""
    names: set[str] = set()
    for py in Path(checkout, "cosyvoice").rglob("*.py"):
        try:
            tree = ast.parse(py.read_bytes())
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def import_cosyvoice(checkout: str, state: ProcessState):
    """``cosyvoice.cli.cosyvoice`` from the checkout; its folder and Matcha-TTS go on
    ``sys.path`` through ``state``, which takes them off again when the backend closes."""
    for path in (Path(checkout, "third_party", "Matcha-TTS"), Path(checkout)):
        if path.is_dir():
            state.add_path(str(path))
    try:
        from cosyvoice.cli import cosyvoice as module
    except ImportError as e:
        if missing_from(e, "cosyvoice"):
            raise MissingExtra("cosyvoice") from e
        raise InputError.at(f"checkout {checkout}", f"cannot import cosyvoice.cli.cosyvoice ({e})",
                            field="checkout", accepted=f"a CosyVoice source checkout; {CHECKOUT_HINT}, and "
                            "install its requirements (pip install -e '.[cosyvoice]')") from e
    return module


class CosyVoiceBackend(SessionBackend):
    config: CosyVoiceSettings

    def __init__(self, config: CosyVoiceSettings):
        super().__init__(config)
        self.model = None
        self.sample_rate = 24_000
        self._state: ProcessState | None = None

    def load(self) -> None:
        if self.loaded:
            return
        c = self.config
        self.check_files()
        try:
            import torch
        except ImportError:  # pragma: no cover - CosyVoice itself needs torch
            torch = None
        self._state = self._state or ProcessState.save(torch)  # restored by close()
        module = import_cosyvoice(c.checkout, self._state)
        cls = getattr(module, "AutoModel", None) or module.CosyVoice3
        self.model = cls(model_dir=c.model_dir, fp16=c.fp16)
        self.sample_rate = int(self.model.sample_rate)
        if not self.model.add_zero_shot_spk(c.prompt_text, c.prompt_wav, SPEAKER_ID):
            raise BackendError(f"CosyVoice could not prepare the voice prompt {c.prompt_wav}")
        self.loaded = True

    def reset_seed(self) -> None:
        """Seed every generator the model may draw from (5242 per session)."""
        random.seed(self.config.seed)
        np.random.seed(self.config.seed)
        try:
            import torch
        except ImportError:  # pragma: no cover - CosyVoice itself needs torch
            return
        torch.manual_seed(self.config.seed)

    def open_session(self) -> CosyVoiceSession:
        self.reset_seed()
        return CosyVoiceSession(self)

    def close(self) -> None:
        """Free the model; ``sys.path`` and the generators seeded per session are put back
        as they were before :meth:`load`."""
        self.model = None
        self.loaded = False
        if self._state is not None:
            self._state.restore()
            self._state = None

    def label(self) -> str:
        return f"cosyvoice:{Path(self.config.model_dir).name}/{Path(self.config.prompt_wav).stem}"

    def identity(self) -> dict[str, Any]:
        c = self.config
        folder = Path(c.model_dir)
        return {
            "package": f"cosyvoice@{git_revision(c.checkout)}",
            "voice": Path(c.prompt_wav).stem,
            "voice_sha256": file_sha256(c.prompt_wav),
            "prompt_text": c.prompt_text,
            "model": folder.name,
            "model_sha256": {p.name: file_sha256(p) for p in sorted(folder.iterdir()) if p.is_file()},
            "settings": {k: v for k, v in c.settings().items()
                         if k not in ("checkout", "model_dir", "prompt_wav", "prompt_text", "seed")},
            "seed": c.seed,
            "device": device_name(),
            "threads": "model default",
            "sample_rate": self.sample_rate,
        }


class CosyVoiceSession(Session):
    """One bistream session: a queue-backed text generator feeding ``inference_zero_shot``."""

    _END = object()

    def __init__(self, backend: CosyVoiceBackend):
        self.backend = backend
        self.queue: queue.Queue = queue.Queue()
        self.fed: list[str] = []

    def feed(self, text: str) -> None:
        self.fed.append(text)
        self.queue.put(text)

    def finish(self) -> None:
        self.queue.put(self._END)

    def _texts(self) -> Iterator[str]:
        while (item := self.queue.get()) is not self._END:
            yield item

    def chunks(self) -> Iterator[np.ndarray]:
        c = self.backend.config
        outputs = self.backend.model.inference_zero_shot(
            self._texts(), "", "", zero_shot_spk_id=SPEAKER_ID, stream=c.stream, speed=c.speed,
            text_frontend=c.text_frontend)
        for out in outputs:
            yield to_int16(out["tts_speech"])


def to_int16(speech: Any) -> np.ndarray:
    """A float waveform (tensor or array, any shape) clipped to [-1, 1] and scaled by 32,767."""
    if hasattr(speech, "detach"):
        speech = speech.detach().cpu().numpy()
    wav = np.asarray(speech, dtype=np.float64).reshape(-1)
    return np.round(np.clip(wav, -1.0, 1.0) * 32767).astype(np.int16)


def device_name() -> str:
    """Where the model runs: CosyVoice uses CUDA when torch sees it."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return f"cpu:{cpu_model()}"
    if torch.cuda.is_available():
        return f"cuda:{torch.cuda.get_device_name(0)}"
    return f"cpu:{cpu_model()}"
