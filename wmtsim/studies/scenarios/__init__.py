"""Scenarios: a study described in one TOML file (docs/scenario_format.md).

What it answers: which world, which stubs, which policies and which paper table a study
is about, read from a file with every error naming the file, the key and what is allowed.
`scenario` reads, validates and lists the shipped scenarios; `schema` declares the file's
sections and writes its JSON Schema; `toml_files` is the size-capped TOML reader every
study file (scenarios, sweeps) goes through.

Door: `wmtsim.studies.scenarios.scenario` (`load_scenario`, `shipped_scenarios`).
CLI: `wmtsim run`, `wmtsim schema`.
Dashboard: Compare configurations.
"""
