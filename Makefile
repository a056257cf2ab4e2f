# Set-up is part of every target: the venv is created on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= demo-dev

.PHONY: venv plan test lint bench docs clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

plan: venv
	$(PY) -m platformctl plan $(STACK)
	$(PY) -m platformctl policy $(STACK) --plan build/$(STACK)

test: venv
	$(PY) -m pytest

lint: venv
	$(VENV)/bin/ruff check .

bench: venv
	$(PY) -m platformctl bench
	$(PY) -m platformctl.bench_upload

docs: venv
	$(PY) -m platformctl docs

clean:
	rm -rf build
