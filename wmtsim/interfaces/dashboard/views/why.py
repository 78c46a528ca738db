"""Why: which mechanism carries a difference (attribution), and where each claim holds."""

from __future__ import annotations

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard import services_runs, services_why, widgets

st.title("Why does a configuration win?")
st.caption("Attribution: the difference between two configurations split into one "
           "contribution per mechanism switch (Shapley values over every subset of the "
           "switches, all on the same trajectories; 95% paired bootstrap intervals). "
           "The contributions sum exactly to the difference of the means.")

ref = widgets.scenario_picker("why")
if ref is None:
    st.stop()
info = services_runs.scenario_info(*ref)
configs = services_why.wmt_configurations()
names = list(configs)
metrics = list(services_runs.metric_info())
default_metrics = ["asr", "prr", "br", "tsr", "prompt_tokens"] if info["paper"] == "table4" \
    else ["tsr", "accuracy", "prompt_tokens"]

# Every control belongs to the scenario: switching it resets them to its defaults.
widgets.derive_state("why", ref, {
    "why_from": "linear", "why_to": "wmt", "why_metrics": default_metrics,
    "why_n": min(info["n"], 300), "why_seed": info["seed"]},
    keep=widgets.picker_keys("why") | {"why_claims", "why_claim_pick"})
with st.sidebar:
    p = st.selectbox("From (P)", names, format_func=lambda k: configs[k], key="why_from")
    q = st.selectbox("To (Q)", names, format_func=lambda k: configs[k], key="why_to")
    chosen = st.multiselect("Metrics", metrics, key="why_metrics")
    n = int(st.number_input("Trajectories (n)", min_value=2, max_value=20_000, step=100,
                            key="why_n", help=f"{info['name']}'s n, at most 300"))
    seed = int(st.number_input("Seed", step=1, key="why_seed"))

st.subheader(f"{configs[p]} → {configs[q]} on {info['name']}")
if not chosen:
    st.info("Choose at least one metric in the sidebar.")
else:
    try:
        view = services_why.attribution(*ref, p, q, tuple(chosen), n, seed)
    except ValueError as e:
        st.info(f"Nothing to attribute: {e}")
    else:
        t = view.table
        st.caption(f"{t['method'][0]} Shapley values over {t['switch'].n_unique()} "
                   f"switches: {view.coalitions.height} coalitions, {view.runs} distinct "
                   f"configurations run in {view.seconds:.1f} s, n = {t['n'].max()!s} "
                   "trajectories (per metric: those where it is defined under every "
                   "coalition).")
        name = f"{info['name']} {p} to {q} attribution"
        widgets.chart(services_why.waterfall_chart(t), "why_waterfall", name, stretch=False)
        widgets.table(t.select("metric", "mechanism", "contribution", "low", "high", "n",
                               "from_mean", "to_mean"), "why_table", name)
        moved = view.coalitions.filter(pl.col("moved_by_rule") != "")
        with st.expander(f"coalitions ({moved.height} mapped by the dependency rule)"):
            st.caption("A dependent switch follows its prerequisite: reopen needs fold, "
                       "A3's branch selection needs scores "
                       "(wmtsim.studies.attribution.attribution).")
            widgets.table(view.coalitions, "why_coalitions", f"{name} coalitions")

st.divider()
st.header("Where does each claim hold?")
st.caption("Table 4's claims tested in every cell of a grid over two knobs (`wmtsim "
           "claims`, or the shipped study of `make study`), each a paired test (the "
           "paired t-test, or the exact permutation test when few trajectories differ). "
           "Verdicts: holds (significant), holds (not significant), tie, fails "
           "(significant: another configuration is significantly better). The number in "
           "a cell is the margin against the closest competitor.")
found = services_why.find_claims()
default = st.query_params.get("claims") or (found[0] if found else "")
path = st.text_input("Claims map (a `wmtsim claims` folder or a claims .parquet)",
                     value=default, key="why_claims")
if found:
    st.caption("found: " + ", ".join(services_runs.short_path(f) for f in found[:10]))
if not path:
    st.info("Run `wmtsim claims ...` or `make study`, then enter its output here.")
    st.stop()
try:
    claims_map = services_why.claims_view(path, services_why.claims_mtime(path))
except (ValueError, OSError) as e:
    widgets.not_available("This claims map", e)
    st.stop()
knobs, table = claims_map.knobs, claims_map.table
st.subheader(widgets.literal(f"Claims map: {claims_map.scenario}"
                             + (f", over {knobs[0]} × {knobs[1]}" if len(knobs) == 2
                                else "")))
if len(knobs) != 2 or table.is_empty():
    widgets.not_available("The heatmaps", f"the map varies {len(knobs)} knobs "
                          f"and has {table.height} rows (two knobs needed)")
    st.stop()
claims = table["claim"].unique(maintain_order=True).to_list()
if not set(st.session_state.get("why_claim_pick", claims)) <= set(claims):
    del st.session_state["why_claim_pick"]  # another map: its own claims
shown = st.multiselect("Claims", claims, default=claims, key="why_claim_pick")
rows = table.filter(pl.col("claim").is_in(shown))
if rows.is_empty():
    st.info("Choose at least one claim.")
    st.stop()
st.caption(services_why.claims_family(path, table))
widgets.chart(services_why.claims_chart(rows, *knobs), "why_claims_map",
              f"{claims_map.scenario} claims map", stretch=False)
widgets.table(services_why.claims_summary(rows, path), "why_claims_summary",
              f"{claims_map.scenario} claims summary")
st.caption("margin across the grid: does the claim's margin (against each cell's closest "
           "rival) differ across the cells at all? The paired test on common random "
           "numbers that `wmtsim analyze` uses (docs/statistics.md, \"Flat means flat\"), "
           "Holm over the map's claims.")
