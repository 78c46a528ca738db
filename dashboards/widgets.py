"""Controls shared by several pages (scenario picker, parameter editor)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st

from dashboards import charts, services

DEFAULT_SCENARIO = "paper_poisoning"


def not_available(what: str, reason: object) -> None:
    st.warning(f"{what} not available: {reason}")


def scenario_picker(key: str) -> tuple[str, str] | None:
    """A shipped scenario or an uploaded TOML file; returns ``(name, toml_text)``.

    Shows the problem and returns None when no scenario can be loaded.
    """
    try:
        catalog = services.scenario_catalog()
    except services.Unavailable as e:
        catalog = {}
        not_available("Shipped scenarios", e)
    options = ["shipped", "upload TOML", "file path"] if catalog else ["upload TOML",
                                                                       "file path"]
    source = st.sidebar.radio("Scenario", options, key=f"{key}_source", horizontal=True)
    if source == "upload TOML":
        up = st.sidebar.file_uploader("Scenario file (.toml)", type=["toml"],
                                      key=f"{key}_upload")
        if up is None:
            st.info("Upload a scenario TOML file in the sidebar.")
            return None
        ref = ("", up.getvalue().decode("utf-8"))
    elif source == "file path":
        path = st.sidebar.text_input("Scenario file path", key=f"{key}_path",
                                     placeholder="scenarios/my_study.toml")
        if not path:
            st.info("Enter the path of a scenario TOML file in the sidebar.")
            return None
        try:  # by content, so that an edited file is simulated anew
            ref = (path, Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            st.error(f"cannot load the scenario: cannot read {path}: {e}")
            return None
    else:
        names = list(catalog)
        first = names.index(DEFAULT_SCENARIO) if DEFAULT_SCENARIO in names else 0
        name = st.sidebar.selectbox("Shipped scenario", names, index=first,
                                    key=f"{key}_name",
                                    help="the scenarios shipped with wmtsim")
        ref = (str(name), "")
    try:
        info = services.scenario_info(*ref)
    except (services.Unavailable, ValueError, OSError) as e:
        st.error(f"cannot load the scenario: {e}")
        return None
    st.sidebar.caption(info["description"])
    _reset_on_change(key, ref)
    return ref


def _reset_on_change(key: str, ref: tuple[str, str]) -> None:
    """A new scenario brings its own defaults: forget the page's other widget values."""
    marker = f"{key}__scenario"
    if st.session_state.get(marker, ref) != ref:
        own = {f"{key}_{w}" for w in ("source", "upload", "path", "name")}
        for k in list(st.session_state):
            if isinstance(k, str) and k.startswith(f"{key}_") and k not in own:
                del st.session_state[k]
    st.session_state[marker] = ref


def params_editor(defaults: dict[str, Any], key: str) -> tuple[tuple[str, Any], ...]:
    """Sidebar inputs for every WMT parameter; returns the changed ones, hashable."""
    changed: list[tuple[str, Any]] = []
    with st.sidebar.expander("WMT parameters (Params)", expanded=False):
        for name, value in defaults.items():
            wkey = f"{key}_param_{name}"
            if isinstance(value, bool):
                new: Any = st.checkbox(name, value=value, key=wkey)
            elif isinstance(value, int):
                new = int(st.number_input(name, value=value, step=1, key=wkey))
            else:
                new = float(st.number_input(name, value=float(value), step=0.01,
                                            format="%.4f", key=wkey))
            if new != value:
                changed.append((name, new))
    return tuple(changed)


def trajectory_panel(view: services.TrajectoryView, step: int) -> None:
    """One trajectory at ``step``: its metrics, tree, score lines, selection raster and
    running BR/PRR."""
    m = view.metrics
    c1, c2 = st.columns(2)
    c1.metric("BR (trajectory)", f"{m['br']:.4f}", help=_help("br"))
    c2.metric("PRR (trajectory)", f"{m['prr']:.4f}", help=_help("prr"))
    c3, c4 = st.columns(2)
    c3.metric("ASR (trajectory)", f"{m['asr']:.4f}", help=_help("asr"))
    c4.metric("TSR (trajectory)", f"{m['tsr']:.0f}", help=_help("tsr"))
    last = max(services.n_steps(view.steps) - 1, 0)
    at = view.steps.filter(pl.col("step") == min(step, last))
    if step > last:
        st.caption(f"this configuration has {last + 1} steps; showing the last")
    else:
        event = at["event"][0] if at.height else "-"
        st.caption(f"step {step}: after the `{event}` event, {at.height} memories")
    nodes, edges = services.tree_layout(at)
    st.altair_chart(charts.tree_chart(nodes, edges, f"memory tree at step {step}"),
                    width="stretch")
    st.altair_chart(charts.score_lines(view.steps, step, "retention scores u"),
                    width="stretch")
    st.altair_chart(charts.selection_raster(view.steps, step, "selections per step"),
                    width="stretch")
    rates = services.running_rates(view.steps)
    now = rates.filter(pl.col("step") <= step).tail(1)
    if now.height:
        r1, r2 = st.columns(2)
        prr_now = now["prr"][0]
        r1.metric("running BR", f"{now['br'][0]:.4f}")
        r2.metric("running PRR", "–" if prr_now is None else f"{prr_now:.4f}")
    st.altair_chart(charts.running_chart(rates, step, "running BR / PRR"),
                    width="stretch")
    st.caption("Running rates count the recorded selections and the poisoned flags at "
               "each step; the last step equals the library's BR / PRR above.")
    with st.expander("nodes at this step"):
        st.dataframe(at.drop("trajectory"), hide_index=True)


def _help(metric: str) -> str:
    eq, better, text = services.metric_info()[metric]
    return f"{eq}: {text} ({better} is better); the library's value for this trajectory"
