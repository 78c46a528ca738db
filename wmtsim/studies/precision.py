"""Enough trajectories: grow n until the headline intervals are as narrow as asked
(`wmtsim compare --precision H`, `wmtsim run --precision H`).

The headline of a comparison (or a run) is its table's cells on `HEADLINE` (pooled ASR, BR
and TSR of every configuration, as the README shows them). `grow_n` runs at the
scenario's n (or ``n``), measures the largest 95% half-width of those cells and, while it
is above ``precision``, reruns at the n the square-root law asks for (n · (half-width /
precision)² with 10% spare, at least twice n, at most ``n_max``); `compare_to_precision`
and `run_to_precision` are it for a comparison and for a run's summary. The trajectories of a seed
are the same at every n (trajectory t is generated from ``(seed, t)``), so a larger run
extends a smaller one. Each cell's Monte Carlo standard error is reported beside it
(half-width / 1.96).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import polars as pl

    from wmtsim.studies.report import Comparison
    from wmtsim.studies.scenario import Scenario

T = TypeVar("T")

HEADLINE = ("asr", "br", "tsr")
Z95 = 1.959963984540054


def headline_precision(comp: Comparison | pl.DataFrame, metrics: Sequence[str] = HEADLINE
                       ) -> list[dict[str, Any]]:
    """Per configuration and headline metric: pooled value, half-width of its 95%
    interval and Monte Carlo standard error; of a comparison or of a run's summary
    (`wmtsim.studies.report.summarise`: policy, metric, pooled, pooled_low, pooled_high)."""
    from wmtsim.studies.report import Comparison

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
    """`wmtsim.studies.report.compare` at growing n until `widest` ≤ ``precision`` or
    n reaches ``n_max``. Returns the last comparison and the (n, widest half-width) of
    every run."""
    from wmtsim.studies.report import compare

    return grow_n(lambda k: compare(scenario, n=k, **kwargs), widest,
                  scenario.n if n is None else n, precision, n_max)


def precision_record(comp: Comparison | pl.DataFrame, history: list[tuple[int, float]],
                     precision: float, n_max: int) -> dict[str, Any]:
    """What a manifest records of a ``--precision`` run: the target, every run's n and
    widest half-width, whether the target was reached, the widest cell's Monte Carlo
    standard error."""
    worst = max(headline_precision(comp), key=lambda r: r["half_width"])
    return {"target_half_width": precision, "n_max": n_max, "reached":
            history[-1][1] <= precision,
            "runs": [{"n": k, "widest_half_width": h} for k, h in history],
            "widest_cell": worst}


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
