# The two set-up commands of the README. Both create a local virtual environment.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
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
