"""Sweep explorer: heatmaps, the Pareto front, sensitivity, and a drill-down."""

from __future__ import annotations

import polars as pl
import streamlit as st

from wmtsim.core.formatting import interval, plural
from wmtsim.interfaces.dashboard import (
    charts,
    services_dynamics,
    services_runs,
    services_sweep,
    widgets,
)

st.title("Sweep explorer")
st.caption("Open a sweep output folder (`wmtsim sweep ... --out DIR`): per-point means "
           "over any two parameters, the TSR / prompt-token Pareto front, sensitivity "
           "indices, and any point's trajectories.")

found = services_sweep.find_sweeps()
# ?folder=DIR in the address opens that sweep (a shareable link); the address follows the
# picker, so a copied link always opens the sweep shown.
linked = st.query_params.get("folder")
options = found if linked in found or not linked else [linked, *found]
if not options:
    st.info("No sweep folder found under results/. Run one, e.g. "
            "`wmtsim sweep sweeps/rho_m_grid.toml --out results/rho_m`, then reload.")
    st.stop()
if linked and st.session_state.get("sweep__linked") != linked:
    st.session_state["sweep_folder"] = linked  # a new link wins over the last pick
folder = st.sidebar.selectbox("Sweep folder", options, key="sweep_folder",
                              format_func=services_runs.short_path,
                              help="the sweeps under results/, newest first")
st.query_params["folder"] = folder
st.session_state["sweep__linked"] = folder
try:
    view = services_sweep.load_sweep_folder(folder, services_sweep.sweep_mtime(folder))
except (services_runs.Unavailable, ValueError, OSError) as e:
    widgets.not_available("This sweep", e)
    st.stop()
mtime = services_sweep.sweep_mtime(folder)
table = view.table
m = view.manifest
st.subheader(f"{m.get('name', '?')}: {m['design']['kind']} design, "
             f"{table.height} of {plural(m.get('n_points', 0), 'point')} computed")
if table.is_empty():
    st.info("No point of this sweep has been computed yet.")
    st.stop()

metrics = [x for x in view.metrics if x in table.columns]
params = list(view.parameters)
policies = table["policy"].unique(maintain_order=True).to_list()
widgets.derive_state("sweep", folder, {
    # Full WMT first when the sweep has it: the other configurations may not read the
    # swept knobs at all (Linear reads neither rho nor M), so their grid is flat.
    "sweep_policy": "wmt" if "wmt" in policies else policies[0],
    "sweep_metric": services_sweep.opening_metric(
        view, "wmt" if "wmt" in policies else policies[0], mtime),
    **({"sweep_x": params[0], "sweep_y": params[1]} if len(params) >= 2 else {}),
}, keep={"sweep_folder", "sweep__linked"})
with st.sidebar:
    policy = st.selectbox("Configuration", policies, key="sweep_policy")
    metric = st.selectbox("Metric", metrics, key="sweep_metric")
rows = table.filter(pl.col("policy") == policy)

st.markdown("#### Heatmap")
if len(params) >= 2:
    c1, c2 = st.columns(2)
    x = c1.selectbox("x parameter", params, key="sweep_x")
    y = c2.selectbox("y parameter", params, key="sweep_y")
    if x == y:
        st.info("Choose two different parameters.")
    else:
        continuous = services_sweep.is_continuous(view, x) and services_sweep.is_continuous(view, y)
        bins = services_sweep.HEATMAP_BINS if continuous else None
        cells = services_sweep.grid_means(rows, x, y, metric, bins=bins)
        if continuous:
            st.caption(widgets.literal(f"{x} and {y}") + " are drawn from ranges: each "
                       "cell is the mean over the points in its bin (hover for the bounds "
                       "and the count).")
        widgets.chart(charts.heatmap(cells, x, y, metric), "sweep_heatmap",
                      f"{m.get('name', 'sweep')} {metric} heatmap")
elif len(params) == 1:
    st.info("The sweep varies one parameter: the heatmap needs two.")
else:
    st.info("The sweep varies no parameter.")
try:
    flat = services_sweep.flatness(view.root, metric, mtime)
    flat = flat.filter(pl.col("policy") == policy) if flat.height else flat
    if flat.height:
        row = flat.row(0, named=True)
        best = rows.filter(pl.col("row") == row["best_row"])
        text = services_sweep.flatness_text(row, tuple(params),
                                            best.row(0, named=True) if best.height else None)
        (st.info if row["flat"] else st.success)(text)
except (services_runs.Unavailable, ValueError) as e:
    widgets.not_available("The flatness test", e)

st.markdown("#### Pareto front: task success vs prompt tokens")
if not {"tsr", "prompt_tokens"} <= set(table.columns):
    widgets.not_available("The Pareto front", "the sweep has no tsr / prompt_tokens")
else:
    front = services_sweep.pareto(table, "prompt_tokens", "tsr")
    tooltip = ["policy", *params, "tsr", "prompt_tokens", "asr", "br"]
    tooltip = [t for t in tooltip if t in table.columns]
    widgets.chart(charts.pareto_chart(table, front, "prompt_tokens", "tsr", tooltip),
                  "sweep_pareto", f"{m.get('name', 'sweep')} pareto front")
    with st.expander(f"{plural(front.height, 'point')} on the front"):
        widgets.table(front.select(tooltip), "sweep_front", f"{m.get('name', 'sweep')} front")

st.markdown("#### Sensitivity indices")
if m["design"]["kind"] != "sobol":  # what the section needs, not a problem of this sweep
    st.caption(f"Sobol sensitivity indices need a Sobol design (`[design] kind = "
               f"\"sobol\"`); this sweep is a {m['design']['kind']} design.")
else:
    try:
        sens = services_sweep.sensitivity(view.root, metric, mtime)
        sens = sens.filter(pl.col("policy") == policy) if sens.height else sens
        if sens.is_empty():
            st.info("No complete group of A, B and AB rows yet for this configuration.")
        else:
            widgets.chart(services_sweep.sensitivity_chart(sens), "sweep_sens",
                          f"{m.get('name', 'sweep')} {metric} sensitivity", stretch=False)
            how = sens["method"][0] if "method" in sens.columns else "bootstrap"
            st.caption(f"index [95% interval: {how}]; – where the metric does not vary "
                       "across the design. Several scramblings (`[design] scramblings`) give "
                       "replicate intervals; one gives a bootstrap that is too wide.")
            st.dataframe(sens.select(
                "parameter",
                *[pl.Series(k, [interval(r[k], r[f"{k}_low"], r[f"{k}_high"])
                                for r in sens.iter_rows(named=True)], dtype=pl.String)
                  for k in ("S1", "ST")], "scenario", "replicate", "n_base"),
                hide_index=True, key="sweep_sens_table")
            widgets.table_downloads(sens, "sweep_sens_table", f"{m.get('name', 'sweep')} "
                                    f"{metric} sensitivity")
    except (services_runs.Unavailable, ValueError) as e:
        widgets.not_available("Sensitivity indices", e)

st.markdown("#### Drill down")
labels = {r["key"]: ", ".join(f"{p}={r[p]:.3g}" if isinstance(r[p], float)
                              else f"{p}={r[p]}" for p in params) or r["key"]
          for r in rows.iter_rows(named=True)}
if st.session_state.get("sweep_point") not in labels:  # a new folder or configuration
    st.session_state["sweep_point"] = next(iter(labels))
key = st.selectbox("Point", list(labels), format_func=lambda k: labels[k],
                   key="sweep_point", help=f"a point of {services_runs.short_path(folder)}")
traj = services_sweep.point_trajectories(view.root, key, mtime)
widgets.table(traj.drop("key"), "sweep_traj_table", f"{m.get('name', 'sweep')} point "
              f"{labels[key]} trajectories", height=200, whole=services_runs.count_metrics())
if traj.height:
    t_ids = traj["trajectory"].to_list()
    if st.session_state.get("sweep_trajectory") not in t_ids:
        st.session_state["sweep_trajectory"] = t_ids[0]
    trajectory = st.selectbox("Trajectory", t_ids, key="sweep_trajectory")
    try:
        tv = services_sweep.sweep_trajectory(view.root, key, int(trajectory), mtime)
    except (services_runs.Unavailable, ValueError, OSError) as e:
        widgets.not_available("This trajectory's steps", e)
    else:
        n_steps = services_dynamics.n_steps(tv.steps)
        # The last step by default, as on the Poisoning dynamics page: the whole tree.
        widgets.clamp_state("sweep_step", n_steps - 1, 0, max(n_steps - 1, 0))
        step = st.slider("Step", 0, max(n_steps - 1, 1), key="sweep_step")
        widgets.trajectory_panel(tv, step, key="sweep_panel")
