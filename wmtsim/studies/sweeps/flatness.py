"""Flat means flat: does a metric differ across a sweep's grid at all? (docs/statistics.md,
"Flat means flat"; docs/sweeps.md.)

Every point of a sweep runs on common random numbers: trajectory t of every setting of a
scenario and replicate is generated from the same ``(seed, t)``. Per-point intervals
ignore that pairing, so a test built on them (a χ² test of equal means over the points'
intervals) is very conservative: a small effect that every trajectory shows is lost in
the spread between trajectories. `flatness` tests the grid the way the sweep was run,
with `wmtsim.core.grid_test.grid_test`, the paired global test of "every setting has the
same mean": each setting's deviation from the grand mean on the same trajectories, the
largest of them studentised (max-t), its null distribution a bootstrap over whole
trajectories (which keeps the pairing).

* **Points** are the sweep's settings (design rows) of one configuration; the paired
  blocks are (scenario, replicate, trajectory), so replicates and scenarios pool.
* **Family**: one test per configuration of the sweep, Holm over them (``correction``),
  two-sided at ``alpha`` (5%).
* **Reading**: ``flat`` when the corrected p-value is above ``alpha``: "no significant
  difference across the grid", and `wmtsim analyze`, the dashboard's sweep page and the
  docs then name no best or most robust setting. Otherwise the grid matters, and
  ``deviating`` counts the settings whose deviation from the grand mean is significant
  (beyond the max-t critical value, simultaneous over the grid).

`wmtsim claims` uses the same test on each claim's margin across its cells
(`margin_flatness`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from wmtsim.core.grid_test import grid_test
from wmtsim.core.inference import ALPHA, CORRECTION_NAMES, adjust
from wmtsim.core.metrics import METRICS

if TYPE_CHECKING:
    from wmtsim.studies.sweeps.store import SweepResults

BLOCK = ("scenario", "replicate", "trajectory")
"""What pairs the points: the same trajectory of the same scenario and replicate."""

SCHEMA: dict[str, Any] = {
    "policy": pl.Utf8, "metric": pl.Utf8, "points": pl.Int64, "n": pl.Int64,
    "statistic": pl.Float64, "critical": pl.Float64, "p": pl.Float64,
    "p_adjusted": pl.Float64, "flat": pl.Boolean, "deviating": pl.Int64,
    "best_row": pl.Int64, "best": pl.Float64, "low": pl.Float64, "high": pl.Float64,
    "test": pl.Utf8, "family": pl.Utf8}


def family_text(tests: int, alpha: float = ALPHA, correction: str = "holm",
                unit: str = "configuration") -> str:
    """How the flatness tests of a sweep are read, e.g. "paired max-t bootstrap on common
    random numbers, Holm over 1 configuration, two-sided 5%" (``unit``: what each test is
    of, a configuration or a claim)."""
    what = unit if tests == 1 else f"{unit}s"
    return (f"paired max-t bootstrap on common random numbers (binary outcomes: Cochran's "
            f"Q with an exact McNemar guard), "
            f"{CORRECTION_NAMES[correction]} over {tests} {what}, two-sided {alpha:.0%}")


def grid_matrix(results: SweepResults, metric: str, policy: str
                ) -> tuple[list[int], np.ndarray]:
    """The settings (design rows) of ``policy`` and their per-trajectory values of
    ``metric`` as a (settings, blocks) matrix, columns paired by `BLOCK`; settings not
    computed yet are left out."""
    design = (results.design.filter(pl.col("policy") == policy)
              .select("row", "scenario", "replicate", "key"))
    traj = (results.trajectories(["key", "trajectory", metric]).collect()
            .join(design, on="key"))  # a key shared by several rows counts for each
    if traj.is_empty():
        return [], np.empty((0, 0))
    wide = traj.pivot(on="row", index=list(BLOCK), values=metric).sort(list(BLOCK))
    rows = sorted(int(c) for c in wide.columns if c not in BLOCK)
    x = wide.select([str(r) for r in rows]).to_numpy().astype(np.float64).T
    return rows, x


def _reading(policy: str, metric: str, rows: Sequence[int], r: dict[str, Any]
             ) -> dict[str, Any]:
    means = np.asarray(r["means"], dtype=np.float64)
    higher = METRICS.get(metric, ("", "higher", ""))[1] == "higher"
    best = int(np.argmax(means) if higher else np.argmin(means))
    return {"policy": policy, "metric": metric, "points": r["points"], "n": r["n"],
            "statistic": r["statistic"], "critical": r["critical"], "p": r["p"],
            "deviating": r["deviating"], "best_row": int(rows[best]),
            "best": float(means[best]), "low": float(means.min()),
            "high": float(means.max()), "test": r["test"]}


def read_tests(rows: list[dict[str, Any]], alpha: float, correction: str,
               unit: str = "configuration") -> pl.DataFrame:
    """Correct a family of flatness rows (``p``) and read each: ``p_adjusted``,
    ``flat`` (not significant at ``alpha``), ``family``."""
    family = family_text(len(rows), alpha, correction, unit)
    for row, pa in zip(rows, adjust([row["p"] for row in rows], correction), strict=True):
        row.update(p_adjusted=float(pa), flat=not float(pa) <= alpha, family=family)
    return pl.DataFrame(rows, schema=SCHEMA)


def flatness(results: SweepResults, metric: str, alpha: float = ALPHA,
             correction: str = "holm", n_resamples: int | None = None) -> pl.DataFrame:
    """Is ``metric`` flat across the settings of each configuration of a sweep? One row
    per configuration (module docstring): points, n (paired blocks), statistic (max-t),
    critical, p, p_adjusted, flat, deviating, the best setting's row and mean (named only
    when not flat), the range of the setting means (low, high), test and family."""
    rows = []
    for policy in results.design["policy"].unique(maintain_order=True).to_list():
        settings, x = grid_matrix(results, metric, policy)
        keep = [i for i in range(len(settings)) if np.isfinite(x[i]).any()]
        if len(keep) < 2:
            continue
        r = grid_test(x[keep], alpha, n_resamples)
        if r["n"] < 2:
            continue
        rows.append(_reading(policy, metric, [settings[i] for i in keep], r))
    return read_tests(rows, alpha, correction)


def margin_flatness(margins: dict[str, list[tuple[int, np.ndarray]]],
                    alpha: float = ALPHA, correction: str = "holm") -> pl.DataFrame:
    """Does each claim's margin differ across the cells of a claims map? ``margins``:
    per claim, (cell row, per-trajectory favour-signed difference from that cell's
    closest rival), the trajectories aligned across cells (common random numbers). One
    row per claim (as `flatness`, ``policy`` holding the claim), one family (Holm)."""
    rows = []
    for claim, cells in margins.items():
        if len(cells) < 2 or len({d.size for _, d in cells}) != 1:
            continue
        r = grid_test(np.stack([d for _, d in cells]), alpha)
        if r["n"] < 2:
            continue
        # "margin" is no metric: higher is better, as a margin is for every claim
        rows.append(_reading(claim, "margin", [c for c, _ in cells], r))
    return read_tests(rows, alpha, correction, "claim")


def flatness_text(row: dict[str, Any], where: str | None = None) -> str:
    """A flatness row in the words `wmtsim analyze`, the dashboard and the docs use: "no
    significant difference across the grid" when the test does not reject (no best point
    named); otherwise that it differs, how many settings deviate, and the best setting
    (``where``: its parameter values, else its row)."""
    from wmtsim.core.formatting import num

    what = "margin" if row["metric"] == "margin" else row["metric"].upper()
    spread = (f"{num(row['low'])} to {num(row['high'])} over {row['points']} settings, "
              f"{row['n']} paired trajectories")
    test = (f"{row['test']}: p = {num(row['p'], 2)}, corrected {num(row['p_adjusted'], 2)};"
            f" {row['family']}")
    if row["flat"]:
        return (f"{what} of {row['policy']}: no significant difference across the grid "
                f"({spread}; {test}); no best point is named.")
    at = where or f"row {row['best_row']}"
    return (f"{what} of {row['policy']} differs significantly across the grid ({spread}; "
            f"{test}); {row['deviating']} of {row['points']} settings deviate "
            f"significantly from the grand mean; best setting {at}: {num(row['best'])}.")
