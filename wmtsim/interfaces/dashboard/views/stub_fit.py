"""Stubs fitted to a log: the calibration of a fitted stub log (`wmtsim fit-stubs`)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from wmtsim.interfaces.dashboard import services_runs, services_stub_fit, widgets

st.title("Stubs fitted to a log")
st.caption("A log of what an agent's language model chose and answered (docs/stub_logs.md) "
           "fitted to wmtsim's stubs by maximum likelihood, as `wmtsim fit-stubs` does. "
           "Each point is a tenth of the observations, sorted by the probability the fitted "
           "stubs give them: its observed rate (95% Wilson interval) against that "
           "probability. On the diagonal, the stub family describes the log.")

found = services_stub_fit.find_logs()
with st.sidebar:
    choice = st.selectbox("Stub log", [*found, "other path"], key="stubfit_source",
                          format_func=services_runs.short_path)
    path = (st.text_input("Path to a stub log (.jsonl)", key="stubfit_path")
            if choice == "other path" else choice)
if not path:
    st.info("No stub log found: give the path of one in the sidebar (`wmtsim simulate-log "
            "results/sim.jsonl` draws one from wmtsim's own stubs).")
    st.stop()
try:
    fit = services_stub_fit.fitted(path)
except ValueError as e:
    st.info(str(e))
    st.stop()

name = Path(path).name
widgets.chart(services_stub_fit.calibration_chart(fit.calibration, f"{name}: observed vs "
                                                  "predicted by decile"),
              "stubfit_chart", f"{name} calibration", stretch=False)
verdicts = fit.misfit.to_dicts()
bad = [v["kind"] for v in verdicts if not v["described"]]
st.subheader(f"{fit.events} events: " + (
    "the stub family describes every kind" if not bad else
    "not described by the stub family: " + ", ".join(bad)))
widgets.table(fit.misfit, "stubfit_misfit", f"{name} goodness of fit")
st.subheader("Estimates (95% profile-likelihood intervals)")
widgets.table(fit.estimates, "stubfit_estimates", f"{name} estimates")
