"""Dashboard services of the Stubs page: a stub log fitted by `wmtsim.studies.stub_fit`
(the shipped example, or any log by path), its estimates and its calibration by decile.
Part of the service layer (`wmtsim.interfaces.dashboard`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard.services_runs import REPO

EXAMPLE = "examples/stub_fit/agent_log.jsonl"
"""The shipped example log, in the source checkout (`REPO`)."""


def find_logs() -> list[str]:
    """The shipped example log (when wmtsim runs from its source checkout)."""
    return [str(REPO / EXAMPLE)] if REPO is not None and (REPO / EXAMPLE).is_file() else []


@dataclass(frozen=True)
class Fitted:
    """A fitted log as the page shows it."""

    events: int
    estimates: pl.DataFrame
    calibration: pl.DataFrame
    misfit: pl.DataFrame


@st.cache_data(show_spinner="fitting the stubs to the log…", max_entries=8)
def fitted(path: str) -> Fitted:
    """The fit of the stub log at ``path`` (`fit_log`); ValueError naming the line, the
    field and what is allowed when the log is not one (docs/stub_logs.md)."""
    from wmtsim.studies.stub_fit import goodness
    from wmtsim.studies.stub_fit.fit import fit_log
    from wmtsim.studies.stub_fit.log import StubLogError, read_log

    try:
        log = read_log(Path(path))
    except StubLogError as e:
        raise ValueError(str(e)) from None
    fit = fit_log(log)
    estimates = pl.DataFrame([{
        "parameter": e.name, "estimate": e.estimate if e.identified else None,
        "low": e.low if e.identified else None, "high": e.high if e.identified else None,
        "default": e.default, "observations": e.observations,
        "identified": e.identified, "why not": e.reason} for e in fit.estimates])
    table = goodness.calibration(fit)
    return Fitted(log.events, estimates, table, goodness.misfit(table))


def calibration_chart(table: pl.DataFrame, title: str) -> Any:
    """`wmtsim.studies.stub_fit.goodness.calibration_chart`."""
    from wmtsim.studies.stub_fit.goodness import calibration_chart as chart

    return chart(table, title)
