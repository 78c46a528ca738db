# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench clean screenshots study docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,dashboard,cluster]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/wmtsim compare scenarios/paper_poisoning.toml --n 2000
	$(BIN)/wmtsim demo

test: setup
	$(BIN)/ruff check wmtsim tests benchmarks studies scripts
	$(BIN)/mypy
	$(BIN)/wmtsim warmup  # compile the numba kernels once, before two test workers need them
	$(BIN)/pytest -n 2 -q

lint: setup
	$(BIN)/ruff check wmtsim tests benchmarks studies scripts
	$(BIN)/mypy

bench: setup
	$(BIN)/python -m benchmarks.run

study: setup  # regenerate the "why" study: studies/tables/, docs/figures/, docs/findings.md
	$(BIN)/python -m studies.run

docs: setup  # regenerate every generated block of README.md and docs/ (scripts/docs.py)
	$(BIN)/python scripts/docs.py

clean:
	rm -rf $(VENV) results .pytest_cache .mypy_cache .ruff_cache

screenshots: setup  # refresh the README's dashboard pictures (needs Debian's chromium)
	WMTSIM_SCREENSHOTS=docs/screenshots $(BIN)/pytest -q tests/interfaces/test_dashboard_browser.py
