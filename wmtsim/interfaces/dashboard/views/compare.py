"""Compare configurations: metrics with intervals beside the paper's values."""

from __future__ import annotations

import polars as pl
import streamlit as st

from wmtsim.core.formatting import interval, plural
from wmtsim.interfaces.dashboard import charts, services_runs, widgets

st.title("Compare configurations")
st.caption("Every configuration runs on the same trajectories (common random numbers). "
           "Intervals are percentile-bootstrap 95% intervals (`SimResult.summary`). Ratio "
           "metrics are shown pooled over trajectories (Σ numerator / Σ denominator, as "
           "the paper's table over its corpus and `wmtsim compare` compute them) or as the "
           "mean of per-trajectory values.")

POOLED = "pooled over trajectories (Σ/Σ)"
MEAN = "mean of per-trajectory values"

ref = widgets.scenario_picker("cmp")
if ref is None:
    st.stop()
info = services_runs.scenario_info(*ref)
labels = services_runs.policy_labels()
metrics = services_runs.metric_info()

# A benign study (the paper's Tables 1-3, or none) is read by its step accuracy too; a
# world without poison has no poison metric to show (ASR, PRR, IP, BR, AF: 0 or –).
attack = {"asr", "prr", "ip", "br", "af", "tsr", "ccr", "prompt_tokens"}
poisoned = bool(info["world"].get("poison"))
default_metrics = [m for m in metrics if (m in attack and (poisoned or m not in
                                                           services_runs.poison_metrics()))
                   or (m == "accuracy" and info["paper"] != "table4")]
widgets.derive_state("cmp", ref, {
    "cmp_policies": list(info["policies"]) or ["linear", "wmt"],
    "cmp_n": min(info["n"], 1000), "cmp_seed": info["seed"],
    "cmp_metrics": default_metrics, "cmp_value": POOLED,
    **widgets.param_defaults(info["params"], "cmp")}, keep=widgets.picker_keys("cmp"))

widgets.whole_tags()
with st.sidebar:
    chosen = st.multiselect("Configurations", list(labels), format_func=lambda p: labels[p],
                            key="cmp_policies")
    n = int(st.number_input("Trajectories (n)", min_value=2, max_value=100_000, step=50,
                            key="cmp_n"))
    seed = int(st.number_input("Seed", step=1, key="cmp_seed"))
    shown_metrics = st.multiselect("Metrics", list(metrics), key="cmp_metrics")
    value = st.radio("Value", [POOLED, MEAN], key="cmp_value")
params = widgets.params_editor(info["params"], "cmp")
if params:
    st.sidebar.caption("changed: " + ", ".join(f"{k}={v}" for k, v in params))

if not chosen:
    st.info("Choose at least one configuration in the sidebar.")
    st.stop()

summary = services_runs.compare(*ref, tuple(chosen), n, seed, params)
summary = summary.filter(pl.col("metric").is_in(shown_metrics))
if value == POOLED:  # the pooled value and its interval take the shown columns
    summary = summary.with_columns(mean=pl.col("pooled"), low=pl.col("pooled_low"),
                                   high=pl.col("pooled_high"))
if value == MEAN:  # the paper's values are pooled: never beside per-trajectory means
    if info["paper"] == "table4":
        st.caption("The paper's Table 4 values are pooled (Σ/Σ): choose the pooled value in "
                   "the sidebar to see them beside the simulator's.")
else:
    try:
        paper = services_runs.paper_values(info["paper"])
        summary = summary.join(paper, on=["policy", "metric"], how="left")
        if params:
            st.caption("Parameters differ from the scenario's: the paper's values are shown "
                       "for reference only.")
    except services_runs.Unavailable as e:  # most scenarios have no paper table: a note
        if info["paper"] == "table4":
            widgets.not_available("The paper's values", e)
        elif info["paper"] is None:
            st.caption("The paper reports no table for this scenario: no paper values here.")

table = summary.with_columns(
    configuration=pl.col("policy").replace_strict(labels, default=pl.col("policy")),
    better=pl.col("metric").replace_strict({k: v[1] for k, v in metrics.items()},
                                           default=""),
).select("configuration", "metric", "better", "mean", "low", "high", "n",
         *(["paper"] if "paper" in summary.columns else []))
shown_policies = table["configuration"].unique(maintain_order=True).to_list()
runs = sorted(set(summary["n"].to_list()))
st.subheader(f"{plural(len(shown_policies), 'configuration')} × "
             f"{plural(runs[0] if len(runs) == 1 else n, 'trajectory', 'trajectories')}, "
             f"seed {seed}")
has_paper = "paper" in table.columns
st.caption(f"{value} [95% interval], three significant digits; "
           + ("the paper's value (as printed) after the dot where it reports one"
              if has_paper else "– where a value is undefined"))
cells = [interval(r["mean"], r["low"], r["high"])
         + (f" · paper {r['paper']:g}" if has_paper and r["paper"] is not None else "")
         for r in table.iter_rows(named=True)]
wide = (table.with_columns(cell=pl.Series(cells, dtype=pl.String))
        .pivot(on="configuration", index=["metric", "better"], values="cell",
               maintain_order=True))
st.table(wide.to_pandas().set_index("metric"))
# The downloads hold the numbers (full precision, each bound in its own column), not
# the cells drawn above.
widgets.table_downloads(widgets.wide_numbers(table, ["metric", "better"], "configuration"),
                        "cmp_wide", f"{info['name']} comparison")
with st.expander("the same numbers, one row per configuration and metric"):
    widgets.table(table, "cmp_long", f"{info['name']} comparison long")
shown_label = "pooled (Σ/Σ)" if value == POOLED else "mean"
st.caption(f"One panel per metric, in the library's order ({', '.join(metrics)}); bars: "
           f"the {shown_label} value, error bars: its 95% interval"
           + ("; black tick marks: the paper's Table 4 value as printed, where it reports "
              "one." if has_paper else "."))
widgets.chart(charts.metric_bars(summary, labels, list(metrics), shown_label), "cmp_bars",
              f"{info['name']} comparison", stretch=False)
if info["paper"] == "table123":
    st.markdown("**The paper's Tables 1–3** (benign study, real benchmarks; mean over "
                "models and benchmarks — a different scale from the simulator's step "
                "accuracy and tokens per task, shown for the ordering of configurations)")
    try:
        widgets.table(services_runs.paper_benign(tuple(chosen)).with_columns(
            configuration=pl.col("policy").replace_strict(labels, default=pl.col("policy"))
        ), "cmp_paper_benign", "paper tables 1-3")
    except services_runs.Unavailable as e:
        widgets.not_available("The paper's Tables 1–3", e)
with st.expander("metric definitions"):
    widgets.table(pl.DataFrame([{"metric": k, "equation": v[0], "better": v[1],
                                 "definition": v[2]} for k, v in metrics.items()]),
                  "cmp_definitions", "metric definitions")
