# Two entry points: `make run` (the main job) and `make test` (the whole suite plus the contract check).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
SHARED ?= ../shared

.PHONY: run test lint bench clean

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev]'
	touch $@

# Headless Chromium for the HTML report tests (Debian package; needs root or an existing install).
.chromium:
	command -v chromium >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)
	touch $@

run: $(VENV)/.installed
	$(VENV)/bin/swapjudge analyze examples/mtbench_gpt4_vs_vicuna.jsonl --format text || test $$? -eq 1

test: $(VENV)/.installed .chromium
	$(VENV)/bin/pytest
	$(PY) $(SHARED)/checks/contract.py $(CURDIR)/$(VENV)/bin/swapjudge

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy

bench: $(VENV)/.installed
	$(PY) bench/bench_analyze.py
	$(PY) bench/bench_rank.py
	$(PY) bench/bench_runner.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache .mypy_cache .chromium
