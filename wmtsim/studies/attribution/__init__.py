"""Mechanism attribution: which of WMT's mechanisms buys the difference between two
configurations?

What it answers: the Shapley decomposition of mean(Q) − mean(P) over the switches that
differ (`attribution`, the game's values in `shapley`), each contribution with its
interval and test, printed as a table (`table`).

Door: `wmtsim.studies.attribution.attribution` (`attribute`).
CLI: `wmtsim attribute`.
Dashboard: Why (attribution, claims).
"""
