"""Sweeps: what a metric does across a design of knob settings, and which knobs matter.

What it answers: the value of every metric at every point of a grid, Latin hypercube,
Sobol or random design (docs/sweeps.md), resumable chunk by chunk on one machine or a
Dask cluster, then analysed: intervals per point, Sobol indices with honest intervals,
"flat means flat" tests, Pareto fronts, and Morris screening of which knobs matter.
`spec` (the validated sweep), `file` (the sweep file), `design` (rows and points), `run`
(executors), `store` (the output folder), `analysis`, `sobol`, `flatness`; `screen` is
Morris screening over `knob_ranges`, evaluated in memory by `evaluate`.

Door: `wmtsim.studies.sweeps.sweep` (`run_sweep`, `load_sweep`, `plan`).
CLI: `wmtsim sweep`, `wmtsim analyze`, `wmtsim screen`.
Dashboard: Sweep explorer, Screening atlas.
"""
