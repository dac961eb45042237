# relkit — run `make help` for the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev
# Playwright (dev extra) drives Debian's chromium; it must never fetch a browser.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1

.DEFAULT_GOAL := help
.PHONY: help install install-dev browser demo test lint fmt doctest nbval test-all lab bench clean

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

# Debian's chromium for tests/test_browser.py (Playwright drives it; nothing is
# downloaded by Playwright). Installed once: a machine that has it skips this.
browser:  ## Install Debian's chromium for the browser test when it is missing
	@if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	else echo "make: chromium is missing and this user can neither apt-get nor sudo -n:" \
		"run 'apt-get install chromium' as root (tests/test_browser.py skips locally, fails on CI)" >&2; \
		exit 0; fi; \
	echo "make: installing Debian's chromium for the browser test (once; log in $(VENV)/apt-chromium.log)"; \
	mkdir -p $(VENV); \
	{ $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium \
	  || { $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive \
	       apt-get install -y -q --no-install-recommends chromium; }; } >$(VENV)/apt-chromium.log 2>&1 \
	|| { echo "make: apt-get install chromium failed (see $(VENV)/apt-chromium.log);" \
		"tests/test_browser.py skips locally, fails on CI" >&2; tail -n 5 $(VENV)/apt-chromium.log >&2; }

demo: $(STAMP)  ## Run the main job on the bundled data: out/report.html (simulated GPU run), out/lanl/report.html
	$(BIN)/relkit demo --out out/

lint: $(DEVSTAMP)  ## ruff (lint and format check) over code, tests and notebooks
	$(BIN)/ruff check relkit tests bench notebooks
	$(BIN)/ruff format --check relkit tests bench

fmt: $(DEVSTAMP)  ## Format and autofix with ruff
	$(BIN)/ruff format relkit tests bench
	$(BIN)/ruff check --fix relkit tests bench notebooks

doctest: $(DEVSTAMP)  ## Run the docstring examples only
	$(BIN)/python -m pytest relkit --doctest-modules -q

# The kernels run with the network blocked (.ci/offline/sitecustomize.py), and
# notebooks/conftest.py refuses chart outputs that need a CDN (issue 14 §3).
nbval: $(DEVSTAMP)  ## Run the notebooks offline under nbval against their committed outputs
	RELKIT_BLOCK_NETWORK=1 PYTHONPATH="$(CURDIR)/.ci/offline$${PYTHONPATH:+:$$PYTHONPATH}" \
	$(BIN)/python -m pytest -p no:cacheprovider --nbval --nbval-current-env \
		--nbval-sanitize-with notebooks/nbval_sanitize.cfg notebooks/ -q

test: lint browser  ## Lint, then the whole suite: unit, doctest, browser and notebook tests
	$(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory nbval

test-all: test  ## make test, plus the tests marked slow (none selected is fine)
	$(BIN)/python -m pytest -q -m slow || [ $$? -eq 5 ]

# Jupyter refuses to start as root without --allow-root (a container, CI);
# LAB_ARGS passes more options, e.g. make lab LAB_ARGS="--no-browser --port 8890".
LAB_ARGS ?=
lab: $(DEVSTAMP)  ## Start JupyterLab on notebooks/ (as root or as a user)
	$(BIN)/jupyter lab $$([ "$$(id -u)" = 0 ] && echo --allow-root) $(LAB_ARGS) notebooks/

bench: $(DEVSTAMP)  ## Run the benchmarks in bench/ (ratios against an in-run baseline)
	$(BIN)/python bench/run.py

clean:  ## Remove the virtualenv, outputs and caches
	rm -rf $(VENV) out .pytest_cache .ruff_cache relkit.duckdb
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
