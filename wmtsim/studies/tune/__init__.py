"""Tuning: which settings of WMT's parameters trade the objectives best, out of sample?

What it answers: a Pareto set of WMT parameter settings found by Optuna's samplers on
fit seeds (`tune`), validated against the shipped setting on held-out seeds and
scenarios (`validate`), written with its charts (`write`); the study's journal
(`journal`) makes every run resumable.

Door: `wmtsim.studies.tune.tune` (`Fit`, `tune`, `chosen`).
CLI: `wmtsim tune`.
Dashboard: none.
"""
