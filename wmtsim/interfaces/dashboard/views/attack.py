"""The strongest attacker: results of ``wmtsim attack`` (harm vs budget, transfer)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard import services_attack, services_runs, widgets

st.title("The strongest attacker")
st.caption("Results of `wmtsim attack` (docs/attack.md): per configuration, the most "
           "harmful attack found with k injections per task beside the scripted attack, "
           "on held-out trajectories (95% intervals); the transfer matrix runs the attack "
           "found against each configuration (row) on every other (column).")

found = services_attack.find_attacks()
default = st.query_params.get("attack") or (found[0] if found else "")
path = st.text_input("Attack result (a `wmtsim attack` folder)", value=default,
                     key="atk_path")
if found:
    st.caption("found: " + ", ".join(services_runs.short_path(f) for f in found[:10]))
if not path:
    st.info("Run `wmtsim attack paper_poisoning --budget 1,2,3,4`, then enter its output "
            "folder here.")
    st.stop()
try:
    view = services_attack.attack_view(path, services_attack.attack_mtime(path))
except (ValueError, OSError) as e:
    widgets.not_available("This attack result", e)
    st.stop()

st.subheader(f"{view.harm} vs attacker budget")
widgets.chart(services_attack.attack_budget_chart(view), "atk_budget", "attack harm vs budget",
              stretch=False)
robust = view.robust.select(
    [c for c in view.robust.columns if c in ("policy", "budget", "scripted_asr", "worst_asr",
                                             "scripted_tsr", "worst_tsr", "worst_is_scripted")
     or c == "gain" or c.startswith("gain_")])
# The downloads hold the effect's numbers (gain, gain_low, ...), not the text shown.
widgets.table(services_attack.attack_effects(robust, "gain", "worst − scripted"),
              "atk_robust", "attack worst case", download=robust)
st.caption("worst − scripted: paired over the held-out trajectories, 95% interval; when "
           "no trajectory differs, an upper bound (rule of three), not an interval.")

st.subheader("Transfer")
widgets.chart(services_attack.attack_transfer_chart(view), "atk_transfer", "attack transfer",
              stretch=False)
widgets.table(services_attack.attack_effects(view.transfer, "vs_scripted", "vs scripted"),
              "atk_transfer_table", "attack transfer", download=view.transfer)

if view.claims:
    st.subheader("Table 4's claims under the scripted and the worst-case attack")
    widgets.table(pl.DataFrame(view.claims), "atk_claims", "attack claims")

st.subheader("Found attacks")
st.caption("Each is a scenario file: `wmtsim run` replays it; open one on the Poisoning "
           "dynamics page to step through its trajectories.")


def _open(attack_file: str) -> None:
    st.session_state["dyn_source"] = "file path"
    st.session_state["dyn_path"] = attack_file


choice = st.selectbox("Attack", view.attacks, format_func=lambda p: Path(p).name,
                      key="atk_pick")
if choice and st.button("Open on the Poisoning dynamics page", key="atk_open",
                        on_click=_open, args=(choice,)):
    st.switch_page("views/dynamics.py")  # relative to the entry point, app.py
