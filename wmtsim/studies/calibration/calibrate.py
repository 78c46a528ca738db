"""Fit a scenario's free knobs to a paper table (docs/world.md, "Calibration").

`calibrate` runs the target table's configurations on common random numbers (one seed,
one set of trajectories, so the objective changes smoothly with the knobs) and minimises
a weighted squared error between the simulated and the paper's cells (pooled Σ/Σ over
trajectories, as the paper's table and `wmtsim compare` compute them), with
`scipy.optimize.differential_evolution` (or Nelder–Mead). An optional penalty on the
paper's ordering (``order_weight``, default 0: the ordering is what `compare` tests, so
by default it is not fitted for). Fitting never edits results:
it writes a scenario with the fitted values and reports the error of every cell, the
fitted and the held-out ones.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wmtsim.core.metrics import compare_metrics
from wmtsim.studies.compare.paper_checks import TABLE4_ORDER
from wmtsim.studies.compare.report import paper_table4, run_policies
from wmtsim.studies.scenarios.scenario import Scenario

# Cells fitted by default: the paper's Table 4 metrics that the ordering claim covers.
FIT_METRICS = TABLE4_ORDER
# Scale of a metric's error: AF is a count per injection; every other metric's is 1 (the
# rates, and the token cells that are reported but not fitted by default).
METRIC_SCALE = {"af": 5.0}

# Default free knobs for --target paper-table4: (override key, low, high, integer?).
DEFAULT_KNOBS: tuple[tuple[str, float, float, bool], ...] = (
    ("stubs.selector_noise", 0.0, 0.6, False),
    ("stubs.poison_boost", -0.3, 0.3, False),
    ("stubs.p_persuade", 0.3, 1.0, False),
    ("stubs.p_persuade_vs_evidence", 0.0, 1.0, False),
    ("stubs.p_leak", 0.0, 1.0, False),
    ("stubs.w_u", 0.0, 2.0, False),
    ("stubs.top_k", 1, 8, True),
    ("params.budget", 60, 600, True),
)


@dataclass
class Knob:
    key: str
    low: float
    high: float
    integer: bool = False

    def value(self, x: float) -> float | int:
        x = min(max(x, self.low), self.high)
        return round(x) if self.integer else float(round(x, 4))


@dataclass
class CalibrationResult:
    scenario: Scenario
    fitted: dict[str, float | int]
    fit_on: tuple[str, ...]
    metrics: tuple[str, ...]
    cells: list[dict[str, Any]]  # policy, metric, paper, simulated, error, fitted
    objective: float
    evaluations: int
    seconds: float
    history: list[float] = field(default_factory=list)


def parse_knob(text: str) -> Knob:
    """``key=low:high`` (``:int`` suffix for an integer knob), e.g. ``stubs.p_leak=0:1``;
    ValueError naming ``--knob`` unless both ends are finite numbers, low <= high."""
    key, _, rng = text.partition("=")
    parts = rng.split(":")
    allowed = "key=low:high[:int] with finite low <= high, e.g. stubs.p_leak=0:1"
    if not key.strip() or len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "int"):
        raise ValueError(f"--knob {text!r}: allowed: {allowed}")
    try:
        low, high = float(parts[0]), float(parts[1])
    except ValueError:
        raise ValueError(f"--knob {text!r}: the ends are not numbers; allowed: {allowed}"
                         ) from None
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise ValueError(f"--knob {text!r}: allowed: {allowed}")
    return Knob(key.strip(), low, high, len(parts) == 3)


def parse_weight(text: str) -> tuple[str, float]:
    """``ROW=W`` of ``--weight``: W a finite number >= 0 (an infinite weight would make
    the objective inf or NaN, a silent wrong fit)."""
    row, eq, value = text.partition("=")
    try:
        w = float(value)
    except ValueError:
        w = math.nan
    if not eq or not row.strip() or not math.isfinite(w) or w < 0:
        raise ValueError(f"--weight {text!r}: allowed: ROW=W with W a finite number >= 0, "
                         "e.g. wmt=5")
    return row.strip(), w


def simulate_table(scenario: Scenario, policies: Sequence[str], n: int, seed: int,
                   metrics: Sequence[str] = compare_metrics("table4")
                   ) -> dict[str, dict[str, float]]:
    """Each metric per policy on common random numbers (`report.run_policies`): ratio
    metrics pooled over trajectories (Σ/Σ, `wmtsim.core.metrics.RATIOS`), the others the mean
    of their finite per-trajectory values."""
    from wmtsim.core.metrics import RATIOS

    out: dict[str, dict[str, float]] = {}
    for p, r in run_policies(scenario, policies, n=n, seed=seed).items():
        row = {}
        t = r.trajectories
        for m in metrics:
            if m in RATIOS:
                num = sum(float(t[f"n_{c}"].sum()) for c in RATIOS[m][0])
                den = sum(float(t[f"n_{c}"].sum()) for c in RATIOS[m][1])
                row[m] = num / den if den > 0 else math.nan
            else:
                x = t[m].to_numpy().astype(np.float64)
                x = x[np.isfinite(x)]
                row[m] = float(x.mean()) if x.size else math.nan
        out[p] = row
    return out


def objective_value(sim: dict[str, dict[str, float]], target: dict[str, dict[str, float]],
                    fit_on: Sequence[str], metrics: Sequence[str],
                    order_weight: float = 0.0,
                    row_weights: Mapping[str, float] | None = None) -> float:
    """Weighted squared error on the fitted cells + hinge penalty on the paper's ordering.

    ``row_weights`` multiplies a row's squared errors (default 1 for every row).
    """
    err = 0.0
    for p in fit_on:
        w = (row_weights or {}).get(p, 1.0)
        for m in metrics:
            d = (sim[p][m] - target[p][m]) / METRIC_SCALE.get(m, 1.0)
            err += w * d * d if math.isfinite(d) else w
    if "wmt" in sim and "linear" in sim:
        for m in metrics:
            sign = 1.0 if m == "tsr" else -1.0  # +1: higher is better
            for p in sim:
                if p == "wmt":
                    continue
                gap = sign * (sim["wmt"][m] - sim[p][m]) / METRIC_SCALE.get(m, 1.0)
                err += order_weight * max(0.0, 0.02 - gap) ** 2
                if p != "linear":
                    gap_l = sign * (sim[p][m] - sim["linear"][m]) / METRIC_SCALE.get(m, 1.0)
                    err += order_weight * max(0.0, 0.02 - gap_l) ** 2
    return err


def calibrate(scenario: Scenario, target: str = "paper-table4",
              fit_on: Sequence[str] | None = None, knobs: Sequence[Knob] | None = None,
              metrics: Sequence[str] = FIT_METRICS, n: int = 200, seed: int | None = None,
              method: str = "differential_evolution", maxiter: int = 30, popsize: int = 8,
              workers: int = 1, row_weights: Mapping[str, float] | None = None,
              progress: Callable[[int, float], None] | None = None,
              order_weight: float = 0.0) -> CalibrationResult:
    """Fit ``knobs`` so the ``fit_on`` rows of ``target`` are reproduced; see module doc."""
    from scipy import optimize

    if target != "paper-table4":
        raise ValueError(f"--target {target!r} is not supported; allowed: paper-table4")
    table = paper_table4()
    policies = tuple(table)
    fit_on = tuple(fit_on) if fit_on else policies
    for p in fit_on:
        if p not in table:
            raise ValueError(f"--fit-on {p!r} is not a row of {target}; allowed: "
                             + ", ".join(policies))
    for p, w in (row_weights or {}).items():
        if p not in table or not w >= 0:
            raise ValueError(f"--weight {p}={w}: expected a row of {target} "
                             f"({', '.join(policies)}) and a weight >= 0")
    knobs = list(knobs) if knobs else [Knob(*k) for k in DEFAULT_KNOBS]
    for k in knobs:  # validate keys and ranges up front (errors name the key)
        try:
            _current(scenario, k)
        except (AttributeError, KeyError, IndexError, TypeError, ValueError):
            raise ValueError(f"--knob {k.key!r}: not a numeric knob of the scenario's "
                             "world, stubs, params or poison[i]; allowed: e.g. "
                             "stubs.p_leak=0:1, params.budget=60:600:int") from None
        scenario.with_overrides({k.key: k.value(k.low)})
        scenario.with_overrides({k.key: k.value(k.high)})
    seed = scenario.seed if seed is None else seed
    t0 = time.perf_counter()
    history: list[float] = []
    best = [math.inf]

    def decode(x: np.ndarray) -> dict[str, float | int]:
        return {k.key: k.value(float(v)) for k, v in zip(knobs, x, strict=True)}

    def f(x: np.ndarray) -> float:
        s = scenario.with_overrides(decode(x))  # type: ignore[arg-type]
        sim = simulate_table(s, policies, n, seed, metrics)
        val = objective_value(sim, table, fit_on, metrics, order_weight=order_weight,
                              row_weights=row_weights)
        history.append(val)
        best[0] = min(best[0], val)
        if progress is not None:
            progress(len(history), best[0])
        return val

    bounds = [(k.low, k.high) for k in knobs]
    if method == "nelder-mead":
        x0 = np.array([_current(scenario, k) for k in knobs])
        res = optimize.minimize(f, x0, method="Nelder-Mead", bounds=bounds,
                                options={"maxiter": maxiter * len(knobs), "xatol": 1e-3,
                                         "fatol": 1e-5})
    else:
        x0 = np.array([_current(scenario, k) for k in knobs])
        res = optimize.differential_evolution(
            f, bounds, maxiter=maxiter, popsize=popsize, seed=seed, polish=False,
            tol=1e-6, x0=np.clip(x0, [b[0] for b in bounds], [b[1] for b in bounds]),
            workers=workers, updating="deferred" if workers != 1 else "immediate")
    fitted = decode(res.x)
    fitted_scenario = scenario.with_overrides(fitted)  # type: ignore[arg-type]
    sim = simulate_table(fitted_scenario, policies, n, seed)
    cells = cell_errors(sim, table, fit_on, metrics)
    return CalibrationResult(fitted_scenario, fitted, fit_on, tuple(metrics), cells,
                             float(res.fun), len(history), time.perf_counter() - t0, history)


def cell_errors(sim: dict[str, dict[str, float]], table: dict[str, dict[str, float]],
                fit_on: Sequence[str], metrics: Sequence[str]) -> list[dict[str, Any]]:
    cells = []
    for p, row in table.items():
        for m, paper in row.items():
            if m not in sim[p]:
                continue
            cells.append({"policy": p, "metric": m, "paper": paper, "simulated": sim[p][m],
                          "error": sim[p][m] - paper,
                          "fitted": p in fit_on and m in metrics})
    return cells


def _current(scenario: Scenario, knob: Knob) -> float:
    import re

    m = re.fullmatch(r"poison\[(\d+)\]\.(\w+)", knob.key)
    if m:
        return float(getattr(scenario.world.poison[int(m.group(1))], m.group(2)))
    section, name = knob.key.split(".", 1) if "." in knob.key else ("params", knob.key)
    obj = {"world": scenario.world, "stubs": scenario.stubs, "params": scenario.params}[section]
    return float(getattr(obj, name))
