"""The field on equal terms: WMT against the field's retention policies.

What it answers: every policy across token budgets on common random numbers, with each
"WMT beats X" as a Holm-corrected claim (`curves`); whether every policy plays on equal
terms (`parity`); how robust each verdict is to rule flips and calibrations
(`robustness`). The rules of each policy are in docs/field.md.

Door: `wmtsim.studies.field.curves` (`budget_curves`).
CLI: `wmtsim compare --budget`.
Dashboard: none.
"""
