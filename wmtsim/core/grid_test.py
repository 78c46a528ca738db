"""The grid test: is every setting of a grid the same? (docs/statistics.md, "grid_test").

A paired global test over a grid of settings evaluated on common random numbers: the
max-t statistic of the contrasts against the grid's mean, its null distribution from a
studentised bootstrap of trajectories (whole columns, so the pairing is kept).
`wmtsim.studies.sweeps.flatness` reads it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from wmtsim.core.inference import ALPHA, resamples_for


def _studentised_max(w: np.ndarray, c: np.ndarray, d: np.ndarray, se: np.ndarray
                     ) -> np.ndarray:
    """max_i |d*_i − d_i| / se*_i of each bootstrap resample (rows of the weights ``w``,
    (m, n), summing to 1) of the contrasts ``c`` (k, n), se*_i the resample's own
    standard error: studentised inside the bootstrap, so the null distribution carries
    the spread of the standard error as well (with se held at the sample's, the test's
    size at n = 50 was 0.07-0.15). A resample in which a contrast has no spread
    (sparse contrasts: it drew none of the trajectories that differ) says nothing about
    its spread, and is scaled by the sample's ``se`` instead; a contrast without spread
    in the sample either has |d*_i − d_i| = 0 and adds 0."""
    n = c.shape[1]
    mean = w @ c.T  # (m, k)
    var = np.maximum(w @ (c * c).T - mean * mean, 0.0) * n / (n - 1)
    scale = np.sqrt(var / n)
    scale = np.where(scale > 0, scale, se)
    dev = np.abs(mean - d)
    t = np.where(scale > 0, dev / np.where(scale > 0, scale, 1.0), 0.0)
    return np.asarray(np.max(t, axis=1))


def _max_t(x: np.ndarray) -> np.ndarray:
    """max_i |d_i| / se_i of each stack of grids ``x`` (m, k, n): d_i the mean over
    trajectories of point i's contrasts x_it − mean_j x_jt, se_i their sd / √n; a
    contrast without spread adds 0 when it does not move, inf when it does."""
    n = x.shape[2]
    c = x - x.mean(axis=1, keepdims=True)
    d = c.mean(axis=2)
    se = c.std(axis=2, ddof=1) / math.sqrt(n)
    moves = np.abs(d) > 1e-12 * max(1.0, float(np.abs(x).max()))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(se > 0, np.abs(d) / np.where(se > 0, se, 1.0),
                     np.where(moves, math.inf, 0.0))
    return np.asarray(t.max(axis=1))


def grid_test(values: np.ndarray, alpha: float = ALPHA, n_resamples: int | None = None,
              seed: int = 0) -> dict[str, Any]:
    """Does the mean differ across ``k`` points measured on the same ``n`` trajectories
    (common random numbers)? ``values`` (k, n): point i's value on trajectory t, the
    columns paired (trajectory t of every point shares its random numbers).

    The paired global test of H0 "every point has the same mean" (docs/statistics.md,
    "Flat means flat"): each point's deviation from the grand mean, d_i = m_i − m̄, is the
    mean of its per-trajectory contrasts c_it = x_it − mean_j x_jt, so the common part of
    every trajectory cancels, as in a paired test; its standard error is
    se_i = sd_t(c_it) / √n. The statistic is T = max_i |d_i| / se_i, and its null
    distribution is a bootstrap over trajectories (whole columns, so the pairing is kept)
    of max_i |d*_i − d_i| / se*_i, studentised by each resample's own standard error
    (`_studentised_max`; a max-t test: it controls the error over all k deviations at
    once); p = (1 + #{T* ≥ T}) / (B + 1), B = `resamples_for` ``alpha``.
    Trajectories with a non-finite value at some point are left out.

    **Binary outcomes** (every value 0 or 1, e.g. a task's success) go through the same
    bootstrap, which is conservative for them (on common random numbers most trajectories
    agree at every point, the contrasts are sparse; size near 0 at k = 25, n = 50). A
    within-trajectory permutation test was tried and not kept: it tests exchangeability of
    each trajectory's outcomes over the points, which common random numbers break for
    differences too small to matter (on rho_m_grid it called 1 against 3 successes of 400
    significant), not the equality of the means asked here.

    Returns ``p``, ``statistic`` (T), ``critical`` (the 1 − alpha quantile of T*: a
    point deviates significantly when |d_i| / se_i exceeds it), ``points``, ``n``,
    ``deviating`` (points beyond ``critical``), ``largest`` (index of the point with the
    largest |d_i| / se_i), ``means`` (m_i), ``se``, ``resamples`` and ``test``.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"values: expected (points, trajectories), got shape {x.shape}")
    x = x[:, np.all(np.isfinite(x), axis=0)]
    k, n = x.shape
    b = max(n_resamples or 0, resamples_for(alpha))
    out: dict[str, Any] = {"p": math.nan, "statistic": math.nan, "critical": math.nan,
                           "points": k, "n": n, "deviating": 0, "largest": -1,
                           "means": x.mean(axis=1) if n else np.full(k, math.nan),
                           "se": np.full(k, math.nan), "resamples": 0,
                           "test": f"paired max-t bootstrap ({b} resamples)"}
    if k < 2 or n < 2:
        return out
    c = x - x.mean(axis=0)  # per-trajectory contrasts: the common part cancels
    d = c.mean(axis=1)
    se = c.std(axis=1, ddof=1) / math.sqrt(n)
    scale = np.where(se > 0, se, np.inf)  # a contrast without spread: exact, below
    exact = (se == 0) & (np.abs(d) > 1e-12 * max(1.0, float(np.abs(x).max())))
    t_obs = math.inf if exact.any() else float(np.max(np.abs(d) / scale))
    rng = np.random.default_rng([seed, k, n, 21])
    t_star = np.empty(b)
    step = max(1, 4_000_000 // max(k, n))
    for start in range(0, b, step):
        m = min(step, b - start)
        idx = rng.integers(0, n, size=(m, n)) + n * np.arange(m)[:, None]
        w = np.bincount(idx.ravel(), minlength=m * n).reshape(m, n) / n  # weights
        t_star[start:start + m] = _studentised_max(w, c, d, se)
    crit = float(np.quantile(t_star, 1 - alpha))
    z = np.where(exact, math.inf, np.abs(d) / scale)
    out.update(p=float((1 + np.sum(t_star >= t_obs)) / (b + 1)), statistic=t_obs,
               critical=crit, deviating=int(np.sum(z > crit)), largest=int(np.argmax(z)),
               se=se, resamples=b)
    return out
