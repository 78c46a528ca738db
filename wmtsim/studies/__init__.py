"""Studies: the questions wmtsim answers, one folder per capability, on `wmtsim.engine`.

`scenarios` (a study in a TOML file), `compare` (the paper's tables beside the simulated
ones; the claims map), `sweeps` (designs, their analysis and sensitivity, screening),
`tune` (Pareto sets validated out of sample), `attack` (the strongest attacker),
`dynamics` (how poison lives and dies), `attribution` (which mechanism buys a
difference), `field` (WMT against the field's policies), `calibration` (the world fitted
to the paper's tables), `coverage` (known-truth checks of every interval) and `stub_fit`
(stubs fitted to a real agent's logs). Each folder's docstring names its door module;
docs/architecture.md maps capability → folder → door → command → dashboard page.
"""
