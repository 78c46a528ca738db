"""Enough trajectories: grow n until the headline intervals are as narrow as asked
(`wmtsim compare --precision H`).

The headline of a comparison is its table's cells on `HEADLINE` (pooled ASR, BR and TSR of
every configuration, as the README shows them). `compare_to_precision` runs at the
scenario's n (or ``n``), measures the largest 95% half-width of those cells and, while it
is above ``precision``, reruns at the n the square-root law asks for (n · (half-width /
precision)² with 10% spare, at least twice n, at most ``n_max``). The trajectories of a seed
are the same at every n (trajectory t is generated from ``(seed, t)``), so a larger run
extends a smaller one. Each cell's Monte Carlo standard error is reported beside it
(half-width / 1.96).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wmtsim.studies.report import Comparison
    from wmtsim.studies.scenario import Scenario

HEADLINE = ("asr", "br", "tsr")
Z95 = 1.959963984540054


def headline_precision(comp: Comparison, metrics: Sequence[str] = HEADLINE
                       ) -> list[dict[str, Any]]:
    """Per configuration and headline metric: pooled value, half-width of its 95%
    interval and Monte Carlo standard error."""
    rows = []
    for p in comp.policies:
        for m in metrics:
            c = comp.cell(p, m)
            half = (c["pooled_high"] - c["pooled_low"]) / 2
            rows.append({"policy": p, "metric": m, "value": c["pooled"],
                         "half_width": half, "mcse": half / Z95})
    return rows


def widest(comp: Comparison, metrics: Sequence[str] = HEADLINE) -> float:
    """The largest headline half-width (NaN cells, e.g. a metric with no denominator,
    are left out)."""
    widths = [r["half_width"] for r in headline_precision(comp, metrics)
              if math.isfinite(r["half_width"])]
    return max(widths) if widths else math.nan


def compare_to_precision(scenario: Scenario, precision: float, n: int | None = None,
                         n_max: int = 100_000, **kwargs: Any
                         ) -> tuple[Comparison, list[tuple[int, float]]]:
    """`wmtsim.studies.report.compare` at growing n until `widest` ≤ ``precision`` or
    n reaches ``n_max``. Returns the last comparison and the (n, widest half-width) of
    every run."""
    from wmtsim.studies.report import compare

    if not precision > 0:
        raise ValueError(f"--precision {precision!r}: must be > 0")
    n = scenario.n if n is None else n
    history: list[tuple[int, float]] = []
    while True:
        comp = compare(scenario, n=n, **kwargs)
        h = widest(comp)
        history.append((n, h))
        if not math.isfinite(h) or h <= precision or n >= n_max:
            return comp, history
        n = min(n_max, max(2 * n, math.ceil(1.1 * n * (h / precision) ** 2)))


def precision_text(comp: Comparison, history: list[tuple[int, float]], precision: float,
                   n_max: int) -> str:
    """What `compare --precision` prints: each run's widest half-width and the widest
    headline cell with its Monte Carlo standard error."""
    worst = max(headline_precision(comp), key=lambda r: r["half_width"])
    reached = "" if history[-1][1] <= precision else (
        f"; --n-max {n_max} reached before ±{precision:g}")
    return ("precision: " + ", ".join(f"n={k}: widest ±{h:.3g}" for k, h in history)
            + f"; widest headline cell {worst['policy']} {worst['metric'].upper()} "
              f"{worst['value']:.3f} ± {worst['half_width']:.3g} (Monte Carlo standard "
              f"error {worst['mcse']:.2g})" + reached)
