"""What the dashboard's download buttons write: a chart as SVG or PNG (vl-convert, the
dashboard extra's renderer), a table as CSV or Parquet. Pure functions of what a page
shows, so a test (or a notebook) can call them without Streamlit."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import polars as pl

PNG_SCALE = 2
"""Pixels per CSS pixel of an exported PNG (sharp on a printed page)."""


def _spec(chart: Any) -> str:
    return str(chart.to_json())


def svg(chart: Any) -> bytes:
    """An Altair chart as a standalone SVG file."""
    import vl_convert as vlc

    return str(vlc.vegalite_to_svg(_spec(chart))).encode("utf-8")


def png(chart: Any) -> bytes:
    """An Altair chart as a PNG file (`PNG_SCALE` pixels per CSS pixel)."""
    import vl_convert as vlc

    return bytes(vlc.vegalite_to_png(_spec(chart), scale=PNG_SCALE))


def _flat(frame: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists, structs) as JSON text: CSV has no nesting."""
    nested = [c for c, t in frame.schema.items() if t.is_nested()]
    return frame.with_columns(
        pl.Series(c, [None if v is None else json.dumps(v, default=str)
                      for v in frame[c].to_list()], dtype=pl.String) for c in nested)


def csv(frame: pl.DataFrame) -> bytes:
    """A table as CSV (full precision; an empty cell where a value is missing)."""
    return _flat(frame).write_csv().encode("utf-8")


def parquet(frame: pl.DataFrame) -> bytes:
    """A table as a Parquet file (its types kept)."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


def file_stem(name: str) -> str:
    """A download's file name from a label: ``"BR / PRR at step 3"`` -> ``br_prr_at_step_3``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "wmtsim"
