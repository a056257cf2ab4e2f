# Set-up is part of every target: the venv is created on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= demo-dev

.PHONY: venv tools plan test lint bench docs clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

# promtool and the Prometheus server for the rule and dashboard-query tests (Debian's package).
tools:
	@command -v promtool >/dev/null || { apt-get update && apt-get install -y --no-install-recommends prometheus; }

plan: venv
	$(PY) -m platformctl plan $(STACK)
	$(PY) -m platformctl policy $(STACK) --plan build/$(STACK)

test: venv tools
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
