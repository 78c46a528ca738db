"""Population dynamics: how poison lives, spreads and dies over many trajectories.

What it answers: per step, how many injected poisons are eligible, selected, folded,
suppressed or superseded, and the survival of each injection (`dynamics`), with its
charts (`charts`).

Door: `wmtsim.studies.dynamics.dynamics` (`population_dynamics`).
CLI: `wmtsim dynamics`.
Dashboard: Population dynamics.
"""
