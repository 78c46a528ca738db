"""Poisoning dynamics: step through one trajectory under two configurations."""

from __future__ import annotations

import streamlit as st

from wmtsim.interfaces.dashboard import services_dynamics, services_runs, widgets

st.title("Poisoning dynamics")
st.caption("One trajectory of the scenario, step by step: the memory tree, the retention "
           "scores of poisoned and clean memories, what the selector picked, and the "
           "running blast radius (BR: the share of prompt steps so far whose context holds "
           "contaminated memory) and poisoned retrieval rate (PRR). The Population dynamics "
           "page shows the same over every trajectory.")

ref = widgets.scenario_picker("dyn")
if ref is None:
    st.stop()
info = services_runs.scenario_info(*ref)
labels = services_runs.policy_labels()
policies = list(labels)
first = info["policies"][-1] if info["policies"] else "wmt"
second = info["policies"][0] if info["policies"] else "linear"

widgets.derive_state("dyn", ref, {
    "dyn_policy_a": first, "dyn_compare": True, "dyn_policy_b": second,
    "dyn_seed": info["seed"], "dyn_trajectory": 0,
    **widgets.param_defaults(info["params"], "dyn")}, keep=widgets.picker_keys("dyn"))
# A click on the Population dynamics page opens one trajectory here, at one step.
jump = st.session_state.pop("population_jump", None)
if jump is not None:
    st.session_state.update({"dyn_policy_a": jump["policy"], "dyn_seed": jump["seed"],
                             "dyn_trajectory": jump["trajectory"], "dyn_step": jump["step"]})

with st.sidebar:
    policy_a = st.selectbox("Configuration", policies, format_func=lambda p: labels[p],
                            key="dyn_policy_a")
    compare_b = st.checkbox("Second configuration side by side", key="dyn_compare")
    policy_b = st.selectbox("Second configuration", policies,
                            format_func=lambda p: labels[p], key="dyn_policy_b",
                            disabled=not compare_b)
    seed = int(st.number_input("Seed", step=1, key="dyn_seed"))
    trajectory = int(st.number_input("Trajectory", min_value=0, step=1,
                                     key="dyn_trajectory"))
params = widgets.params_editor(info["params"], "dyn")

shown = [policy_a] + ([policy_b] if compare_b else [])
views = {p: services_dynamics.trajectory_view(*ref, p, seed, trajectory, params) for p in shown}
n_steps = max(services_dynamics.n_steps(v.steps) for v in views.values())
widgets.clamp_state("dyn_step", n_steps - 1, 0, max(n_steps - 1, 0))
step = st.slider("Step", 0, max(n_steps - 1, 1), key="dyn_step",
                 help="prompt-construction step of the trajectory")

columns = st.columns(len(shown))
for side, col, p in zip("ab", columns, shown, strict=False):
    view = views[p]
    with col:
        st.subheader(labels[p])
        widgets.trajectory_panel(view, step, key=f"dyn_panel_{side}")
