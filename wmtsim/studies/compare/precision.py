"""Enough trajectories: grow n until the headline intervals are as narrow as asked
(`wmtsim compare --precision H`, `wmtsim run --precision H`, `wmtsim claims --precision
H`).

The headline of a comparison (or a run) is its table's cells on `HEADLINE` (pooled ASR, BR
and TSR of every configuration, as the README shows them). `grow_n` runs at the
scenario's n (or ``n``), measures the largest 95% half-width of those cells and, while it
is above ``precision``, reruns at the n the square-root law asks for (n · (half-width /
precision)² with 10% spare, at least twice n, at most ``n_max``); `compare_to_precision`
and `run_to_precision` are it for a comparison and for a run's summary. The trajectories of a seed
are the same at every n (trajectory t is generated from ``(seed, t)``), so a larger run
extends a smaller one. Each cell's Monte Carlo standard error is reported beside it
(half-width / 1.96).

A claims map's intervals are its margins' (`claims_cells`: every (claim, cell) margin
of a claim on a rate, with its 95% interval over every rival:
`wmtsim.core.verdicts.margin_interval`);
`claims_to_precision` reruns the map's sweep at growing n until the widest of them is
≤ ``precision``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import os

    import polars as pl

    from wmtsim.studies.compare.claims import ClaimsMap
    from wmtsim.studies.compare.report import Comparison
    from wmtsim.studies.scenarios.scenario import Scenario
    from wmtsim.studies.sweeps.sweep import Sweep

T = TypeVar("T")

HEADLINE = ("asr", "br", "tsr")
Z95 = 1.959963984540054


def headline_precision(comp: Comparison | pl.DataFrame, metrics: Sequence[str] = HEADLINE
                       ) -> list[dict[str, Any]]:
    """Per configuration and headline metric: pooled value, half-width of its 95%
    interval and Monte Carlo standard error; of a comparison or of a run's summary
    (`wmtsim.studies.compare.report.summarise`: policy, metric, pooled, pooled_low, pooled_high)."""
    from wmtsim.studies.compare.report import Comparison

    if isinstance(comp, Comparison):
        cells = [(p, m, comp.cell(p, m)) for p in comp.policies for m in metrics]
    else:
        cells = [(r["policy"], r["metric"], r) for r in comp.iter_rows(named=True)
                 if r["metric"] in metrics]
    rows = []
    for p, m, c in cells:
        half = (c["pooled_high"] - c["pooled_low"]) / 2
        rows.append({"policy": p, "metric": m, "value": c["pooled"],
                     "half_width": half, "mcse": half / Z95})
    return rows


def widest(comp: Comparison | pl.DataFrame, metrics: Sequence[str] = HEADLINE) -> float:
    """The largest headline half-width (NaN cells, e.g. a metric with no denominator,
    are left out)."""
    widths = [r["half_width"] for r in headline_precision(comp, metrics)
              if math.isfinite(r["half_width"])]
    return max(widths) if widths else math.nan


def grow_n(run_at: Callable[[int], T], width: Callable[[T], float], n: int,
           precision: float, n_max: int = 100_000) -> tuple[T, list[tuple[int, float]]]:
    """``run_at(n)`` at growing n until ``width`` of its result is ≤ ``precision`` or n
    reaches ``n_max`` (module docstring). Returns the last result and the (n, width) of
    every run."""
    if not precision > 0:
        raise ValueError(f"--precision {precision!r}: must be > 0")
    history: list[tuple[int, float]] = []
    while True:
        result = run_at(n)
        h = width(result)
        history.append((n, h))
        if not math.isfinite(h) or h <= precision or n >= n_max:
            return result, history
        n = min(n_max, max(2 * n, math.ceil(1.1 * n * (h / precision) ** 2)))


def compare_to_precision(scenario: Scenario, precision: float, n: int | None = None,
                         n_max: int = 100_000, **kwargs: Any
                         ) -> tuple[Comparison, list[tuple[int, float]]]:
    """`wmtsim.studies.compare.report.compare` at growing n until `widest` ≤ ``precision`` or
    n reaches ``n_max``. Returns the last comparison and the (n, widest half-width) of
    every run."""
    from wmtsim.studies.compare.report import compare

    return grow_n(lambda k: compare(scenario, n=k, **kwargs), widest,
                  scenario.n if n is None else n, precision, n_max)


def claims_cells(table: pl.DataFrame) -> list[dict[str, Any]]:
    """Per (claim, cell) of a claims table (`wmtsim.studies.compare.claims.evaluate_sweep`) on a
    rate (a metric in [0, 1], `wmtsim.core.metrics.UNIT`: one half-width
    cannot serve a rate and a count such as AF): the margin (the smallest difference
    over the rivals), the half-width of its 95% interval and its Monte Carlo standard error
    (half-width / 1.96); cells whose interval is undefined (NaN) are left out."""
    from wmtsim.core.metrics import UNIT
    from wmtsim.studies.compare.claims import knob_columns

    knobs = knob_columns(table)
    rows = []
    for r in table.iter_rows(named=True):
        half = (r["margin_high"] - r["margin_low"]) / 2
        if r["metric"] in UNIT and math.isfinite(half):
            rows.append({"claim": r["claim"], "row": r["row"],
                         **{k: r[k] for k in knobs}, "closest": r["closest"],
                         "value": r["margin"], "half_width": half, "mcse": half / Z95})
    return rows


def claims_widest(cm: ClaimsMap) -> float:
    """The largest half-width of a claims map's margin intervals (NaN with none)."""
    widths = [r["half_width"] for r in claims_cells(cm.table)]
    return max(widths) if widths else math.nan


def claims_to_precision(sweep: Sweep, out: str | os.PathLike[str], precision: float,
                        n_max: int = 100_000, **kwargs: Any
                        ) -> tuple[ClaimsMap, list[tuple[int, float]]]:
    """`wmtsim.studies.compare.claims.claims_map` of ``sweep`` at growing n (from the sweep's
    trajectories per cell) until `claims_widest` ≤ ``precision`` or n reaches ``n_max``.
    Each n is a new sweep (its own points) in ``out``/sweep, replacing the smaller one.
    Returns the last map and the (n, widest half-width) of every run."""
    import shutil
    from dataclasses import replace
    from pathlib import Path

    from wmtsim.studies.compare.claims import SWEEP_DIR, claims_map

    def run_at(n: int) -> ClaimsMap:
        if n != sweep.trajectories:  # the smaller sweep is superseded
            shutil.rmtree(Path(out) / SWEEP_DIR, ignore_errors=True)
        return claims_map(replace(sweep, trajectories=n), out, **kwargs)

    return grow_n(run_at, claims_widest, sweep.trajectories, precision, n_max)


def precision_record(comp: Comparison | pl.DataFrame | list[dict[str, Any]],
                     history: list[tuple[int, float]], precision: float, n_max: int
                     ) -> dict[str, Any]:
    """What a manifest records of a ``--precision`` run: the target, every run's n and
    widest half-width, whether the target was reached, the widest cell's Monte Carlo
    standard error (``comp``: a comparison, a run's summary, or `claims_cells`)."""
    cells = comp if isinstance(comp, list) else headline_precision(comp)
    worst = max(cells, key=lambda r: r["half_width"]) if cells else None
    return {"target_half_width": precision, "n_max": n_max, "reached":
            history[-1][1] <= precision,
            "runs": [{"n": k, "widest_half_width": h} for k, h in history],
            "widest_cell": worst}


def claims_precision_text(cm: ClaimsMap, history: list[tuple[int, float]],
                          precision: float, n_max: int) -> str:
    """What `claims --precision` prints: each run's widest margin half-width and the
    widest (claim, cell) with its Monte Carlo standard error."""
    cells = claims_cells(cm.table)
    runs = "precision: " + ", ".join(f"n={k}: widest ±{h:.3g}" for k, h in history)
    if not cells:
        return runs + "; no claim has a defined interval"
    w = max(cells, key=lambda r: r["half_width"])
    where = ", ".join(f"{k}={w[k]:.3g}" if isinstance(w[k], float) else f"{k}={w[k]}"
                      for k in cm.parameters)
    reached = "" if history[-1][1] <= precision else (
        f"; --n-max {n_max} reached before ±{precision:g}")
    return (runs + f"; widest claim interval {w['claim']} at {where}: margin vs "
            f"{w['closest']} {w['value']:+.3g} ± {w['half_width']:.3g} (Monte Carlo "
            f"standard error {w['mcse']:.2g})" + reached)


def precision_text(comp: Comparison | pl.DataFrame, history: list[tuple[int, float]],
                   precision: float, n_max: int) -> str:
    """What `compare --precision` and `run --precision` print: each run's widest
    half-width and the widest headline cell with its Monte Carlo standard error."""
    worst = max(headline_precision(comp), key=lambda r: r["half_width"])
    reached = "" if history[-1][1] <= precision else (
        f"; --n-max {n_max} reached before ±{precision:g}")
    return ("precision: " + ", ".join(f"n={k}: widest ±{h:.3g}" for k, h in history)
            + f"; widest headline cell {worst['policy']} {worst['metric'].upper()} "
              f"{worst['value']:.3f} ± {worst['half_width']:.3g} (Monte Carlo standard "
              f"error {worst['mcse']:.2g})" + reached)
