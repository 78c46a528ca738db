"""The paper's tables beside the simulated ones, and where each of its claims holds.

What it answers: a scenario's configurations run on common random numbers and shown
beside the paper's Table 4 or Tables 1–3 with intervals and paired differences
(`report`), the paper's claims tested on them (`paper_checks`; what the paper's own rows
imply, `paper_reading`), how many trajectories make the intervals narrow enough
(`precision`), and the claims map: where, across a sweep of the world, each claim holds
(`claims`).

Door: `wmtsim.studies.compare.report` (`compare`, `run_policies`).
CLI: `wmtsim compare`, `wmtsim run`, `wmtsim claims`.
Dashboard: Compare configurations, Why (attribution, claims).
"""
