# The two set-up commands of the README. Both create a local virtual environment.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
# The report tests open the HTML in Debian's headless Chromium, the text-latency tests run Moses' tokenizer
# under perl (both installed by `make test` when missing). eSpeak NG, the second real engine (backend
# `espeak`, `simulplay demo --backends piper,espeak`), is Debian's espeak-ng: `make test` and `make demo`
# install it when missing.
SUDO = $(if $(filter 0,$(shell id -u)),,sudo)
ESPEAK_NG = command -v espeak-ng >/dev/null || ($(SUDO) apt-get update && \
	$(SUDO) apt-get install -y --no-install-recommends espeak-ng)
# Extras the demo and the test suite need (the CPU build of torch is installed first). The demo runs the
# edge-silence replay (vad) and scores DNSMOS (quality; not speaker similarity, so not Resemblyzer):
# tests/test_install_closure.py runs a small demo and fails when it imports a package these do not install.
DEMO_EXTRAS = vad,quality
TEST_EXTRAS = test,vad,asr,ray,xtts,textlatency,docs,quality,frameworks
# `simulplay quality`'s speaker encoder: Resemblyzer's only registry release requires `webrtcvad`, a source
# package (a C build); the quality extra installs webrtcvad-wheels (the same module, as a wheel) and
# Resemblyzer's other requirements, and Resemblyzer itself is installed without its requirements.
RESEMBLYZER = Resemblyzer==0.1.4
# pipecat's text aggregator, the reference of the rule `pipecat` in the agreement tests: pipecat-ai requires
# protobuf<7 (the suite has 7) and numba/onnxruntime pins, none of which its text aggregator imports, so it is
# installed without its requirements; the test extra lists the ones the aggregator needs.
PIPECAT = pipecat-ai==1.14.0
# RealtimeTTS, whose source the agreement test of the rule `realtimetts` reads (what play_async passes to
# stream2sentence); never imported (that needs PyAudio), so installed without its requirements (resampy, nltk).
REALTIMETTS = realtimetts==0.8.10
# The documentation site (docs/, mkdocs.yml): strict, so a broken link or anchor, a page missing from
# the nav or an API docstring that cannot be collected fails the build. The variable silences a
# notice Material for MkDocs prints on every build.
MKDOCS = NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The suite in two parts: the tests that may share the machine on two workers (pytest-xdist; a
# module's tests stay on one worker, so its fixtures are made once), then, one at a time, those
# marked `alone` (they judge the machine's timing, or load every core with a CPU hog).
# simulplay's and the tests' modules byte-compiled once: where PYTHONDONTWRITEBYTECODE is set (these
# machines), every `simulplay` subprocess a test starts would compile them again (≈ 0.3 s each).
# pytest rewrites the asserts of every test module it imports (≈ 5 s per process for this suite) and
# keeps the result beside the module's bytecode, but only where Python may write bytecode: allowed
# for the test runs, so the `alone` run (and the next `make test`) read what the first run wrote.
COMPILE = $(BIN)/python -m compileall -q simulplay tests bench traces >/dev/null
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest
PYTEST_SHARED = $(PYTEST) -q --durations=15 -n 2 --dist loadscope --part shared
PYTEST_ALONE = $(PYTEST) -q --durations=5 --part alone

.PHONY: demo test test-fast docs lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.torch-installed: | $(BIN)/python
	$(BIN)/python -m pip install --quiet torch==2.13.0
	touch $@

$(VENV)/.demo-installed: pyproject.toml Makefile $(VENV)/.torch-installed
	$(BIN)/python -m pip install --quiet -e '.[$(DEMO_EXTRAS)]'
	touch $@

$(VENV)/.test-installed: pyproject.toml Makefile $(VENV)/.torch-installed
	$(BIN)/python -m pip install --quiet -e '.[$(TEST_EXTRAS)]'
	touch $@ $(VENV)/.demo-installed $(VENV)/.docs-installed

$(VENV)/.quality-installed: pyproject.toml Makefile $(VENV)/.test-installed
	$(BIN)/python -m pip install --quiet --no-deps $(RESEMBLYZER) $(PIPECAT) $(REALTIMETTS)
	$(BIN)/python -c "import resemblyzer, speechmos.dnsmos, pipecat.utils.text.simple_text_aggregator"
	touch $@

$(VENV)/.docs-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@

# torchaudio's registry wheels are CUDA builds: their compiled library needs libcudart and
# torch's CUDA libraries, so `import torchaudio` fails on the CPU build of torch. XTTS uses
# only its pure-PyTorch parts (MelSpectrogram, resample), which torchaudio supports without
# the library (it then skips loading it), so the library is removed when torch is a CPU build.
$(VENV)/.torchaudio-cpu: $(VENV)/.test-installed
	$(BIN)/python -c "import importlib.util as u, pathlib, torch; s = u.find_spec('torchaudio'); \
	[f.unlink() for f in pathlib.Path(s.origin).parent.joinpath('lib').glob('*.so') if torch.version.cuda is None]"
	$(BIN)/python -c "import torchaudio, TTS.tts.models.xtts"
	touch $@

demo: $(VENV)/.demo-installed
	$(ESPEAK_NG)
	$(BIN)/simulplay demo

test: $(VENV)/.test-installed $(VENV)/.torchaudio-cpu $(VENV)/.quality-installed
	command -v chromium >/dev/null || ($(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends chromium)
	perl -MThread -MFindBin -e1 2>/dev/null || ($(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends perl)
	$(ESPEAK_NG)
	$(BIN)/ruff check simulplay tests bench
	$(MKDOCS) -d site
	$(COMPILE)
	$(PYTEST_SHARED)
	$(PYTEST_ALONE)

# While developing: the suite without the tests marked slow (`make test` and CI run them all).
test-fast: $(VENV)/.test-installed $(VENV)/.torchaudio-cpu $(VENV)/.quality-installed
	$(COMPILE)
	$(PYTEST_SHARED) -m "not slow"
	$(PYTEST_ALONE) -m "not slow" tests/synthesis  # where the alone tests that are not slow live (collects in 2 s, not 10)

# The documentation site into site/ (open site/index.html).
docs: $(VENV)/.docs-installed
	$(MKDOCS) -d site

bench: $(VENV)/.test-installed $(VENV)/.torchaudio-cpu $(VENV)/.quality-installed
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) simulplay-demo site .pytest_cache .hypothesis
