"""Controls shared by several pages (scenario picker, parameter editor)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st

from wmtsim.core.formatting import num, plural
from wmtsim.interfaces.dashboard import charts, services

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
    return ref


def picker_keys(key: str) -> set[str]:
    """The session-state keys of `scenario_picker`'s own widgets."""
    return {f"{key}_{w}" for w in ("source", "upload", "path", "name")}


def derive_state(prefix: str, owner: object, defaults: dict[str, Any],
                 keep: set[str] | frozenset[str] = frozenset()) -> bool:
    """Make the page's widget values belong to ``owner`` (a scenario, a sweep folder, a
    trace); returns whether ``owner`` changed.

    When ``owner`` changes, every widget key of the page (``prefix_*``, except ``keep``)
    is forgotten and the widgets in ``defaults`` get ``owner``'s defaults. The values are
    assigned through `st.session_state` before the widgets are drawn, so the browser
    shows them too (a deleted key alone leaves the browser showing the old value). The
    widgets must then be created without a ``value`` / ``index`` of their own.
    """
    marker = f"{prefix}__owner"
    changed = st.session_state.get(marker) != owner
    if changed:
        for k in list(st.session_state):
            if isinstance(k, str) and k.startswith(f"{prefix}_") and k not in keep \
                    and k != marker:
                del st.session_state[k]
    for k, v in defaults.items():
        if changed or k not in st.session_state:
            st.session_state[k] = v
    st.session_state[marker] = owner
    return changed


def clamp_state(key: str, default: int, low: int, high: int) -> None:
    """A numeric widget's value inside ``[low, high]`` (``default`` when it has none)."""
    value = st.session_state.get(key, default)
    st.session_state[key] = min(max(int(value), low), high)


def param_defaults(defaults: dict[str, Any], key: str) -> dict[str, Any]:
    """The session-state defaults of `params_editor`'s inputs."""
    return {f"{key}_param_{name}": (value if isinstance(value, bool | int) else float(value))
            for name, value in defaults.items()}


def params_editor(defaults: dict[str, Any], key: str) -> tuple[tuple[str, Any], ...]:
    """Sidebar inputs for every WMT parameter; returns the changed ones, hashable.

    Their values come from the session state (`param_defaults` through `derive_state`).
    """
    changed: list[tuple[str, Any]] = []
    with st.sidebar.expander("WMT parameters (Params)", expanded=False):
        for name, value in defaults.items():
            wkey = f"{key}_param_{name}"
            if isinstance(value, bool):
                new: Any = st.checkbox(name, key=wkey)
            elif isinstance(value, int):
                new = int(st.number_input(name, step=1, key=wkey))
            else:
                new = float(st.number_input(name, step=0.01, format="%.4f", key=wkey))
            if new != value:
                changed.append((name, new))
    return tuple(changed)


def trajectory_panel(view: services.TrajectoryView, step: int) -> None:
    """One trajectory at ``step``: its metrics, tree, scores, selections and running
    BR/PRR; a large trajectory (more than `services.DETAIL_LIMIT` memories) as a summary:
    score bands, a window of steps, an unlabelled tree."""
    m = view.metrics
    c1, c2 = st.columns(2)
    c1.metric("BR (trajectory)", num(m["br"]), help=_help("br"))
    c2.metric("PRR (trajectory)", num(m["prr"]), help=_help("prr"))
    c3, c4 = st.columns(2)
    c3.metric("ASR (trajectory)", num(m["asr"]), help=_help("asr"))
    c4.metric("TSR (trajectory)", f"{m['tsr']:.0f}", help=_help("tsr"))
    last = max(services.n_steps(view.steps) - 1, 0)
    at = view.steps.filter(pl.col("step") == min(step, last))
    if step > last:
        st.caption(f"this configuration has {plural(last + 1, 'step')}; showing the last")
    else:
        event = at["event"][0] if at.height else "-"
        st.caption(f"step {step}: after the `{event}` event, "
                   f"{plural(at.height, 'memory', 'memories')}")
    large = services.memory_count(view.steps) > services.DETAIL_LIMIT
    nodes, edges = services.tree_layout(at)
    tree_title = f"memory tree at step {min(step, last)}"
    if large:
        tree_title += f" ({plural(at.height, 'node')})"
    st.altair_chart(charts.tree_chart(nodes, edges, tree_title, labels=not large),
                    width="stretch")
    if large:
        st.caption("A large trajectory: the tree without labels (scroll on it to zoom, "
                   "drag to pan), the scores as a band per class, the selections of a "
                   "window of steps.")
        st.altair_chart(charts.score_bands(services.score_bands(view.steps), step,
                                           "retention score u: mean and range per class"),
                        width="stretch")
        w = services.step_window(view.steps, step)
        pool = plural(w.in_pool, "memory", "memories")
        st.altair_chart(charts.selection_raster(
            w.rows, step, f"selections, steps {w.first}–{w.last} ("
                          + (f"{pool} in the pool" if w.shown == w.in_pool
                             else f"the newest {w.shown} of {pool} in the pool") + ")"),
            width="stretch")
    else:
        st.altair_chart(charts.score_lines(view.steps, step, "retention scores u"),
                        width="stretch")
        st.altair_chart(charts.selection_raster(view.steps, step, "selections per step"),
                        width="stretch")
    rates = services.running_rates(view.steps)
    now = rates.filter(pl.col("step") <= step).tail(1)
    if now.height:
        r1, r2 = st.columns(2)
        r1.metric("running BR", num(now["br"][0]))
        r2.metric("running PRR", num(now["prr"][0]))
    st.altair_chart(charts.running_chart(rates, step, "running BR / PRR"),
                    width="stretch")
    st.caption("Running rates count the recorded selections and the poisoned flags at "
               "each step; the last step equals the library's BR / PRR above.")
    with st.expander("nodes at this step"):
        st.dataframe(at.drop("trajectory"), hide_index=True)


def _help(metric: str) -> str:
    eq, better, text = services.metric_info()[metric]
    return f"{eq}: {text} ({better} is better); the library's value for this trajectory"
