# relkit — run `make help` for the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.DEFAULT_GOAL := help
.PHONY: help install install-dev demo test lint fmt doctest nbval test-all lab bench clean

help:  ## Show this help
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEVSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,ray]'
	touch $@ $(STAMP)

install: $(STAMP)  ## Create .venv (if missing) and install relkit

install-dev: $(DEVSTAMP)  ## Create .venv (if missing) and install relkit with the dev extra

demo: $(STAMP)  ## Run the main job on the bundled LANL data; writes out/report.html
	$(BIN)/relkit demo --out out/

lint: $(DEVSTAMP)  ## ruff (lint and format check) over code, tests and notebooks
	$(BIN)/ruff check relkit tests bench notebooks
	$(BIN)/ruff format --check relkit tests bench

fmt: $(DEVSTAMP)  ## Format and autofix with ruff
	$(BIN)/ruff format relkit tests bench
	$(BIN)/ruff check --fix relkit tests bench notebooks

doctest: $(DEVSTAMP)  ## Run the docstring examples only
	$(BIN)/python -m pytest relkit --doctest-modules -q

nbval: $(DEVSTAMP)  ## Run the notebooks under nbval against their committed outputs
	$(BIN)/python -m pytest -p no:cacheprovider --nbval --nbval-current-env \
		--nbval-sanitize-with notebooks/nbval_sanitize.cfg notebooks/ -q

test: lint  ## Lint, then the whole suite: unit, doctest and notebook tests
	$(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory nbval

test-all: test  ## make test, plus the tests marked slow (none selected is fine)
	$(BIN)/python -m pytest -q -m slow || [ $$? -eq 5 ]

lab: $(DEVSTAMP)  ## Start JupyterLab on notebooks/
	$(BIN)/jupyter lab notebooks/

bench: $(DEVSTAMP)  ## Run the benchmarks in bench/ (ratios against an in-run baseline)
	$(BIN)/python bench/run.py

clean:  ## Remove the virtualenv, outputs and caches
	rm -rf $(VENV) out .pytest_cache .ruff_cache relkit.duckdb
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
