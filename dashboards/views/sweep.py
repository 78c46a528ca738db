"""Sweep explorer: heatmaps, the Pareto front, sensitivity, and a drill-down."""

from __future__ import annotations

import polars as pl
import streamlit as st

from dashboards import charts, services, widgets

st.title("Sweep explorer")
st.caption("Open a sweep output folder (`wmtsim sweep ... --out DIR`): per-point means "
           "over any two parameters, the TSR / prompt-token Pareto front, sensitivity "
           "indices, and any point's trajectories.")

found = services.find_sweeps()
# ?folder=DIR in the address opens that sweep (a shareable link).
default = st.query_params.get("folder") or (found[0] if found else "")
folder = st.sidebar.text_input("Sweep folder", value=default, key="sweep_folder",
                               help="a folder holding manifest.json; results/ is searched")
if found:
    st.sidebar.caption("found: " + ", ".join(found[:10]))
if not folder:
    st.info("Enter a sweep output folder in the sidebar.")
    st.stop()
try:
    view = services.load_sweep_folder(folder, services.sweep_mtime(folder))
except (services.Unavailable, ValueError, OSError) as e:
    widgets.not_available("This sweep", e)
    st.stop()
mtime = services.sweep_mtime(folder)
table = view.table
m = view.manifest
st.subheader(f"{m.get('name', '?')}: {m['design']['kind']} design, "
             f"{table.height} of {m.get('n_points', '?')} points computed")
if table.is_empty():
    st.info("No point of this sweep has been computed yet.")
    st.stop()

metrics = [x for x in view.metrics if x in table.columns]
params = list(view.parameters)
policies = table["policy"].unique(maintain_order=True).to_list()
with st.sidebar:
    policy = st.selectbox("Configuration", policies, key="sweep_policy")
    metric = st.selectbox("Metric", metrics,
                          index=metrics.index("tsr") if "tsr" in metrics else 0,
                          key="sweep_metric")
rows = table.filter(pl.col("policy") == policy)

st.markdown("#### Heatmap")
if len(params) >= 2:
    c1, c2 = st.columns(2)
    x = c1.selectbox("x parameter", params, index=0, key="sweep_x")
    y = c2.selectbox("y parameter", params, index=1, key="sweep_y")
    if x == y:
        st.info("Choose two different parameters.")
    else:
        cells = services.grid_means(rows, x, y, metric)
        st.altair_chart(charts.heatmap(cells, x, y, metric), width="stretch",
                        key="sweep_heatmap")
elif len(params) == 1:
    st.info("The sweep varies one parameter: the heatmap needs two.")
else:
    st.info("The sweep varies no parameter.")

st.markdown("#### Pareto front: task success vs prompt tokens")
if not {"tsr", "prompt_tokens"} <= set(table.columns):
    widgets.not_available("The Pareto front", "the sweep has no tsr / prompt_tokens")
else:
    front = services.pareto(table, "prompt_tokens", "tsr")
    tooltip = ["policy", *params, "tsr", "prompt_tokens", "asr", "br"]
    tooltip = [t for t in tooltip if t in table.columns]
    st.altair_chart(charts.pareto_chart(table, front, "prompt_tokens", "tsr", tooltip),
                    width="stretch", key="sweep_pareto")
    with st.expander(f"{front.height} points on the front"):
        st.dataframe(front.select(tooltip), hide_index=True)

st.markdown("#### Sensitivity indices")
try:
    sens = services.sensitivity(view.root, metric, mtime)
    sens = sens.filter(pl.col("policy") == policy) if sens.height else sens
    if sens.is_empty():
        st.info("No complete group of A, B and AB rows yet for this configuration.")
    else:
        st.altair_chart(services.sensitivity_chart(sens), key="sweep_sens")
        st.dataframe(sens, hide_index=True, key="sweep_sens_table")
except (services.Unavailable, ValueError) as e:
    widgets.not_available("Sensitivity indices", e)

st.markdown("#### Drill down")
points = rows.with_columns(
    label=pl.concat_str([pl.lit(f"{p}=") + pl.col(p).cast(pl.String) for p in params]
                        or [pl.col("key")], separator=", "))
labels = dict(zip(points["key"].to_list(), points["label"].to_list(), strict=True))
key = st.selectbox("Point", list(labels), format_func=lambda k: labels[k],
                   key="sweep_point")
traj = services.point_trajectories(view.root, key, mtime)
st.dataframe(traj.drop("key"), hide_index=True, height=200, key="sweep_traj_table")
if traj.height:
    t_ids = traj["trajectory"].to_list()
    trajectory = st.selectbox("Trajectory", t_ids, key="sweep_trajectory")
    try:
        tv = services.sweep_trajectory(view.root, key, int(trajectory), mtime)
    except (services.Unavailable, ValueError, OSError) as e:
        widgets.not_available("This trajectory's steps", e)
    else:
        n_steps = services.n_steps(tv.steps)
        step = st.slider("Step", 0, max(n_steps - 1, 1), 0, key="sweep_step")
        widgets.trajectory_panel(tv, step)
