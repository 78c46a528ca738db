"""Dashboard services of the Atlas page: screening tables (`wmtsim.studies.screen`), the
shipped atlas (why_study/tables/atlas.parquet) and folders written by ``wmtsim screen``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard.services_runs import REPO

ATLAS = "why_study/tables/atlas.parquet"


def find_screenings(bases: tuple[str, ...] = ("results",)) -> list[str]:
    """The shipped atlas (if present) and every ``screen.parquet`` under ``bases``
    (relative to the repository)."""
    found = [ATLAS] if (REPO / ATLAS).is_file() else []
    for base in bases:
        root = REPO / base
        if root.is_dir():
            found += sorted(str(p.relative_to(REPO)) for p in root.rglob("screen.parquet"))
    return found


@st.cache_data(show_spinner=False, max_entries=16)
def screening(path: str) -> pl.DataFrame:
    """A screening table (a path relative to the repository, or absolute); ValueError
    when it is not one."""
    p = Path(path) if Path(path).is_absolute() else REPO / path
    try:
        table = pl.read_parquet(p)
    except Exception as e:  # not a file, not Parquet
        raise ValueError(f"{path}: cannot read a screening table ({type(e).__name__})"
                         ) from None
    needed = {"scenario", "metric", "parameter", "mu_star", "verdict"}
    if not needed <= set(table.columns):
        raise ValueError(f"{path}: not a screening table (needs {', '.join(sorted(needed))})")
    return table


def atlas_chart(table: pl.DataFrame) -> Any:
    """`wmtsim.studies.screen.atlas_chart`."""
    from wmtsim.studies.screen import atlas_chart as chart

    return chart(table)
