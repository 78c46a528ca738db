"""Altair chart components: frames in, charts out (no library calls, no simulation).

Colours are shared by every page: red for poisoned (or contaminated) memory, teal for
clean memory.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import polars as pl

from wmtsim.core.formatting import D3_FORMAT

TICK_FORMAT = D3_FORMAT
"""The precision policy (`wmtsim.core.formatting`) on every quantitative axis, legend and
tooltip."""
STEP_AXIS = alt.Axis(format="d", tickMinStep=1)
"""Steps are whole numbers: a one-step trajectory's axis reads ``1``, not ``1.000000``."""
LEGEND: dict[str, Any] = {"labelLimit": 0, "titleLimit": 0}
"""Legends never truncate a label ("missed (in pool)", not "missed (in pool")."""
TREE_LABELS = 12
"""A tree with more leaves than this draws no score labels (they would overlap in a
half-width column at 1,280 px): the scores are in the tooltip and the node table."""

POISON_SCALE = alt.Scale(domain=["poisoned", "clean"], range=["#d62728", "#17becf"])
SELECTION_SCALE = alt.Scale(
    domain=["selected", "missed (in pool)", "outside the pool"],
    range=["#2ca02c", "#ff7f0e", "#eeeeee"],
)
STATE_SHAPES = alt.Scale(domain=["active", "completed", "folded", "obsolete"],
                         range=["circle", "square", "diamond", "cross"])


def tip(field: str, title: str | None = None) -> alt.Tooltip:
    """A tooltip of a measured (real-valued) field, in the precision policy: three
    significant digits, as the axes and the tables write it. Whole-number fields (steps,
    counts) keep their own digits: give them by name."""
    return alt.Tooltip(field=field, type="quantitative", format=TICK_FORMAT,
                       title=title or alt.Undefined)


def _poison_label(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        memory=pl.when(pl.col("poisoned")).then(pl.lit("poisoned")).otherwise(pl.lit("clean")))


def tree_chart(nodes: pl.DataFrame, edges: pl.DataFrame, title: str,
               label: str = "slot", labels: bool = True) -> alt.LayerChart:
    """A tree drawing: nodes at ``(x, depth)``, edges from each parent to its children;
    colour = poisoned, shape = state, size = retention score ``u`` (no legend:
    `TREE_CAPTION` says it), outline = selected, missed or outside the pool. ``labels``: a
    small tree (large markers, fixed view), which writes each node's u above it when it
    has at most `TREE_LABELS` leaves."""
    nodes = _poison_label(nodes).with_columns(
        pool=pl.when(pl.col("selected")).then(pl.lit("selected"))
        .when(pl.col("eligible")).then(pl.lit("missed (in pool)"))
        .otherwise(pl.lit("outside the pool")))
    # Room above the root for its label and below the deepest node for its marker.
    bottom = float(nodes["depth"].max() or 0) if nodes.height else 0.0  # type: ignore[arg-type]
    depth = alt.Scale(reverse=True, domainMin=-0.3, domainMax=bottom + 0.3)
    lines = alt.Chart(edges.to_pandas()).mark_rule(color="#999999").encode(
        x=alt.X("x:Q", axis=None), y=alt.Y("y:Q", scale=depth, axis=None),
        x2="x2:Q", y2="y2:Q")
    tooltip = [label, "kind", "state", tip("u"), "m", "poisoned", "pool"]
    sizes = [30, 400] if labels else [8, 80]
    # Stacked on the right: four legends side by side below the tree overflow a
    # half-width column at 1,280 px (a bottom legend row is not fitted to the width).
    legend: dict[str, Any] = {"orient": "right", **LEGEND}
    points = alt.Chart(nodes.to_pandas()).mark_point(filled=True, opacity=0.9).encode(
        x=alt.X("x:Q", axis=None), y=alt.Y("depth:Q", scale=depth, axis=None),
        color=alt.Color("memory:N", scale=POISON_SCALE, title="memory",
                        legend=alt.Legend(**legend)),
        shape=alt.Shape("state:N", scale=STATE_SHAPES, title="state",
                        legend=alt.Legend(**legend)),
        # no size legend: the legends must fit the chart's height (the caption says it)
        size=alt.Size("u:Q", scale=alt.Scale(domain=[0, 1], range=sizes), legend=None),
        stroke=alt.Stroke("pool:N", scale=SELECTION_SCALE, title="this step",
                          legend=alt.Legend(**legend)),
        strokeWidth=alt.value(2 if labels else 1),
        tooltip=tooltip,
    )
    layers = lines + points
    if labels and leaf_count(nodes) <= TREE_LABELS:
        layers += alt.Chart(nodes.to_pandas()).mark_text(dy=-14, fontSize=9).encode(
            x="x:Q", y="depth:Q", text=alt.Text("u:Q", format=".2f"))
    chart = layers.properties(title=title, height=420)  # the legends need ~400 px
    return chart if labels else chart.interactive()  # a large tree: zoom and pan


TREE_CAPTION = "Marker size: the retention score u (larger is higher); outline: selected, " \
    "missed in the candidate pool, or outside it at this step."


def leaf_count(nodes: pl.DataFrame) -> int:
    """How many leaves a laid-out tree has (leaves sit at consecutive whole x)."""
    return 0 if nodes.is_empty() else int(nodes["x"].max()) + 1  # type: ignore[arg-type]


def score_lines(steps: pl.DataFrame, current: int, title: str) -> alt.LayerChart:
    """Retention score u of every action, global and summary memory over the steps."""
    mem = _poison_label(steps.filter(pl.col("kind").is_in(["action", "global", "summary"])))
    base = alt.Chart(mem.to_pandas())
    lines = base.mark_line(point=alt.OverlayMarkDef(size=15), opacity=0.8).encode(
        x=alt.X("step:Q", title="step", axis=STEP_AXIS),
        y=alt.Y("u:Q", title="retention score u", scale=alt.Scale(domain=[0, 1]),
                      axis=alt.Axis(format=TICK_FORMAT)),
        color=alt.Color("memory:N", scale=POISON_SCALE, legend=alt.Legend(**LEGEND)),
        detail="slot:N",
        tooltip=["slot", "kind", "step", tip("u"), "m", "state", "selected"],
    )
    rule = alt.Chart(pl.DataFrame({"step": [current]}).to_pandas()).mark_rule(
        color="black", strokeDash=[4, 3]).encode(x="step:Q")
    return (lines + rule).properties(title=title, height=220)


def score_bands(bands: pl.DataFrame, current: int, title: str) -> alt.LayerChart:
    """Mean retention score u of the poisoned and the clean memories over the steps, with
    the band from the lowest to the highest (a trajectory too large for one line each)."""
    base = alt.Chart(bands.to_pandas())
    x = alt.X("step:Q", title="step", axis=STEP_AXIS)
    color = alt.Color("memory:N", scale=POISON_SCALE, legend=alt.Legend(**LEGEND))
    band = base.mark_area(opacity=0.2).encode(
        x=x, y=alt.Y("low:Q", title="retention score u", scale=alt.Scale(domain=[0, 1]),
                      axis=alt.Axis(format=TICK_FORMAT)),
        y2="high:Q", color=color)
    mean = base.mark_line().encode(
        x=x, y="mean:Q", color=color,
        tooltip=["step", "memory", tip("mean"), tip("low"), tip("high"), "memories"])
    rule = alt.Chart(pl.DataFrame({"step": [current]}).to_pandas()).mark_rule(
        color="black", strokeDash=[4, 3]).encode(x="step:Q")
    return (band + mean + rule).properties(title=title, height=220)


def selection_raster(steps: pl.DataFrame, current: int, title: str) -> alt.LayerChart:
    """Which memory (row) was selected, missed or outside the pool at each step."""
    frame = _poison_label(steps).with_columns(
        pool=pl.when(pl.col("selected")).then(pl.lit("selected"))
        .when(pl.col("eligible")).then(pl.lit("missed (in pool)"))
        .otherwise(pl.lit("outside the pool")),
        memory_label=pl.format("{} #{}", pl.col("kind"), pl.col("slot")))
    base = alt.Chart(frame.to_pandas())
    cells = base.mark_rect().encode(
        x=alt.X("step:O", title="step"),
        y=alt.Y("slot:O", title="memory slot"),
        color=alt.Color("pool:N", scale=SELECTION_SCALE, title="selection",
                        legend=alt.Legend(**LEGEND)),
        tooltip=["memory_label", "step", "pool", "poisoned", tip("u")],
    )
    marks = base.transform_filter(alt.datum.poisoned).mark_text(
        text="●", color="#d62728", fontSize=8).encode(x="step:O", y="slot:O")
    rule = alt.Chart(pl.DataFrame({"step": [current]}).to_pandas()).mark_rect(
        fill=None, stroke="black", strokeWidth=1.5).encode(x="step:O")
    return (cells + marks + rule).properties(title=title, height=260)


def running_chart(rates: pl.DataFrame, current: int, title: str) -> alt.LayerChart:
    """Running BR and PRR over the steps."""
    long = rates.unpivot(index="step", on=["br", "prr"], variable_name="metric")
    lines = alt.Chart(long.to_pandas()).mark_line(point=rates.height <= 100).encode(
        x=alt.X("step:Q", axis=STEP_AXIS), y=alt.Y("value:Q", scale=alt.Scale(domain=[0, 1]),
                      axis=alt.Axis(format=TICK_FORMAT)),
        color=alt.Color("metric:N", title="running", legend=alt.Legend(**LEGEND)),
        tooltip=["step", "metric", tip("value")])
    rule = alt.Chart(pl.DataFrame({"step": [current]}).to_pandas()).mark_rule(
        color="black", strokeDash=[4, 3]).encode(x="step:Q")
    return (lines + rule).properties(title=title, height=200)


def metric_bars(summary: pl.DataFrame, labels: dict[str, str], order: list[str],
                value: str = "mean") -> alt.FacetChart:
    """Value per configuration with its interval (error bar), one panel per metric in
    ``order`` (the library's metric order, `wmtsim.core.metrics.METRICS`); the paper's
    values as black ticks where available. ``value`` names what the bars show ("mean",
    "pooled") on the y-axis."""
    frame = summary.with_columns(
        config=pl.col("policy").replace_strict(labels, default=pl.col("policy"))
    ).filter(pl.col("mean").is_not_nan())
    base = alt.Chart(frame.to_pandas())
    y_axis = alt.Axis(format=TICK_FORMAT)
    bars = base.mark_bar().encode(
        x=alt.X("config:N", title=None, sort=None, axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("mean:Q", title=value, axis=y_axis),
        color=alt.Color("config:N", sort=None, title="configuration",
                        legend=alt.Legend(orient="top", columns=3, **LEGEND)),
        tooltip=["config", "metric", tip("mean", value), tip("low"), tip("high"), "n"])
    err = base.mark_errorbar(ticks=True).encode(
        x=alt.X("config:N", sort=None), y=alt.Y("low:Q", title=value, axis=y_axis),
        y2="high:Q")
    layers = bars + err
    if "paper" in frame.columns:
        ticks = base.transform_filter("isValid(datum.paper)").mark_tick(
            color="black", thickness=2, size=30).encode(
            x=alt.X("config:N", sort=None), y="paper:Q",
            tooltip=["config", "metric", tip("paper", "paper")])
        layers = layers + ticks
    shown = set(frame["metric"].to_list())
    return layers.properties(width=170, height=150).facet(
        facet=alt.Facet("metric:N", title=None, sort=[m for m in order if m in shown]),
        columns=3,
    ).resolve_scale(y="independent")


def _field(name: str) -> str:
    """A column name as a Vega-Lite field (sweep parameters are dotted: ``params.rho``)."""
    return name.replace(".", "\\.")


def _tip(frame: pl.DataFrame, name: str) -> alt.Tooltip:
    """A column's tooltip: the precision policy for a real-valued column, else as is."""
    if frame.schema[name].is_float():
        return tip(_field(name), name)
    return alt.Tooltip(field=_field(name), title=name)


def heatmap(frame: pl.DataFrame, x: str, y: str, metric: str) -> alt.Chart:
    """Mean of ``metric`` over a grid of two parameters: ordinal levels, or continuous
    axes when the frame has bin bounds (``x_low``, ``x_high``, ... of
    `services_sweep.grid_means`)."""
    tooltip = [tip(_field(metric), metric), "points:Q"]
    color = alt.Color(field=_field(metric), type="quantitative", title=metric,
                      scale=alt.Scale(scheme="viridis"),
                      legend=alt.Legend(format=TICK_FORMAT, **LEGEND))
    if f"{x}_low" in frame.columns:
        enc: dict[str, Any] = {
            "x": alt.X(field=_field(f"{x}_low"), type="quantitative", title=x,
                       scale=alt.Scale(zero=False, nice=False)),
            "x2": alt.X2(field=_field(f"{x}_high")),
            "y": alt.Y(field=_field(f"{y}_low"), type="quantitative", title=y,
                       scale=alt.Scale(zero=False, nice=False)),
            "y2": alt.Y2(field=_field(f"{y}_high")),
        }
        tooltip = [tip(_field(f"{x}_low"), f"{x} from"),
                   tip(_field(f"{x}_high"), f"{x} to"),
                   tip(_field(f"{y}_low"), f"{y} from"),
                   tip(_field(f"{y}_high"), f"{y} to"),
                   *tooltip]
    else:
        enc = {"x": alt.X(field=_field(x), type="ordinal", title=x),
               "y": alt.Y(field=_field(y), type="ordinal", title=y, sort="descending")}
        tooltip = [_tip(frame, x), _tip(frame, y), *tooltip]
    return alt.Chart(frame.to_pandas()).mark_rect().encode(
        **enc, color=color, tooltip=tooltip,
    ).properties(title=f"{metric} over {x} × {y}", height=300)


def pareto_chart(points: pl.DataFrame, front: pl.DataFrame, x: str, y: str,
                 tooltip: list[str]) -> alt.LayerChart:
    """Every sweep point (grey) and the Pareto front (line) of ``y`` against ``x``."""
    tips = [_tip(points, t) for t in tooltip]
    all_pts = alt.Chart(points.to_pandas()).mark_circle(size=40, color="#bbbbbb").encode(
        x=alt.X(field=_field(x), type="quantitative", title=x,
                scale=alt.Scale(zero=False)),  # zoomed to the points
        y=alt.Y(field=_field(y), type="quantitative", title=y,
                scale=alt.Scale(zero=False)), tooltip=tips)
    front_line = alt.Chart(front.sort(x).to_pandas()).mark_line(
        point=alt.OverlayMarkDef(size=70, filled=True, color="#d62728"),
        color="#d62728").encode(
        x=alt.X(field=_field(x), type="quantitative"),
        y=alt.Y(field=_field(y), type="quantitative"), tooltip=tips)
    return (all_pts + front_line).properties(title=f"Pareto front: {y} vs {x}", height=320)


