"""Altair charts of the population dynamics (`wmtsim.studies.dynamics.dynamics`), shared by
`wmtsim dynamics` (written as HTML + PNG) and the dashboard's "Population dynamics" page.

* `survival_chart`: S(k), the probability that a poison still remains k steps after its
  injection, per configuration (colour) and poison kind (facet), with its log–log band;
* `fate_chart`: the share of poisons ending in each fate, a stacked bar per configuration
  (facet: poison kind);
* `steps_chart`: per prompt step index, the share of prompts with contaminated context and
  the share of existing poisons that remain, per configuration.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from wmtsim.core.formatting import D3_FORMAT
from wmtsim.engine.dynamics import FATES

FATE_COLOURS = ("#e45756", "#f58518", "#54a24b", "#b279a2", "#4c78a8", "#bab0ac", "#72b7b2")


def _tip(field: str, title: str | None = None) -> Any:
    """A tooltip of a real-valued field in the precision policy (three significant
    digits, `wmtsim.core.formatting.D3_FORMAT`); counts and steps are given by name."""
    import altair as alt

    return alt.Tooltip(field=field, type="quantitative", format=D3_FORMAT,
                       title=title or alt.Undefined)


def survival_chart(survival: pl.DataFrame, title: str = "", kinds: list[str] | None = None
                   ) -> Any:
    """Step curves of S(k) with bands, one facet per poison kind. Every field's type is
    stated, so a world without poison (no rows) gives an empty chart, not an error."""
    import altair as alt

    frame = survival if kinds is None else survival.filter(pl.col("kind").is_in(kinds))
    base = alt.Chart().encode(
        x=alt.X("k:Q", title="prompt steps since injection"),
        color=alt.Color("policy:N", title="configuration"))
    band = base.mark_area(opacity=0.2, interpolate="step-after").encode(
        y=alt.Y("low:Q", title="P(poison still remains)", scale=alt.Scale(domain=[0, 1])),
        y2="high:Q")
    line = base.mark_line(interpolate="step-after").encode(
        y="survival:Q",
        tooltip=["policy:N", "kind:N", "k:Q", _tip("survival"), _tip("low"), _tip("high"),
                 "at_risk:Q"])
    chart = alt.layer(band, line, data=frame.to_pandas()).properties(width=230, height=180)
    out = chart.facet(facet=alt.Facet("kind:N", title=None), columns=3)
    return out.properties(title=title) if title else out


def fate_chart(fates: pl.DataFrame, title: str = "") -> Any:
    """Stacked shares of the fates per configuration, one facet per poison kind."""
    import altair as alt

    frame = fates.filter(pl.col("poisons") > 0)
    chart = alt.Chart(frame.to_pandas()).mark_bar().encode(
        y=alt.Y("policy:N", title=None),
        x=alt.X("share:Q", stack="normalize", title="share of injected poisons"),
        color=alt.Color("fate:N", scale=alt.Scale(domain=list(FATES),
                                                  range=list(FATE_COLOURS)), title="fate"),
        order=alt.Order("fate_order:Q"),
        tooltip=["policy:N", "kind:N", "fate:N", "poisons:Q", _tip("share"),
                 _tip("mean_k", "mean steps after injection"),
                 "never_selected:Q"],
    ).transform_calculate(
        fate_order=" + ".join(f"(datum.fate == '{f}') * {i}" for i, f in enumerate(FATES))
    ).properties(width=300, height=22 * max(1, frame["policy"].n_unique()))
    out = chart.facet(row=alt.Row("kind:N", title=None))
    return out.properties(title=title) if title else out


def steps_chart(steps: pl.DataFrame, title: str = "") -> Any:
    """Per prompt step index: contaminated prompts, remaining poisons and poisons that
    compromised a step (shares)."""
    import altair as alt

    long = steps.select("policy", "step", "prompts", "contaminated_share",
                        "remaining_share", "compromising_share").unpivot(
        index=["policy", "step", "prompts"], variable_name="series", value_name="share")
    chart = alt.Chart(long.to_pandas()).mark_line().encode(
        x=alt.X("step:Q", title="prompt step index"),
        y=alt.Y("share:Q", scale=alt.Scale(domain=[0, 1]), title=None),
        color=alt.Color("policy:N", title="configuration"),
        tooltip=["policy:N", "step:Q", "prompts:Q", _tip("share")],
    ).properties(width=300, height=180).facet(  # two a row: fits a 1,280 px page
        facet=alt.Facet("series:N", title=None), columns=2)
    return chart.properties(title=title) if title else chart
