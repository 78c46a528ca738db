# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # From an agent's log to a passing conformance suite
#
# The workflow of docs/conformance.md, end to end: write your agent's memory events as a
# trace, get the reference's golden `expect` lines, see which rules of the math the trace
# exercised, then drive your own implementation with the shipped corpus and generated
# event streams. This notebook is executed by the test suite (it keeps no saved outputs).

# %%
import json
import sys
import tempfile
from pathlib import Path

from wmtsim.conformance.expect import annotate
from wmtsim.engine.trace.trace import run
from wmtsim.testing import run_conformance

work = Path(tempfile.mkdtemp())
here = Path.cwd() if (Path.cwd() / "naive_wmt.py").exists() else Path.cwd() / "examples"
sys.path.insert(0, str(here))

# %% [markdown]
# ## 1. An agent's log as a trace
# One subtask with a failed and a successful lookup, three prompt steps, then the subtask
# completes (is folded).

# %%
log = [
    {"op": "query", "id": "q"},
    {"op": "task", "id": "find", "parent": "q"},
    {"op": "action", "id": "blog", "parent": "find", "poisoned": True},
    {"op": "action", "id": "arxiv", "parent": "find"},
    {"op": "outcome", "id": "blog", "result": "failure"},
    {"op": "outcome", "id": "arxiv", "result": "success"},
    {"op": "select", "selected": ["arxiv", "find"]},
    {"op": "select", "selected": ["arxiv", "find"]},
    {"op": "select", "selected": ["arxiv", "find"]},
    {"op": "complete", "id": "find"},
]
trace = work / "log.jsonl"
trace.write_text("".join(json.dumps(e) + "\n" for e in log))

# %% [markdown]
# ## 2. Golden `expect` lines (what `wmtsim expect log.jsonl --out golden.jsonl` writes)

# %%
golden = annotate(trace, at=["select", "end"])
print("\n".join(golden[-5:]))
assert run(golden).divergence is None

# %% [markdown]
# ## 3. Which rules of the math did the log exercise? (`wmtsim check --coverage`)

# %%
coverage = run(golden, rules=True).coverage
hit = [r for r, n in coverage.items() if n]
print(f"{len(hit)} of {len(coverage)} named rules exercised, e.g. {hit[:6]}")
print("never exercised, e.g.:", [r for r, n in coverage.items() if not n][:6])

# %% [markdown]
# A short log proves little: the shipped corpus exercises every rule. Drive your own
# implementation with it (and with Hypothesis-generated streams): here the readable example
# in examples/naive_wmt.py, written from the equations without importing wmtsim.

# %%
from naive_wmt import NaiveWMT  # noqa: E402

report = run_conformance(NaiveWMT, examples=50, save=work)
assert report.passed

# %% [markdown]
# ## 4. A bug, caught and shrunk
# A mutant that forgets the cap M of Eq. 4 (ρ^m instead of ρ^min(m, M)):

# %%
from naive_wmt_mutants import UncappedDecay  # noqa: E402

report = run_conformance(UncappedDecay, examples=0, save=work)
assert not report.passed and len(report.failure.lines) <= 12
