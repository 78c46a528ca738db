"""Dashboard services of the Sweep page: finding and reading sweep folders, grid means,
Pareto fronts, sensitivity indices and re-simulating one point's trajectory.
Part of the service layer (`wmtsim.interfaces.dashboard`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st

from wmtsim.interfaces.dashboard.services_dynamics import TrajectoryView, _view
from wmtsim.interfaces.dashboard.services_runs import (
    THREADS,
    Unavailable,
    listed_manifest,
    results_dir,
)


def _analysis() -> Any:
    try:
        from wmtsim.studies.sweeps import analysis
    except ImportError as e:
        raise Unavailable(f"wmtsim.studies.sweeps.analysis cannot be imported ({e})") from None
    return analysis


@dataclass(frozen=True)
class SweepView:
    """A sweep folder: its manifest, varied parameters and one row per computed point."""

    root: str
    manifest: dict[str, Any]
    parameters: tuple[str, ...]
    metrics: tuple[str, ...]
    table: pl.DataFrame


@st.cache_data(show_spinner="Reading the sweep…", max_entries=16)
def load_sweep_folder(folder: str, mtime: float = 0.0) -> SweepView:
    """`wmtsim.studies.sweeps.store.load_results` of ``folder`` (``mtime`` invalidates the cache
    when the sweep grows)."""
    try:
        from wmtsim.studies.sweeps.store import load_results
    except ImportError as e:
        raise Unavailable(f"wmtsim.studies.sweeps.store cannot be imported ({e})") from None
    res = load_results(folder)
    metrics = tuple(res.manifest.get("metrics") or ())
    return SweepView(str(res.root), res.manifest, tuple(res.parameters), metrics,
                     res.table())


def sweep_mtime(folder: str) -> float:
    manifest = Path(folder) / "manifest.json"
    return manifest.stat().st_mtime if manifest.is_file() else 0.0


def find_sweeps(base: str | None = None) -> list[str]:
    """Sweep output folders under ``base`` (default `results_dir`: ``$WMTSIM_RESULTS`` or
    results/ of the folder the dashboard was started in), newest first: folders whose
    manifest.json was written by `wmtsim sweep` (run and compare folders have one too,
    not a sweep's), except the sweep a claims map keeps inside its folder."""
    root = Path(base).absolute() if base else results_dir()
    if not root.is_dir():
        return []
    found = []
    for manifest in root.glob("**/manifest.json"):
        data = listed_manifest(manifest)
        if (manifest.parent.parent / "claims.json").is_file():
            continue  # a claims map's own sweep (`wmtsim claims`): shown on the Why page
        if isinstance(data, dict) and "sweep_id" in data and "design" in data:
            found.append((manifest.stat().st_mtime, str(manifest.parent)))
    return [folder for _, folder in sorted(found, reverse=True)][:200]


HEATMAP_BINS = (8, 8)
"""Bins per axis of a heatmap over two continuous parameters."""


def is_continuous(view: SweepView, parameter: str) -> bool:
    """Whether a sweep parameter takes values from a range (lhs, sobol or random design)
    rather than from a list of levels (grid)."""
    return view.manifest["design"]["kind"] != "grid" and \
        view.table.schema[parameter].is_numeric()


def grid_means(table: pl.DataFrame, x: str, y: str, metric: str,
               bins: tuple[int, int] | None = None) -> pl.DataFrame:
    """Mean of the per-point means of ``metric`` in each ``(x, y)`` cell (averaging over
    the other parameters, replicates and scenarios of the rows given), with the number of
    points per cell.

    ``bins``: cut a continuous ``x`` and ``y`` into that many equal-width bins; each cell
    then has its bounds ``x_low``, ``x_high``, ``y_low``, ``y_high`` (``x`` and ``y`` are
    the bin centres).
    """
    if bins is None:
        return (table.group_by(x, y).agg(pl.col(metric).mean(), pl.len().alias("points"))
                .sort(x, y))
    edges = {}
    binned = table
    for name, k in ((x, bins[0]), (y, bins[1])):
        lo, hi = float(table[name].min()), float(table[name].max())  # type: ignore[arg-type]
        width = (hi - lo) / k if hi > lo else 1.0
        edges[name] = (lo, width)
        index = ((pl.col(name) - lo) / width).floor().clip(0, k - 1)
        binned = binned.with_columns(index.alias(f"{name}__bin"))
    cells = binned.group_by(f"{x}__bin", f"{y}__bin").agg(
        pl.col(metric).mean(), pl.len().alias("points"))
    out = []
    for name in (x, y):
        lo, width = edges[name]
        b = pl.col(f"{name}__bin")
        out += [(lo + b * width).alias(f"{name}_low"), (lo + (b + 1) * width).alias(
            f"{name}_high"), (lo + (b + 0.5) * width).alias(name)]
    return cells.select(*out, metric, "points").sort(x, y)


def pareto(table: pl.DataFrame, cost: str, benefit: str) -> pl.DataFrame:
    """The points of ``table`` on the Pareto front of ``benefit`` (maximised) against
    ``cost`` (minimised): `wmtsim.studies.sweeps.analysis.pareto_front`."""
    return _analysis().pareto_front(table, cost=cost, value=benefit)


@st.cache_data(show_spinner="Testing whether the grid is flat…", max_entries=16)
def flatness(folder: str, metric: str, mtime: float = 0.0) -> pl.DataFrame:
    """Does ``metric`` differ across the sweep's settings at all, per policy?
    `wmtsim.studies.sweeps.flatness.flatness`: the paired test on common random numbers that
    `wmtsim analyze` reads before it names a best or most robust setting."""
    from wmtsim.studies.sweeps.flatness import flatness as test
    from wmtsim.studies.sweeps.store import load_results

    return test(load_results(folder), metric)


OPENING = ("tsr", "accuracy", "asr", "prompt_tokens")
"""The metrics the explorer tries first, in this order (then the sweep's others)."""


def opening_metric(view: SweepView, policy: str, mtime: float = 0.0) -> str:
    """The metric the explorer opens on: the first of `OPENING` (then of the sweep's
    metrics) that differs significantly across the sweep's settings for ``policy``
    (`flatness`), so that a sweep where TSR is noise (rho_m_grid: 1-3 successes of 400)
    opens on what it varies (accuracy); the first metric when every one is flat."""
    metrics = [m for m in view.metrics if m in view.table.columns]
    order = [m for m in OPENING if m in metrics] + [m for m in metrics if m not in OPENING]
    for metric in order:
        try:
            test = flatness(view.root, metric, mtime)
        except (ValueError, RuntimeError):
            continue
        row = test.filter(pl.col("policy") == policy) if test.height else test
        if row.height and not row["flat"][0]:
            return metric
    return order[0]


def flatness_text(row: dict[str, Any], parameters: tuple[str, ...],
                  setting: dict[str, Any] | None = None) -> str:
    """One line of the sweep page, in `wmtsim analyze`'s words
    (`wmtsim.studies.sweeps.flatness.flatness_text`; ``setting``: the best point's row, whose
    parameter values name it)."""
    from wmtsim.studies.sweeps.flatness import flatness_text as text

    where = ", ".join(f"{k}={setting[k]:.3g}" if isinstance(setting[k], float)
                      else f"{k}={setting[k]}" for k in parameters) if setting else None
    return text(row, where)


@st.cache_data(show_spinner="Computing sensitivity indices…", max_entries=16)
def sensitivity(folder: str, metric: str, mtime: float = 0.0) -> pl.DataFrame:
    """Sobol indices (S1, ST with intervals) of ``metric`` per policy and parameter:
    `wmtsim.studies.sweeps.analysis.sobol_indices` (needs a sobol design)."""
    from wmtsim.studies.sweeps.store import load_results

    with warnings.catch_warnings():
        # An index is NaN when the metric does not vary across the design (numpy warns
        # about the all-NaN slice); the table shows the NaN.
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        return _analysis().sobol_indices(load_results(folder), metric)


def sensitivity_chart(indices: pl.DataFrame) -> Any:
    """`wmtsim.studies.sweeps.analysis.sensitivity_chart` of the indices."""
    return _analysis().sensitivity_chart(indices)


@st.cache_data(show_spinner=False, max_entries=64)
def point_trajectories(folder: str, key: str, mtime: float = 0.0) -> pl.DataFrame:
    """The per-trajectory metrics a sweep stored for one point."""
    from wmtsim.studies.sweeps.store import load_results

    return (load_results(folder).trajectories(where=pl.col("key") == key)
            .sort("trajectory").collect())


def _sweep_point(manifest: dict[str, Any], key: str) -> Any:
    try:
        from wmtsim.studies.sweeps.sweep import load_sweep, plan
    except ImportError as e:
        raise Unavailable(f"wmtsim.studies.sweeps.sweep cannot be imported ({e})") from None
    path = manifest.get("sweep_file")
    if not path or not Path(path).is_file():
        raise Unavailable(f"the sweep file {path!r} is not there any more, so the point "
                          "cannot be re-simulated")
    for p in plan(load_sweep(path)).points:
        if p.key == key:
            return p
    raise Unavailable(f"the sweep file {path} no longer defines point {key} "
                      "(it was edited after the sweep ran)")


@st.cache_data(show_spinner="Re-simulating the trajectory…", max_entries=64)
def sweep_trajectory(folder: str, key: str, trajectory: int, mtime: float = 0.0
                     ) -> TrajectoryView:
    """One trajectory of a sweep point, re-run with step recording (same seed and
    trajectory index, so it is the trajectory the sweep aggregated)."""
    from wmtsim.engine.simulation import simulate

    view = load_sweep_folder(folder, mtime)
    p = _sweep_point(view.manifest, key)
    res = simulate(p.world, p.policy, n=1, seed=p.seed, params=p.params, stubs=p.stubs,
                   threads=THREADS, record_steps=1, start=trajectory, baselines=p.baselines)
    return _view(res, trajectory)
