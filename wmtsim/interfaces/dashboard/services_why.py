"""Dashboard services of the Why page: mechanism attribution
(`wmtsim.studies.attribution.attribution`) and claims maps (`wmtsim.studies.compare.claims`). Part
of the service layer (`wmtsim.interfaces.dashboard`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard.services_runs import (
    REPO,
    THREADS,
    _load,
    open_shown,
    results_dir,
    shown_root,
)

CLAIMS_FILE = "claims.parquet"
"""`wmtsim.studies.compare.claims.CLAIMS_FILE` (not imported: the page imports that module
lazily)."""

STUDY_TABLES = "why_study/tables"
"""The shipped study's tables, in the source checkout (`REPO`)."""


def wmt_configurations() -> dict[str, str]:
    """WMT's own configurations (the ones attribution decomposes): name -> label."""
    from wmtsim.core.policies import POLICIES, WMT

    return {name: p.label for name, p in POLICIES.items() if p.family == WMT.code}


@dataclass(frozen=True)
class AttributionView:
    """`wmtsim.studies.attribution.attribution.attribute`'s table and coalitions, and what it
    ran."""

    table: pl.DataFrame
    coalitions: pl.DataFrame
    runs: int
    seconds: float


@st.cache_data(show_spinner="Running every coalition of switches…", max_entries=32)
def attribution(name: str, toml_text: str, from_policy: str, to_policy: str,
                metrics: tuple[str, ...], n: int, seed: int) -> AttributionView:
    """Shapley attribution of ``to − from`` over their differing switches, on one world
    (`wmtsim.studies.attribution.attribution.attribute`); raises ValueError for a request it
    refuses."""
    from wmtsim.studies.attribution.attribution import attribute

    att = attribute(_load(name, toml_text), from_policy, to_policy, metrics=metrics, n=n,
                    seed=seed, threads=THREADS, n_resamples=2000)
    return AttributionView(att.table, att.coalitions, att.runs, att.seconds)


def waterfall_chart(table: pl.DataFrame) -> Any:
    """`wmtsim.studies.attribution.attribution.waterfall_chart` of an attribution table, two
    metrics per row
    (three overflow the page at 1280 px)."""
    from wmtsim.studies.attribution.attribution import waterfall_chart as chart

    return chart(table, columns=2)


def find_claims(base: str | None = None) -> list[str]:
    """Claims maps: folders written by ``wmtsim claims`` under ``base`` (default
    `results_dir`: ``$WMTSIM_RESULTS`` or results/ of the folder the dashboard was started
    in), then the shipped study's claims tables (why_study/tables/claims_*.parquet, when
    wmtsim runs from its source checkout), as absolute paths."""
    found: list[str] = []
    root = Path(base).absolute() if base else results_dir()
    if root.is_dir():
        # An attack folder also writes claims.json (Table 4's claims under the worst
        # case) but no claims map: a map is the folder that holds claims.parquet too.
        found += sorted(str(p.parent) for p in root.glob("**/claims.json")
                        if (p.parent / CLAIMS_FILE).is_file())
        found += sorted(str(p) for p in root.glob("claims_*.parquet"))
    if REPO is not None and (REPO / STUDY_TABLES).is_dir():
        found += sorted(str(p) for p in (REPO / STUDY_TABLES).glob("claims_*.parquet"))
    return found[:200]


@dataclass(frozen=True)
class ClaimsView:
    """A claims map: the scenario it tested, its two knobs and its table."""

    scenario: str
    knobs: tuple[str, ...]
    table: pl.DataFrame


@st.cache_data(show_spinner="Reading the claims map…", max_entries=16)
def claims_view(path: str, mtime: float = 0.0) -> ClaimsView:
    """The scenario, knobs and table of a claims map (`wmtsim.studies.compare.claims.load_claims`;
    ``mtime`` invalidates the cache when it is rewritten). A bare table of the shipped
    study (why_study/tables/claims_X.parquet) takes its scenario from the study file of
    the same name in why_study/. Read through the one door, no link followed below the
    results folder when the map is under it (`shown_root`), else below the map's folder."""
    from wmtsim.studies.compare.claims import load_claims

    meta, table = load_claims(path, root=shown_root(path))
    scenario = meta.get("scenario") or _study_scenario(Path(path))
    return ClaimsView(scenario or "scenario not recorded", tuple(meta["parameters"]), table)


def _study_scenario(table_file: Path) -> str | None:
    import tomllib

    from wmtsim.studies.scenarios.toml_files import MAX_FILE_BYTES

    if REPO is None:
        return None
    study = REPO / "why_study" / f"{table_file.stem}.toml"
    if table_file.absolute().resolve().parent == (REPO / STUDY_TABLES).resolve() and \
            study.is_file():
        with open_shown(study, MAX_FILE_BYTES, result=REPO / "why_study") as f:
            return str(tomllib.loads(f.read().decode("utf-8")).get("scenario") or "")
    return None


def _claims_meta(path: str | None) -> dict[str, Any]:
    """The claims.json of the claims map at ``path`` (empty for a table alone, or one that
    cannot be read), through the one door as `claims_view` reads it (`open_shown`)."""
    import json

    from wmtsim.core.input_files import MAX_READ_BYTES

    if not path:
        return {}
    try:
        with open_shown(Path(path) / "claims.json", MAX_READ_BYTES, result=path) as f:
            meta = json.loads(f.read(MAX_READ_BYTES))
    except (OSError, ValueError):  # no claims.json (a table alone), not a regular file
        return {}
    return meta if isinstance(meta, dict) else {}


def claims_mtime(path: str) -> float:
    p = Path(path)
    target = p / "claims.parquet" if p.is_dir() else p
    return target.stat().st_mtime if target.is_file() else 0.0


CLAIMS_COLUMNS = 3
"""Heatmaps per row of the claims map (five, as in the written figure, overflow the page at
1,280 px)."""


def claims_chart(table: pl.DataFrame, x: str, y: str) -> Any:
    """`wmtsim.studies.compare.claims.heatmap_chart`: one heatmap per claim, `CLAIMS_COLUMNS` per
    row."""
    from wmtsim.studies.compare.claims import heatmap_chart

    return heatmap_chart(table, x, y, columns=CLAIMS_COLUMNS)


def claims_family(path: str, table: pl.DataFrame) -> str:
    """The map's family of tests, its level and correction, and the note on correlated
    cells (from claims.json; a bare table says what it can)."""
    from wmtsim.studies.compare.claims import CRN_NOTE

    family = _claims_meta(path).get("family")
    if family is None:
        family = f"{table.height} (claim, cell) tests; correction not recorded"
    return f"Family: {family}. {CRN_NOTE}"


def claims_summary(table: pl.DataFrame, path: str | None = None) -> pl.DataFrame:
    """Per claim: cells per verdict and, when the map's claims.json records it, whether
    the claim's margin differs across the grid (`wmtsim.studies.compare.claims.summary_frame`)."""
    from wmtsim.studies.compare.claims import summary_frame

    return summary_frame(table, _claims_meta(path).get("margin_flatness"))
