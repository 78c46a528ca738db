"""Atlas: which WMT knob matters for which metric in which world (Morris screening)."""

from __future__ import annotations

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard import services_atlas, services_runs, widgets

st.title("Screening atlas")
st.caption("Morris elementary effects of Full WMT's parameters (`wmtsim screen`): μ* is "
           "the metric's change per whole range of the knob, with a 95% bootstrap "
           "interval over Morris trajectories. A knob matters when its test says it moves "
           "the metric's mean (Benjamini–Hochberg over the screening's tests, 5%); inert "
           "when it changes nothing; not read when the policy does not read it there. "
           "docs/atlas.md says how the ranges were chosen.")

found = services_atlas.find_screenings()
with st.sidebar:
    choice = st.selectbox("Screening", [*found, "other path"], key="atlas_source",
                          format_func=services_runs.short_path)
    path = (st.text_input("Path to a screen.parquet", key="atlas_path")
            if choice == "other path" else choice)
if not path:
    st.info("No screening found: run `make study` (the shipped atlas) or `wmtsim screen "
            "SCENARIO --out results/screen`, or give a path in the sidebar.")
    st.stop()
try:
    table = services_atlas.screening(path)
except ValueError as e:
    st.info(str(e))
    st.stop()

metrics = table["metric"].unique(maintain_order=True).to_list()
with st.sidebar:
    chosen = st.multiselect("Metrics", metrics, default=metrics, key="atlas_metrics")
shown = table.filter(pl.col("metric").is_in(chosen))
widgets.chart(services_atlas.atlas_chart(shown), "atlas_chart", "screening atlas", stretch=False)
top = shown.filter(pl.col("verdict") == "matters").sort("mu_star", descending=True)
st.subheader(f"{top.height} (world, metric, knob) cells matter beyond noise")
widgets.table(top.select("scenario", "metric", "parameter", "mu_star", "mu_star_low",
                         "mu_star_high", "noise", "mu", "sigma"), "atlas_table",
              "screening atlas matters")
with st.expander("every cell"):
    widgets.table(shown, "atlas_all", "screening atlas")
