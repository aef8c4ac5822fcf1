# The two set-up commands of the README. Both create a local virtual environment.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
# Extras the demo and the test suite need (the CPU build of torch is installed first).
DEMO_EXTRAS = vad
TEST_EXTRAS = test,vad,asr,ray

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.torch-installed: | $(BIN)/python
	$(BIN)/python -m pip install --quiet torch==2.13.0
	touch $@

$(VENV)/.demo-installed: pyproject.toml $(VENV)/.torch-installed
	$(BIN)/python -m pip install --quiet -e '.[$(DEMO_EXTRAS)]'
	touch $@

$(VENV)/.test-installed: pyproject.toml Makefile $(VENV)/.torch-installed
	$(BIN)/python -m pip install --quiet -e '.[$(TEST_EXTRAS)]'
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(BIN)/simulplay demo

test: $(VENV)/.test-installed
	$(BIN)/ruff check simulplay tests bench
	$(BIN)/python -m pytest -q

bench: $(VENV)/.test-installed
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) simulplay-demo .pytest_cache .hypothesis
