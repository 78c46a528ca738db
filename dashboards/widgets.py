"""Controls shared by several pages (scenario picker, parameter editor)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboards import services


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
        ref = (path, "")
    else:
        name = st.sidebar.selectbox("Shipped scenario", list(catalog), key=f"{key}_name",
                                    help="the scenarios shipped with wmtsim")
        ref = (str(name), "")
    try:
        info = services.scenario_info(*ref)
    except (services.Unavailable, ValueError, OSError) as e:
        st.error(f"cannot load the scenario: {e}")
        return None
    st.sidebar.caption(info["description"])
    return ref


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
