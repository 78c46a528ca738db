"""Coverage studies: does every interval and test wmtsim reports cover as it claims?

What it answers: known-truth cases for each procedure (paired intervals, the pooled
zero bound, Sobol and Morris, grid tests, attack's reported harm, claims' margins), run
by `scripts/coverage_study.py` and the slow tests; results in docs/statistics.md.

Door: `wmtsim.studies.coverage.cases`.
CLI: none.
Dashboard: none.
"""
