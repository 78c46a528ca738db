"""Calibration: which settings of the world's free knobs reproduce the paper's tables?

What it answers: a fit of the scenario's free knobs to Table 4 (`calibrate`, the
command's fit; `inference`, the fit as inference against a noisy target, with its
journal `journal`), judged at fresh seeds (`fresh_seeds`), with a plausible set that is
a confidence set at the replicate count used (`plausible`); the mechanism families
compared as whole models (`families`); which counts can stand behind Table 4's printed
ratios (`paper_counts`); Tables 1–3 per model and benchmark (`benchmarks`).

Door: `wmtsim.studies.calibration.calibrate` (`calibrate`).
CLI: `wmtsim calibrate`.
Dashboard: none.
"""
