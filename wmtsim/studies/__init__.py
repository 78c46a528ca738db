"""Studies: scenarios, sweeps, reports, calibration, analysis, attribution, claims and the
field's budget curves, built on `wmtsim.engine.simulation`."""
