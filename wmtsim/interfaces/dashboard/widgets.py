"""Controls shared by several pages (scenario picker, parameter editor, charts and tables
with their download buttons)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Literal

import polars as pl
import streamlit as st

from wmtsim.core.formatting import MISSING, num, plural
from wmtsim.interfaces.dashboard import charts, export, services_dynamics, services_runs

DEFAULT_SCENARIO = "paper_poisoning"


def not_available(what: str, reason: object) -> None:
    st.warning(f"{what} not available: {reason}")


def chart(figure: Any, key: str, name: str, stretch: bool = True,
          select: bool = False) -> Any:
    """An Altair chart with SVG and PNG download buttons below it; ``name`` is the
    downloaded file's name. The files are drawn only when a button is clicked.
    ``stretch``: fill the column (else the chart's own size: facets, fixed widths).
    ``select``: a click on the chart's selection parameters reruns the page; returns the
    selection event (else None)."""
    width: Literal["stretch"] | None = "stretch" if stretch else None
    event = (st.altair_chart(figure, key=key, width=width, on_select="rerun") if select
             else st.altair_chart(figure, key=key, width=width))
    stem = export.file_stem(name)
    row = st.container(horizontal=True)  # the buttons side by side, labels whole
    row.download_button("SVG", lambda: export.svg(figure), f"{stem}.svg", "image/svg+xml",
                         key=f"{key}__svg", on_click="ignore", icon=":material/download:",
                         help=f"download this figure as {stem}.svg")
    row.download_button("PNG", lambda: export.png(figure), f"{stem}.png", "image/png",
                          key=f"{key}__png", on_click="ignore", icon=":material/download:",
                          help=f"download this figure as {stem}.png")
    return event if select else None


def _cell(dtype: pl.DataType, precise: str | None) -> Callable[[Any], str]:
    """How a column's values are written: ``precise`` (a printf format) when given, else
    the precision policy for floats, whole numbers for integers (a column with a missing
    value arrives as floats), text as is."""
    if precise is not None:
        return lambda v: precise % v
    if dtype.is_float():
        return num
    if dtype.is_integer():
        return lambda v: f"{int(v):d}"
    return str


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def shown_frame(frame: pl.DataFrame, whole: Collection[str] = (),
                precise: dict[str, str] | None = None) -> pl.DataFrame:
    """The cells a table shows: the columns in ``whole`` (counts: steps, tokens,
    trajectories) as whole numbers, and a column holding a missing value (null or NaN)
    as text, written as the precision policy says with `MISSING` for the missing cells
    (Streamlit's grid draws a missing value as "None", whatever its format says).
    Columns without a missing value keep their numbers, so they sort as numbers."""
    out = frame.with_columns(pl.col(c).fill_nan(None).round(0).cast(pl.Int64)
                             for c in whole if c in frame.columns
                             and frame.schema[c].is_float())
    for c, dtype in out.schema.items():
        if dtype.is_numeric() and (out[c].null_count() or (
                dtype.is_float() and out[c].is_nan().any())):
            write = _cell(dtype, (precise or {}).get(c))
            out = out.with_columns(pl.Series(c, [MISSING if _missing(v) else write(v)
                                                 for v in out[c].to_list()], pl.String))
        elif out[c].null_count():
            out = out.with_columns(pl.col(c).cast(pl.String).fill_null(MISSING))
    return out


def table(frame: pl.DataFrame, key: str, name: str, height: int | None = None,
          precise: dict[str, str] | None = None, whole: Collection[str] = (),
          download: pl.DataFrame | None = None) -> None:
    """A table as the project writes numbers (`wmtsim.core.formatting`: three significant
    digits, ``–`` for a missing value; the columns in ``whole`` as whole numbers: counts)
    with CSV and Parquet download buttons (full precision: ``download``, the numbers
    behind a table that shows some as text, else ``frame``); ``precise`` gives a column
    its own printf-style format (``"%.10g"``)."""
    cells = shown_frame(frame, whole, precise)
    shown = cells.to_pandas().style.format(
        {c: str if t == pl.String else _cell(t, (precise or {}).get(c))
         for c, t in cells.schema.items()},
        na_rep=MISSING)
    # A number column written as text (it holds a missing value) stays right-aligned.
    as_text = {c: st.column_config.TextColumn(alignment="right")
               for c, t in cells.schema.items()
               if t == pl.String and frame.schema[c].is_numeric()}
    st.dataframe(shown, hide_index=True, key=key, column_config=as_text or None,
                 height="auto" if height is None else height)
    table_downloads(frame if download is None else download, key, name)


def wide_numbers(frame: pl.DataFrame, index: list[str], on: str) -> pl.DataFrame:
    """``frame`` (one row per ``index`` and ``on``) as a wide table of numbers: per value
    of ``on``, its numeric columns side by side (``"Full WMT mean"``, ``"Full WMT low"``,
    ``"Full WMT high"`` …), at full precision, for a download."""
    values = [c for c in frame.columns
              if c not in (*index, on) and frame.schema[c].is_numeric()]
    out = frame.select(index).unique(maintain_order=True)
    for key in frame[on].unique(maintain_order=True).to_list():
        part = frame.filter(pl.col(on) == key).select(
            *index, *[pl.col(c).alias(f"{key} {c}") for c in values])
        out = out.join(part, on=index, how="left", nulls_equal=True)
    return out


def table_downloads(frame: pl.DataFrame, key: str, name: str) -> None:
    """CSV and Parquet download buttons for ``frame`` (full precision)."""
    stem = export.file_stem(name)
    row = st.container(horizontal=True)
    row.download_button("CSV", lambda: export.csv(frame), f"{stem}.csv", "text/csv",
                         key=f"{key}__csv", on_click="ignore", icon=":material/download:",
                         help=f"download this table as {stem}.csv")
    row.download_button("Parquet", lambda: export.parquet(frame), f"{stem}.parquet",
                          "application/vnd.apache.parquet", key=f"{key}__parquet",
                          on_click="ignore", icon=":material/download:",
                          help=f"download this table as {stem}.parquet")


def scenario_picker(key: str) -> tuple[str, str] | None:
    """A shipped scenario or an uploaded TOML file; returns ``(name, toml_text)``.

    Another page can hand this page an uploaded scenario (`carry_scenario`): it is used
    while "upload TOML" is chosen and no file is uploaded here. Shows the problem and
    returns None when no scenario can be loaded.
    """
    try:
        catalog = services_runs.scenario_catalog()
    except services_runs.Unavailable as e:
        catalog = {}
        not_available("Shipped scenarios", e)
    options = ["shipped", "upload TOML", "file path"] if catalog else ["upload TOML",
                                                                       "file path"]
    source = st.sidebar.radio("Scenario", options, key=f"{key}_source", horizontal=True)
    if source == "upload TOML":
        up = st.sidebar.file_uploader("Scenario file (.toml)", type=["toml"],
                                      key=f"{key}_upload")
        carried = st.session_state.get(f"{key}_carried")
        if up is not None:
            st.session_state.pop(f"{key}_carried", None)  # a file uploaded here wins
            ref = (up.name, up.getvalue().decode("utf-8"))  # its name, for messages
        elif carried is not None:
            st.sidebar.caption(f"{carried['file']}, uploaded on the {carried['page']} "
                               "page (upload a file here to replace it)")
            ref = carried["ref"]
        else:
            st.info("Upload a scenario TOML file in the sidebar.")
            return None
    elif source == "file path":
        path = st.sidebar.text_input("Scenario file path", key=f"{key}_path",
                                     placeholder="scenarios/my_study.toml")
        if not path:
            st.info("Enter the path of a scenario TOML file in the sidebar.")
            return None
        try:  # by content, so that an edited file is simulated anew
            ref = (path, _scenario_text(path))
        except ValueError as e:
            st.error(f"cannot load the scenario: {e}")
            return None
    else:
        names = list(catalog)
        # The default through the session state, not `index`: another page may have set
        # this key (`carry_scenario`), and a widget given both warns in the server's log.
        if st.session_state.get(f"{key}_name") not in names:
            st.session_state[f"{key}_name"] = (DEFAULT_SCENARIO if DEFAULT_SCENARIO in names
                                               else names[0])
        name = st.sidebar.selectbox("Shipped scenario", names, key=f"{key}_name",
                                    help="the scenarios shipped with wmtsim")
        ref = (str(name), "")
    try:
        info = services_runs.scenario_info(*ref)
    except (services_runs.Unavailable, ValueError, OSError) as e:
        st.error(f"cannot load the scenario: {e}")
        return None
    st.sidebar.caption(info["description"])
    return ref


def _scenario_text(path: str) -> str:
    """The text of the scenario file typed in a page's path box, read as the CLI reads one
    (`wmtsim.studies.scenarios.toml_files.read_capped`: a regular file, at most 16 MiB; a link is
    followed, as scenarios/ holds links to the shipped ones): a FIFO once hung the page
    and ``/dev/zero`` filled the server's memory. ValueError naming the path otherwise."""
    from wmtsim.studies.scenarios.toml_files import read_capped

    raw = read_capped(Path(path), lambda problem: ValueError(f"{path}: {problem}"))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: byte {e.start} is not UTF-8; allowed: a UTF-8 TOML "
                         "file") from None


WHOLE_TAGS = """<style>
[data-testid="stSidebar"] [data-tag] { max-width: 100%; height: auto; }
[data-testid="stSidebar"] [data-tag] > span[title] {
    max-width: none; white-space: normal; overflow: visible; text-overflow: clip; }
</style>"""
"""A multiselect's chosen names in the sidebar whole, on two lines if need be (Streamlit
cuts a long tag: "Tree + Selection + Su…")."""


def whole_tags() -> None:
    """Show the sidebar's multiselect tags whole (`WHOLE_TAGS`)."""
    st.html(WHOLE_TAGS)


def literal(text: str) -> str:
    """``text`` shown as written in a Markdown element (a title, a caption): its Markdown
    characters escaped, so a knob named ``poison[*].p_supersede`` keeps its ``*``."""
    return re.sub(r"([\\`*_{}\[\]<>#~$|])", r"\\\1", text)


def picker_keys(key: str) -> set[str]:
    """The session-state keys of `scenario_picker`'s own widgets (and of the scenario
    another page carried to it)."""
    return {f"{key}_{w}" for w in ("source", "upload", "path", "name", "carried")}


def carry_scenario(source: str, ref: tuple[str, str], here: str, there: str,
                   page: str) -> None:
    """Open the scenario picked by `scenario_picker` ``here`` (its key) with the picker
    ``there`` of another page, before switching to it: the same source and name or path;
    an uploaded file (which a file uploader cannot be given) as its text, named after the
    uploaded file and ``page`` (the page it came from)."""
    st.session_state[f"{there}_source"] = source
    if source == "upload TOML":
        up = st.session_state.get(f"{here}_upload")
        name = up.name if up is not None else "a scenario"
        st.session_state[f"{there}_carried"] = {"ref": ref, "file": name, "page": page}
    elif source == "file path":
        st.session_state[f"{there}_path"] = st.session_state[f"{here}_path"]
    else:
        st.session_state[f"{there}_name"] = st.session_state[f"{here}_name"]


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


def trajectory_panel(view: services_dynamics.TrajectoryView, step: int, key: str) -> None:
    """One trajectory at ``step``: its metrics, tree, scores, selections and running
    BR/PRR; a large trajectory (more than `services_dynamics.DETAIL_LIMIT` memories) as a summary:
    score bands, a window of steps, an unlabelled tree. ``key`` keeps the widgets of two
    panels on one page apart. Every step record of the trajectory can be downloaded."""
    m = view.metrics
    c1, c2 = st.columns(2)
    c1.metric("BR (trajectory)", num(m["br"]), help=_help("br"))
    c2.metric("PRR (trajectory)", num(m["prr"]), help=_help("prr"))
    c3, c4 = st.columns(2)
    c3.metric("ASR (trajectory)", num(m["asr"]), help=_help("asr"))
    c4.metric("TSR (trajectory)", f"{m['tsr']:.0f}", help=_help("tsr"))
    last = max(services_dynamics.n_steps(view.steps) - 1, 0)
    at = view.steps.filter(pl.col("step") == min(step, last))
    if step > last:
        st.caption(f"this configuration has {plural(last + 1, 'step')}; showing the last")
    else:
        event = at["event"][0] if at.height else MISSING
        st.caption(f"step {step}: after the `{event}` event, "
                   f"{plural(at.height, 'memory', 'memories')}")
    name = f"{view.policy} trajectory {view.trajectory}"
    large = services_dynamics.memory_count(view.steps) > services_dynamics.DETAIL_LIMIT
    nodes, edges = services_dynamics.tree_layout(at)
    tree_title = f"memory tree at step {min(step, last)}"
    if large:
        tree_title += f" ({plural(at.height, 'node')})"
    chart(charts.tree_chart(nodes, edges, tree_title, labels=not large), f"{key}_tree",
          f"{name} tree at step {min(step, last)}")
    leaves = charts.leaf_count(nodes)
    st.caption(charts.TREE_CAPTION + (
        f" {plural(leaves, 'leaf', 'leaves')}: too many to label; hover a node for its u."
        if not large and leaves > charts.TREE_LABELS else ""))
    if large:
        st.caption("A large trajectory: the tree without labels (scroll on it to zoom, "
                   "drag to pan), the scores as a band per class, the selections of a "
                   "window of steps.")
        chart(charts.score_bands(services_dynamics.score_bands(view.steps), step,
                                 "retention score u: mean and range per class"),
              f"{key}_bands", f"{name} score bands")
        w = services_dynamics.step_window(view.steps, step)
        pool = plural(w.in_pool, "memory", "memories")
        chart(charts.selection_raster(w.rows, step, f"selections, steps {w.first}–{w.last}"),
              f"{key}_raster", f"{name} selections {w.first}-{w.last}")
        st.caption("Rows: " + (f"the {pool} in the pool" if w.shown == w.in_pool
                               else f"the newest {w.shown} of the {pool} in the pool")
                   + f" at some step {w.first}–{w.last}.")
    else:
        chart(charts.score_lines(view.steps, step, "retention scores u"), f"{key}_scores",
              f"{name} retention scores")
        chart(charts.selection_raster(view.steps, step, "selections per step"),
              f"{key}_raster", f"{name} selections")
    rates = services_dynamics.running_rates(view.steps)
    now = rates.filter(pl.col("step") <= step).tail(1)
    if now.height:
        r1, r2 = st.columns(2)
        r1.metric("running BR", num(now["br"][0]))
        r2.metric("running PRR", num(now["prr"][0]))
    chart(charts.running_chart(rates, step, "running BR / PRR"), f"{key}_running",
          f"{name} running rates")
    st.caption("Running rates count the recorded selections and the poisoned flags at "
               "each step; the last step equals the library's BR / PRR above.")
    with st.expander("nodes at this step"):
        table(at.drop("trajectory"), f"{key}_nodes", f"{name} nodes at step {step}")
    st.caption(f"The trajectory's step records ({plural(view.steps.height, 'row')}: one "
               "per memory and step):")
    table_downloads(view.steps, f"{key}_steps", f"{name} steps")


def _help(metric: str) -> str:
    eq, better, text = services_runs.metric_info()[metric]
    return f"{eq}: {text} ({better} is better); the library's value for this trajectory"
