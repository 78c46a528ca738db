"""Dashboard services of the Attack page: results of ``wmtsim attack`` (docs/attack.md).
Part of the service layer (`wmtsim.interfaces.dashboard`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard.services_runs import listed_manifest, results_dir


def find_attacks(base: str | None = None) -> list[str]:
    """Folders written by ``wmtsim attack`` under ``base`` (default `results_dir`:
    ``$WMTSIM_RESULTS`` or results/ of the folder the dashboard was started in), newest
    first."""
    root = Path(base).absolute() if base else results_dir()
    if not root.is_dir():
        return []
    found = []
    for manifest in root.glob("**/manifest.json"):
        data = listed_manifest(manifest)
        if isinstance(data, dict) and data.get("command") == "attack":
            found.append((manifest.stat().st_mtime, str(manifest.parent)))
    return [p for _, p in sorted(found, reverse=True)][:200]


@dataclass(frozen=True)
class AttackView:
    """An attack result: its worst-case table, transfer matrix, claims and found attacks."""

    manifest: dict[str, Any]
    robust: pl.DataFrame
    transfer: pl.DataFrame
    claims: list[dict[str, Any]]
    attacks: tuple[str, ...]  # paths of the found attacks' scenario files

    @property
    def harm(self) -> str:
        return str(self.manifest.get("settings", {}).get("harm", "asr"))


def attack_mtime(path: str) -> float:
    p = Path(path) / "manifest.json"
    return p.stat().st_mtime if p.is_file() else 0.0


@st.cache_data(show_spinner="Reading the attack results…", max_entries=16)
def attack_view(path: str, mtime: float = 0.0) -> AttackView:
    """The files of a ``wmtsim attack`` folder (``mtime`` invalidates the cache when it is
    rewritten); ValueError when the folder is not one."""
    from wmtsim.core.input_files import read_regular, read_table

    folder = Path(path)
    try:  # every file through the one door: no FIFO, device, link out or huge file
        manifest = json.loads(read_regular(folder / "manifest.json", inside=True))
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: no readable manifest.json ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("command") != "attack":
        raise ValueError(f"{path}: not a `wmtsim attack` result")
    try:
        claims = json.loads(read_regular(folder / "claims.json", inside=True))
        robust = read_table(folder / "results.parquet", folder)
        transfer = read_table(folder / "transfer.parquet", folder)
    except (OSError, ValueError, pl.exceptions.PolarsError) as e:
        raise ValueError(f"{path}: a damaged `wmtsim attack` result ({e})") from None
    attacks = tuple(sorted(str(p) for p in (folder / "attacks").glob("*.toml")))
    return AttackView(manifest, whole_budgets(robust), whole_budgets(transfer), claims,
                      attacks)


def whole_budgets(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its ``budget`` column as integers when every budget is whole (k
    injections per task: "1", not "1.00"); a fractional budget (an expected number of
    injections) stays a float."""
    if "budget" not in frame.columns or not frame.schema["budget"].is_float():
        return frame
    k = frame["budget"]
    if k.is_null().any() or not (k == k.round(0)).all():
        return frame
    return frame.with_columns(pl.col("budget").cast(pl.Int64))


def attack_budget_chart(view: AttackView) -> Any:
    """`wmtsim.studies.attack.study.budget_chart`: harm vs k per configuration."""
    from wmtsim.studies.attack.study import budget_chart

    return budget_chart(view.robust, harm=view.harm)


def attack_transfer_chart(view: AttackView) -> Any:
    """`wmtsim.studies.attack.study.transfer_chart`: the transfer matrix as a heatmap."""
    from wmtsim.studies.attack.study import transfer_chart

    return transfer_chart(view.transfer, view.harm)


def attack_effects(frame: pl.DataFrame, prefix: str, name: str) -> pl.DataFrame:
    """`wmtsim.studies.attack.study.effect_column`: a paired effect's numbers as the one
    text the CLI and the docs print (an upper bound when no trajectory differs)."""
    from wmtsim.studies.attack.study import effect_column

    return effect_column(frame, prefix, name)
