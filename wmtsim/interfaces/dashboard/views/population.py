"""Population dynamics: how poison lives, spreads and dies over many trajectories, per
configuration; a click on a survival curve opens a trajectory that shows it on the
Poisoning dynamics page."""

from __future__ import annotations

from typing import Any

import altair as alt
import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard import charts, services_population, services_runs, widgets

st.title("Population dynamics")
st.caption("Every trajectory of the scenario at once, from the engine's aggregates (no step "
           "records): the probability that a poison still remains — eligible, or carried "
           "by an eligible summary (IP's rule, Eq. 10) — k prompt steps after its "
           "injection (Kaplan–Meier, censored at the trajectory's end, 95% log–log band), "
           "how each poison ends (its fate), and per step the share of prompts whose "
           "context is contaminated (the steps the blast radius BR counts). Click a curve "
           "to open a trajectory that shows that point on the Poisoning dynamics page.")

ref = widgets.scenario_picker("pop")
if ref is None:
    st.stop()
info = services_runs.scenario_info(*ref)
labels = services_runs.policy_labels()
widgets.derive_state("pop", ref, {
    "pop_policies": list(info["policies"]) or ["a2_no_controller", "wmt"],
    "pop_n": 1000, "pop_seed": info["seed"], "pop_kind": "all"},
    keep=widgets.picker_keys("pop"))
widgets.whole_tags()
with st.sidebar:
    chosen = st.multiselect("Configurations", list(labels), format_func=lambda p: labels[p],
                            key="pop_policies")
    n = int(st.number_input("Trajectories", min_value=10, max_value=100_000, step=500,
                            key="pop_n"))
    seed = int(st.number_input("Seed", min_value=0, step=1, key="pop_seed"))
    kind = st.selectbox("Poison kind", ["all", "failed", "plausible", "global", "summary"],
                        key="pop_kind")
if not chosen:
    st.info("Choose at least one configuration in the sidebar.")
    st.stop()

tables = services_population.population_tables(*ref, tuple(chosen), n, seed)


def named(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with a ``configuration`` column: the names the sidebar uses."""
    return frame.with_columns(configuration=pl.col("policy").replace_strict(
        labels, default=pl.col("policy")))


survival = named(tables["survival"].filter(pl.col("kind") == kind))
if survival.is_empty():
    st.info(f"No injected poison of kind {kind!r} in this scenario.")
else:
    st.subheader("Survival of poison")
    pick = alt.selection_point(name="pick", fields=["policy", "k"], on="click")
    # A colour, a dash and a marker per configuration, so that curves that run
    # together stay apart; the sidebar's names in the legend.
    order = survival["configuration"].unique(maintain_order=True).to_list()
    base = alt.Chart(survival.to_pandas()).encode(
        x=alt.X("k:Q", title="prompt steps since injection"),
        color=alt.Color("configuration:N", sort=order, title="configuration"),
        strokeDash=alt.StrokeDash("configuration:N", sort=order, title="configuration"),
        shape=alt.Shape("configuration:N", sort=order, title="configuration"))
    chart = alt.layer(
        base.mark_area(opacity=0.2, interpolate="step-after").encode(
            y=alt.Y("low:Q", scale=alt.Scale(domain=[0, 1]),
                    title="P(poison still remains)"), y2="high:Q"),
        base.mark_line(interpolate="step-after").encode(y="survival:Q"),
        base.mark_point(filled=True, size=40).encode(
            y="survival:Q", tooltip=["configuration", "policy", "k", charts.tip("survival"),
                                     charts.tip("low"), charts.tip("high"), "at_risk"]
        ).add_params(pick),
    ).properties(height=320).configure_legend(labelLimit=0)  # names whole
    event = widgets.chart(chart, "pop_curve", f"{info['name']} survival {kind}",
                          select=True)
    life = tables["lifetimes"].filter(pl.col("kind") == kind)
    widgets.table(life.select("policy", "median", "median_low", "median_high", "n"),
                  "pop_lifetimes", f"{info['name']} lifetimes {kind}",
                  whole=("median", "median_low", "median_high", "n"))  # steps, poisons
    selection: Any = event.get("selection", {}) if event else {}
    points = list(selection.get("pick", []))
    if points:
        policy, k = points[0]["policy"], int(points[0]["k"])
        hit = services_population.trajectory_showing(*ref, policy, seed, kind, k)
        if hit is None:
            st.info(f"None of the first {services_population.SEARCH_LIMIT} trajectories has a "
                    f"poison that stops remaining {k} steps after injection under {policy}.")
        else:
            st.write(f"Trajectory {hit['trajectory']}: a {hit['kind']} poison under "
                     f"{labels[policy]} stops remaining {k} steps after injection "
                     f"({hit['fate']}); step {hit['step']} is the last it remained.")
            if st.button("Open it on the Poisoning dynamics page", key="pop_open"):
                # The scenario as picked here (an uploaded one too), and the trajectory
                # and step, which views/dynamics.py applies once it has set up its own
                # widgets' state.
                widgets.carry_scenario(st.session_state["pop_source"], ref, "pop", "dyn",
                                       "Population dynamics")
                st.session_state["population_jump"] = {
                    "policy": policy, "seed": seed, "trajectory": hit["trajectory"],
                    "step": hit["step"]}
                st.switch_page("views/dynamics.py")

st.subheader("Fates of injected poison")
widgets.chart(services_population.fate_chart(named(tables["fates"]).with_columns(
    policy=pl.col("configuration"))).configure_axis(labelLimit=0), "pop_fates",
    f"{info['name']} fates")
widgets.table(tables["fates"].filter(pl.col("kind") == kind).select(
    "policy", "fate", "poisons", "share", "low", "high", "never_selected", "mean_k"),
    "pop_fates_table", f"{info['name']} fates {kind}")
st.subheader("Contamination per step, and its route through summaries")
widgets.chart(services_population.steps_chart(named(tables["steps"]).with_columns(
    policy=pl.col("configuration"))).configure_legend(labelLimit=0), "pop_steps",
              f"{info['name']} contamination per step")
widgets.table(tables["spread"].select("policy", "prompts", "contaminated_share",
                                      "via_summary_share", "summary_only_share"),
              "pop_spread", f"{info['name']} spread")
