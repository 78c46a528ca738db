# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-all lint bench clean screenshots study docs mutation

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,dashboard,cluster]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/wmtsim warmup  # every numba kernel any command uses, compiled once (then cached)
	$(BIN)/wmtsim compare scenarios/paper_poisoning.toml --n 2000
	$(BIN)/wmtsim demo

# make test: everything but the slow tier (tests marked `slow`: Monte-Carlo coverage
# studies and long end-to-end runs, pyproject.toml's markers); make test-all: all of it.
test: setup
	$(BIN)/ruff check wmtsim tests benchmarks why_study scripts
	$(BIN)/mypy
	$(BIN)/wmtsim warmup  # compile the numba kernels once, before two test workers need them
	$(BIN)/pytest -n 2 -q --dist loadgroup -m "not slow"  # xdist_group: browser tests share one worker

test-all: setup
	$(BIN)/ruff check wmtsim tests benchmarks why_study scripts
	$(BIN)/mypy
	$(BIN)/wmtsim warmup
	$(BIN)/pytest -n 2 -q --dist loadgroup

lint: setup
	$(BIN)/ruff check wmtsim tests benchmarks why_study scripts
	$(BIN)/mypy

bench: setup
	$(BIN)/python -m benchmarks.run

study: setup  # regenerate the "why" study: why_study/tables/, docs/figures/, docs/findings.md
	$(BIN)/python -m why_study.run
	nice -n 10 $(BIN)/python -m why_study.design_study
	$(BIN)/python scripts/dynamics_findings.py  # the population-dynamics finding

docs: setup  # regenerate every generated block of README.md and docs/ (scripts/docs.py)
	$(BIN)/python scripts/docs.py

clean:
	rm -rf $(VENV) results .pytest_cache .mypy_cache .ruff_cache

screenshots: setup  # refresh the README's dashboard pictures (needs Debian's chromium)
	WMTSIM_SCREENSHOTS=docs/screenshots $(BIN)/pytest -q tests/interfaces/test_dashboard_browser.py

mutation: setup  # bounded mutation run (cosmic-ray; docs/testing.md); not in CI, ~1 h on 2 cores
	nice -n 15 $(BIN)/python scripts/mutation.py
