"""Dashboard services of the Atlas page: screening tables (`wmtsim.studies.sweeps.screen`), the
shipped atlas (why_study/tables/atlas.parquet) and folders written by ``wmtsim screen``.
Part of the service layer (`wmtsim.interfaces.dashboard`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard.services_runs import REPO, open_shown, results_dir

ATLAS = "why_study/tables/atlas.parquet"
"""The shipped atlas, in the source checkout (`REPO`)."""


def find_screenings(base: str | None = None) -> list[str]:
    """The shipped atlas (when wmtsim runs from its source checkout) and every
    ``screen.parquet`` under ``base`` (default `results_dir`: ``$WMTSIM_RESULTS`` or
    results/ of the folder the dashboard was started in), as absolute paths."""
    found = [str(REPO / ATLAS)] if REPO is not None and (REPO / ATLAS).is_file() else []
    root = Path(base).absolute() if base else results_dir()
    if root.is_dir():
        found += sorted(str(p) for p in root.rglob("screen.parquet"))
    return found


@st.cache_data(show_spinner=False, max_entries=16)
def screening(path: str) -> pl.DataFrame:
    """A screening table (a path relative to the folder the dashboard was started in, or
    absolute), read through the one door (`open_shown`: a regular file of at most
    `MAX_TABLE_BYTES`, no link out of the results folder; a FIFO, a link to
    ``/dev/zero`` or a sparse 2 GiB file is refused at once, never waited on or read);
    ValueError, with a message that says what is wrong, when it is not one."""
    from wmtsim.core.input_files import MAX_TABLE_BYTES

    what = "a screening table is the screen.parquet that `wmtsim screen` writes"
    try:
        f = open_shown(path, MAX_TABLE_BYTES)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file ({what})") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL byte in the path
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ValueError(f"{path}: cannot read it: {reason} ({what})") from None
    with f:
        try:
            table = pl.read_parquet(f)  # the opened file, never the path again
        except Exception:  # polars raises several kinds for a file that is not Parquet
            raise ValueError(f"{path}: cannot read a screening table: the file is not in "
                             f"Parquet format ({what})") from None
    needed = {"scenario", "metric", "parameter", "mu_star", "verdict"}
    if not needed <= set(table.columns):
        raise ValueError(f"{path}: not a screening table (needs {', '.join(sorted(needed))})")
    return table


def atlas_chart(table: pl.DataFrame) -> Any:
    """`wmtsim.studies.sweeps.screen.atlas_chart`."""
    from wmtsim.studies.sweeps.screen import atlas_chart as chart

    return chart(table)
