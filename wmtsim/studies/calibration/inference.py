"""Calibration as inference against a noisy target (docs/world.md, "Calibration").

The paper's Table 4 is one corpus of 100 scenarios (297 subtasks, 1,118 memories), not a
population value: each of its cells is one draw from what the system would show on a
fresh corpus. So a simulated world is judged by where the paper's value falls in the
world's *predictive distribution* at the paper's corpus size:

* `replicate` runs ``R × corpus`` trajectories once per configuration, every
  configuration on the same trajectories (common random numbers), and splits them into
  ``R`` replicate corpora of ``corpus`` consecutive trajectories (trajectory ``i``'s world
  depends only on ``(seed, scenario, i)``, so the corpora are independent draws). Each
  cell is pooled within a corpus (Σ numerator / Σ denominator, as the paper's table over
  its scenarios is computed).
* `predictive_cells` places every paper value in its cell's replicate distribution: the
  replicates' mean and SD, the 95% t prediction interval for one new corpus
  (`prediction_interval`),
  the paper value's z = (paper − mean) / SD and its predictive quantile (the share of
  replicate corpora below it, ties counted half).
* `objective` is −2 log of a Gaussian predictive likelihood (each cell's SD floored:
  `sd_floor`, 5% of the paper's value for token counts), Σ (z² + log SD²) over the
  fitted cells (``kind="nll"``), or Σ z² (``kind="z2"``).
* `fit` minimises it over a list of knobs (`wmtsim.studies.calibration.calibrate.Knob`) with
  `scipy.optimize.differential_evolution`, on one seed (common random numbers across knob
  settings too), and keeps every evaluation: its knobs, objective and pooled values.
* `held_out` fits on four of Table 4's configurations and predicts the fifth, each in
  turn: is the held-out row inside its predictive intervals?
* `robustness` reports, for each of Table 4's ordering claims, the share of plausible
  worlds in which it holds: the near-optimal calibrations (every evaluated knob set whose
  objective is within the plausible set's threshold of the best, `plausible_threshold`:
  a confidence set at the R used, `wmtsim.studies.calibration.plausible`) and the rule flips
  applied to the best fit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.metrics import compare_metrics, frame_parts
from wmtsim.studies.calibration.calibrate import FIT_METRICS, Knob, _current
from wmtsim.studies.calibration.journal import Evaluation, FitJournal, digest, scenario_digest

if TYPE_CHECKING:
    import polars as pl

    from wmtsim.core.policies import Policy
    from wmtsim.studies.compare.claims import Claim
    from wmtsim.studies.scenarios.scenario import Scenario

CORPUS = 100  # scenarios in the paper's poisoning corpus (Appendix A.3)
CELL_METRICS = compare_metrics("table4")
# The smallest predictive SD a cell is given, so that a cell the world makes (nearly)
# deterministic, e.g. Linear's IP of exactly 1, has a finite z.
SD_FLOOR = {"af": 0.01}
SD_FLOOR_RATE = 0.005
# Token counts get a model-discrepancy SD of 5% of the paper's value: the stubs count
# tokens, they do not tokenise the paper's prompts, so a cell within a few percent is as
# close as the world can claim to be (otherwise the corpus noise of a few tokens would
# make the token cells outweigh every other cell).
REL_SD_FLOOR = {"avg_prompt_tokens": 0.05, "prompt_tokens": 0.05}
OBJECTIVES = ("nll", "z2")


# --- replicate corpora ---------------------------------------------------------------------


@dataclass
class Replicates:
    """Per-corpus cells of every configuration: ``values[policy][metric]`` is an array of
    ``R`` corpus values; ``pooled[policy][metric]`` pools all ``R × corpus`` trajectories."""

    policies: tuple[str, ...]
    corpus: int
    values: dict[str, dict[str, np.ndarray]]
    pooled: dict[str, dict[str, float]]

    @property
    def replicates(self) -> int:
        return len(next(iter(next(iter(self.values.values())).values())))


def corpus_values(frame: pl.DataFrame, metric: str, corpus: int) -> np.ndarray:
    """``metric`` pooled within each block of ``corpus`` consecutive trajectories: Σ
    numerator / Σ denominator of its counters (`wmtsim.core.metrics.frame_parts`; a metric
    without a denominator, such as prompt tokens per task, counts one per trajectory)."""
    num, den = frame_parts(frame, metric)
    r = len(num) // corpus
    if r < 1:
        raise ValueError(f"{len(num)} trajectories cannot make one corpus of {corpus}")
    n = num[: r * corpus].reshape(r, corpus).sum(axis=1)
    d = den[: r * corpus].reshape(r, corpus).sum(axis=1)
    out = np.full(r, np.nan)
    np.divide(n, d, out=out, where=d > 0)
    return out


def replicate(scenario: Scenario, policies: Sequence[str], replicates: int,
              corpus: int = CORPUS, seed: int | None = None,
              metrics: Sequence[str] = CELL_METRICS,
              policy_objects: Mapping[str, Policy] | None = None) -> Replicates:
    """``replicates`` corpora of ``corpus`` trajectories per configuration (module doc).

    ``policy_objects`` replaces a named configuration by a modified `Policy` (a rule
    flip such as "every configuration acts on supersede events").
    """
    from wmtsim.engine.simulation import simulate
    from wmtsim.engine.world import generate

    if replicates < 2 or corpus < 1:
        raise ValueError(f"replicates must be >= 2 and corpus >= 1, got {replicates}, "
                         f"{corpus}")
    seed = scenario.seed if seed is None else seed
    world = generate(scenario.world, seed=seed, n=replicates * corpus)
    values: dict[str, dict[str, np.ndarray]] = {}
    pooled: dict[str, dict[str, float]] = {}
    for p in policies:
        pol = (policy_objects or {}).get(p, p)
        t = simulate(world, pol, params=scenario.params, stubs=scenario.stubs,
                     baselines=scenario.baselines).trajectories
        values[p] = {m: corpus_values(t, m, corpus) for m in metrics}
        pooled[p] = {m: float(corpus_values(t, m, t.height)[0]) for m in metrics}
    return Replicates(tuple(policies), corpus, values, pooled)


# --- the paper's value in its predictive distribution --------------------------------------


def sd_floor(metric: str, paper: float = 0.0) -> float:
    """The smallest SD a cell's predictive distribution is given (see `SD_FLOOR`)."""
    if metric in REL_SD_FLOOR:
        return REL_SD_FLOOR[metric] * abs(paper)
    return SD_FLOOR.get(metric, SD_FLOOR_RATE)


def prediction_interval(mean: float, sd: float, r: int, level: float = 0.95
                        ) -> tuple[float, float]:
    """The t prediction interval for one new corpus from ``r`` replicate corpora:
    mean ± t(1 − (1 − level)/2, r − 1) · sd · √(1 + 1/r).

    The √(1 + 1/r) carries the simulator's own Monte Carlo error (the replicates' mean is
    an estimate); the t quantile, the error of their SD. The replicates' empirical 2.5% and
    97.5% quantiles, used before, cover a new corpus with probability (r − 1)/(r + 1) at
    best (7/9 at r = 8: measured 0.72–0.77); this interval's coverage is measured by
    tests/studies/test_prediction_coverage.py and benchmarks/prediction_coverage.py.
    """
    from scipy import stats

    if r < 2:
        return -math.inf, math.inf
    half = float(stats.t.ppf(1.0 - (1.0 - level) / 2.0, r - 1)) * sd * math.sqrt(1.0 + 1.0 / r)
    return mean - half, mean + half


def predictive_cell(values: np.ndarray, paper: float, metric: str) -> dict[str, float | bool]:
    """Mean, SD (floored: `sd_floor`, which for token counts is the model-discrepancy SD),
    95% prediction interval (`prediction_interval`), z and predictive quantile of one
    cell."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return {"mean": math.nan, "sd": math.nan, "low": math.nan, "high": math.nan,
                "z": math.nan, "quantile": math.nan, "inside": False}
    mean = float(v.mean())
    sd = max(float(v.std(ddof=1)) if v.size > 1 else 0.0, sd_floor(metric, paper),
             1e-12)
    low, high = prediction_interval(mean, sd, v.size)
    quantile = float((np.sum(v < paper) + 0.5 * np.sum(v == paper)) / v.size)
    return {"mean": mean, "sd": sd, "low": low, "high": high, "z": (paper - mean) / sd,
            "quantile": quantile, "inside": bool(low <= paper <= high)}


def predictive_cells(rep: Replicates, table: Mapping[str, Mapping[str, float]],
                     metrics: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One record per (configuration, metric) that both the table and ``rep`` have."""
    cells = []
    for p in rep.policies:
        for m, paper in table.get(p, {}).items():
            if m not in rep.values[p] or (metrics is not None and m not in metrics):
                continue
            cells.append({"policy": p, "metric": m, "paper": paper,
                          "pooled": rep.pooled[p][m],
                          **predictive_cell(rep.values[p][m], paper, m)})
    return cells


def objective(cells: Sequence[Mapping[str, Any]], fit_on: Sequence[str],
              metrics: Sequence[str], kind: str = "nll") -> float:
    """Σ over the fitted cells of z² + log SD² (``nll``) or of z² (``z2``)."""
    if kind not in OBJECTIVES:
        raise ValueError(f"objective {kind!r}; allowed: {', '.join(OBJECTIVES)}")
    total = 0.0
    for c in cells:
        if c["policy"] not in fit_on or c["metric"] not in metrics:
            continue
        z = c["z"]
        if not math.isfinite(z):
            return math.inf
        total += z * z + (2.0 * math.log(c["sd"]) if kind == "nll" else 0.0)
    return total


# --- fitting -------------------------------------------------------------------------------


@dataclass
class Fit:
    scenario: Scenario
    fitted: dict[str, float | int]
    objective: float
    cells: list[dict[str, Any]]
    fit_on: tuple[str, ...]
    metrics: tuple[str, ...]
    knobs: tuple[Knob, ...]
    replicates: int
    corpus: int
    kind: str
    evaluations: list[Evaluation] = field(default_factory=list)
    seconds: float = 0.0


def _evaluate(task: tuple[Any, ...]) -> tuple[float, dict[str, dict[str, float]]]:
    """One evaluation of `fit`'s objective (module level, so a worker process can run it):
    the scenario under ``values``, R replicate corpora at ``seed``, the objective and the
    pooled cells."""
    scenario, table, values, replicates, corpus, seed, fit_on, metrics, kind = task
    rep = replicate(scenario.with_overrides(values), tuple(table), replicates, corpus, seed)
    return objective(predictive_cells(rep, table), fit_on, metrics, kind), rep.pooled


def _worker_threads(workers: int) -> None:
    """Each of ``workers`` processes gets its share of the cores for the engine's own
    parallel loop over trajectories (numba's threads), so they do not oversubscribe."""
    import os

    from numba import get_num_threads, set_num_threads

    set_num_threads(max(1, min(get_num_threads(), (os.cpu_count() or 1) // workers)))


def fit(scenario: Scenario, table: Mapping[str, Mapping[str, float]],
        knobs: Sequence[Knob], fit_on: Sequence[str] | None = None,
        metrics: Sequence[str] = FIT_METRICS, replicates: int = 20, corpus: int = CORPUS,
        seed: int | None = None, maxiter: int = 8, popsize: int = 5, kind: str = "nll",
        polish: int = 0, progress: Callable[[int, float], None] | None = None,
        from_current: bool = True, workers: int = 1, journal: Path | None = None,
        tied: Mapping[str, str] | None = None) -> Fit:
    """Minimise `objective` over ``knobs``.

    Differential evolution (`scipy.optimize.differential_evolution`, seeded; its first
    population a Latin hypercube over the knobs' ranges that also holds the scenario's
    current values unless ``from_current`` is False), then ``polish`` evaluations of
    Powell's method from the best point. Every configuration of ``table`` is simulated
    and the ``fit_on`` rows' ``metrics`` cells are fitted. Every evaluation runs on the
    same seed (common random numbers across candidates), so the fit ranks settings, not
    noise draws.

    The population is evaluated as a batch (``updating="deferred"``), over ``workers``
    processes when above 1; the search is the same for any ``workers``. With ``journal``
    each evaluation is appended to that file as it finishes, and a fit rerun over its
    journal resumes (`wmtsim.studies.calibration.journal.FitJournal`). ``tied`` maps a knob key
    to a fitted one it copies (``poison[2].p_supersede`` ← ``poison[0].p_supersede``), in
    every evaluation.
    """
    from scipy import optimize

    policies = tuple(table)
    fit_on = tuple(fit_on) if fit_on else policies
    for p in fit_on:
        if p not in table:
            raise ValueError(f"fit_on {p!r} is not a row of the table; allowed: "
                             + ", ".join(policies))
    if kind not in OBJECTIVES:
        raise ValueError(f"objective {kind!r}; allowed: {', '.join(OBJECTIVES)}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    knobs = tuple(knobs)
    tied = dict(tied or {})
    for k in knobs:  # validate keys and ranges up front (errors name the key)
        scenario.with_overrides({k.key: k.value(k.low)})
        scenario.with_overrides({k.key: k.value(k.high)})
    seed = scenario.seed if seed is None else seed
    t0 = time.perf_counter()
    evaluations: list[Evaluation] = []
    cache: dict[tuple[float | int, ...], float] = {}
    log = None
    if journal is not None:
        fingerprint = {"knobs": [[k.key, k.low, k.high, k.integer] for k in knobs],
                       "fit_on": list(fit_on), "metrics": list(metrics),
                       "replicates": replicates, "corpus": corpus, "seed": seed,
                       "maxiter": maxiter, "popsize": popsize, "kind": kind,
                       "polish": polish, "from_current": from_current, "tied": tied,
                       "scenario": scenario_digest(scenario), "table": digest(table)}
        log = FitJournal(Path(journal), fingerprint)
        for row in log.rows:
            e = FitJournal.evaluation(row)
            cache[tuple(e.knobs.values())] = e.objective
            evaluations.append(e)

    def decode(x: np.ndarray) -> dict[str, float | int]:
        values = {k.key: k.value(float(v)) for k, v in zip(knobs, x, strict=True)}
        return {**values, **{a: values[b] for a, b in tied.items() if b in values}}

    def record(values: dict[str, float | int], val: float,
               pooled: dict[str, dict[str, float]]) -> None:
        cache[tuple(values.values())] = val
        e = Evaluation(values, val, pooled)
        evaluations.append(e)
        if log is not None:
            log.append(e)
        if progress is not None:
            progress(len(evaluations), min(e.objective for e in evaluations))

    def task(values: dict[str, float | int]) -> tuple[Any, ...]:
        return (scenario, table, values, replicates, corpus, seed, fit_on, tuple(metrics),
                kind)

    pool = None
    if workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_threads, initargs=(workers,))

    def batch(_func: Any, xs: Any) -> list[float]:
        """Differential evolution's map: every point of a generation, the ones not in the
        cache evaluated (in parallel with ``workers``), recorded in proposal order."""
        points = [decode(np.asarray(x)) for x in xs]
        todo: dict[tuple[float | int, ...], dict[str, float | int]] = {}
        for v in points:
            key = tuple(v.values())
            if key not in cache:
                todo.setdefault(key, v)
        tasks = [task(v) for v in todo.values()]
        results = (list(pool.map(_evaluate, tasks)) if pool is not None
                   else [_evaluate(t) for t in tasks])
        for v, (val, pooled) in zip(todo.values(), results, strict=True):
            record(v, val, pooled)
        return [cache[tuple(v.values())] for v in points]

    def one(x: np.ndarray) -> float:
        return batch(None, [x])[0]

    bounds = [(k.low, k.high) for k in knobs]
    x0 = np.clip([_current(scenario, k) for k in knobs], [b[0] for b in bounds],
                 [b[1] for b in bounds])
    try:
        res = optimize.differential_evolution(one, bounds, maxiter=maxiter, popsize=popsize,
                                              seed=seed, polish=False, tol=1e-8,
                                              x0=x0 if from_current else None,
                                              updating="deferred", workers=batch)
        if polish > 0:
            optimize.minimize(one, res.x, method="Powell", bounds=bounds,
                              options={"maxfev": polish, "xtol": 1e-3, "ftol": 1e-4})
    finally:
        if pool is not None:
            pool.shutdown()
    best = min(evaluations, key=lambda e: e.objective)
    fitted_scenario = scenario.with_overrides(best.knobs)  # type: ignore[arg-type]
    rep = replicate(fitted_scenario, policies, replicates, corpus, seed)
    cells = predictive_cells(rep, table)
    for c in cells:
        c["fitted"] = c["policy"] in fit_on and c["metric"] in metrics
    return Fit(fitted_scenario, best.knobs, best.objective, cells, fit_on, tuple(metrics),
               knobs, replicates, corpus, kind, evaluations, time.perf_counter() - t0)


def plausible_threshold(result: Fit, level: float = 0.95) -> tuple[float, float]:
    """The objective threshold of the plausible set and the misfit's dispersion φ: a
    confidence set at the replicate count the fit used, the LR statistic's quantile over
    φ calibrated for the C fitted cells, k knobs and R replicates
    (`wmtsim.studies.calibration.plausible.plausible_threshold`; χ²(level, k) · φ treated the cells'
    variances as known and covered 0.71 at R = 8). Returns (threshold, φ)."""
    from wmtsim.studies.calibration.plausible import plausible_threshold as at_r

    return at_r(result.cells, len(result.knobs), result.replicates, level)


def inside_share(cells: Sequence[Mapping[str, Any]], fitted_only: bool = True) -> float:
    """Share of cells whose paper value is inside the 95% predictive interval."""
    use = [c for c in cells if c.get("fitted", True) or not fitted_only]
    return sum(bool(c["inside"]) for c in use) / len(use) if use else math.nan


def held_out(scenario: Scenario, table: Mapping[str, Mapping[str, float]],
             knobs: Sequence[Knob], rows: Sequence[str] | None = None,
             fresh_seed: int | None = None, fresh_replicates: int = 20,
             **fit_kwargs: Any) -> list[dict[str, Any]]:
    """Fit on every row but one, predict that one, each row in turn.

    Each fit starts from the scenario's own values (never from a fit that saw the held-out
    row). One record per held-out row: the fit's objective on the other rows, the fitted
    knobs and the held-out row's predictive cells (``inside``: the paper value lies in the
    95% predictive interval). With ``fresh_seed`` the prediction is made afresh, at that
    seed and ``fresh_replicates`` corpora, not on the seed the fit was selected on.
    """
    out = []
    for p in rows or tuple(table):
        others = tuple(q for q in table if q != p)
        r = fit(scenario, table, knobs, fit_on=others, **fit_kwargs)
        cells = r.cells
        if fresh_seed is not None:
            rep = replicate(r.scenario, tuple(table), fresh_replicates, r.corpus, fresh_seed)
            cells = predictive_cells(rep, table)
        cells = [c for c in cells if c["policy"] == p]
        out.append({"held_out": p, "objective": r.objective, "fitted": r.fitted,
                    "cells": cells, "seconds": r.seconds, "evaluations": len(r.evaluations),
                    "seed": fresh_seed if fresh_seed is not None else r.scenario.seed,
                    "inside": sum(bool(c["inside"]) for c in cells
                                  if c["metric"] in r.metrics),
                    "of": sum(c["metric"] in r.metrics for c in cells)})
    return out


# --- claims over plausible worlds ----------------------------------------------------------


def claim_holds(claim: Claim, pooled: Mapping[str, Mapping[str, float]]) -> bool:
    """The claim's ordering on pooled values: the subject strictly beyond every other."""
    x = pooled[claim.subject][claim.metric]
    return all(claim.favour * (x - pooled[o][claim.metric]) > 0 for o in claim.others)


def near_optimal(result: Fit, threshold: float | None = None) -> list[Evaluation]:
    """Evaluations within ``threshold`` of the best objective (default: the 95% point of
    χ² with one degree of freedom per knob, the likelihood-ratio region of the fit)."""
    from scipy import stats

    if threshold is None:
        threshold = float(stats.chi2.ppf(0.95, len(result.knobs)))
    return [e for e in result.evaluations if e.objective <= result.objective + threshold]


def robustness(result: Fit, flips: Sequence[tuple[str, dict[str, Any],
                                                  Mapping[str, Policy] | None]] = (),
               claims: Sequence[Claim] | None = None,
               threshold: float | None = None, fresh_seed: int | None = None,
               cap: int = 200) -> list[dict[str, Any]]:
    """Per claim: the share of near-optimal calibrations and of rule flips (each applied
    to the best fit, on the same replicates) in which it holds.

    With ``fresh_seed`` every world is simulated afresh at that seed (the near-optimal
    set was chosen on the fit's seed, whose noise flatters it), at most ``cap`` of the
    near-optimal calibrations, spread evenly over their objective ranks.
    """
    from wmtsim.studies.compare.claims import table4_claims

    claims = tuple(claims or table4_claims())
    worlds = sorted(near_optimal(result, threshold), key=lambda e: e.objective)
    in_set = len(worlds)
    policies = tuple(result.evaluations[0].pooled) if result.evaluations else ()
    if fresh_seed is not None:
        if len(worlds) > cap:
            worlds = [worlds[round(i * (len(worlds) - 1) / (cap - 1))] for i in range(cap)]
        worlds = [Evaluation(e.knobs, e.objective, replicate(
            result.scenario.with_overrides(dict(e.knobs)), policies, result.replicates,
            result.corpus, fresh_seed).pooled) for e in worlds]
    best = (replicate(result.scenario, policies, result.replicates, result.corpus,
                      fresh_seed).pooled if fresh_seed is not None
            else min(result.evaluations, key=lambda e: e.objective).pooled)
    flipped = []
    for label, overrides, policy_objects in flips:
        rep = replicate(result.scenario.with_overrides(overrides), policies,
                        result.replicates, result.corpus, fresh_seed,
                        policy_objects=policy_objects)
        flipped.append((label, rep.pooled))
    rows = []
    for c in claims:
        near = [claim_holds(c, e.pooled) for e in worlds]
        fl = [claim_holds(c, pooled) for _, pooled in flipped]
        every = near + fl
        rows.append({"claim": c.label, "metric": c.metric, "subject": c.subject,
                     "best_fit": claim_holds(c, best),
                     "near_optimal": sum(near) / len(near) if near else math.nan,
                     "n_near_optimal": len(near), "n_in_set": in_set,
                     "flips": sum(fl) / len(fl) if fl else math.nan, "n_flips": len(fl),
                     "failing_flips": [lb for (lb, _), ok in zip(flipped, fl, strict=True)
                                       if not ok],
                     "share": sum(every) / len(every) if every else math.nan,
                     "seed": fresh_seed if fresh_seed is not None else result.scenario.seed})
    return rows
