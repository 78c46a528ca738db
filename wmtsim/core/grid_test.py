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

from wmtsim.core.inference import ALPHA, adjust, resamples_for


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


def within_rounding(values: np.ndarray, scale: np.ndarray | None = None
                    ) -> tuple[np.ndarray, float]:
    """``values`` with every entry within rounding of 0 set to 0, and that tolerance:
    1e-12 · max(1, max |scale|) (``scale``: the values the differences come from; default
    ``values``). Studentised by its own rounding-sized spread, a rounding-sized difference
    would be called significant (two grid points 3e-14 apart gave p = 0.047, a Morris knob
    whose every effect was 1e-13 p = 0.01); beyond the tolerance a difference is real, and
    one without spread is an exact effect."""
    ref = values if scale is None else scale
    tol = 1e-12 * max(1.0, float(np.abs(ref).max()) if ref.size else 1.0)
    return np.where(np.abs(values) > tol, values, 0.0), tol


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

    **Binary outcomes** (every value 0 or 1, e.g. a task's success) go to `binary_test`
    instead (exact: Cochran's Q by within-trajectory permutation, guarded by the exact
    McNemar test of the most different pair); the bootstrap is conservative for them
    (size 0 of 2,000 at k = 25, n = 50: on common random numbers the contrasts are sparse).

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
    if np.all((x == 0) | (x == 1)):
        return binary_test(x, alpha, n_resamples, seed)
    # per-trajectory contrasts (the common part cancels); points equal on a trajectory
    # leave a residue of a few ulps, zeroed with the scale of the values themselves
    c, tol = within_rounding(x - x.mean(axis=0), scale=x)
    d = c.mean(axis=1)
    se = c.std(axis=1, ddof=1) / math.sqrt(n)
    scale = np.where(se > 0, se, np.inf)  # a contrast without spread: exact, below
    exact = (se == 0) & (np.abs(d) > tol)
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


def mcnemar_midp(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Two-sided exact McNemar mid-p of b against c discordant trajectories (b: 1 at the
    first point and 0 at the second; c the reverse): under "the two points have the same
    mean", b ~ Binomial(b + c, 1/2) given b + c, whatever else the trajectories share (for
    0/1 outcomes equal means is P(1, 0) = P(0, 1)); mid-p = 2 (P(X < m) + P(X = m) / 2),
    m = min(b, c), capped at 1 (Lancaster 1961); 1 when no trajectory is discordant."""
    from scipy import stats

    b, c = np.asarray(b), np.asarray(c)
    m, total = np.minimum(b, c), b + c
    p = 2 * (stats.binom.cdf(m - 1, total, 0.5) + 0.5 * stats.binom.pmf(m, total, 0.5))
    return np.asarray(np.where(total > 0, np.minimum(p, 1.0), 1.0))


def binary_test(x: np.ndarray, alpha: float = ALPHA, n_resamples: int | None = None,
                seed: int = 0) -> dict[str, Any]:
    """`grid_test` for 0/1 outcomes (``x`` (k, n), paired columns, every value 0 or 1):
    p = max(p_Q, p_pair) (docs/statistics.md, "grid_test on binary outcomes").

    * p_Q: Cochran's Q (Cochran 1950), Q = (k − 1)(k Σ_j C_j² − N²) / (k N − Σ_t R_t²)
      with C_j the successes at point j, R_t those of trajectory t and N their total,
      referred to its exact conditional distribution: each trajectory's outcomes
      shuffled over the points (B = `resamples_for` ``alpha`` random shuffles; R_t, N and
      so the denominator fixed), mid-p = (#{Q* > Q} + (#{Q* = Q} + 1) / 2) / (B + 1).
      Exact when each trajectory's outcomes are exchangeable over the points, which is
      stronger than equal means;
    * p_pair: the smallest two-sided exact McNemar mid-p (`mcnemar_midp`) over the
      k(k − 1)/2 pairs of points. Equal means for a pair is exactly what McNemar tests
      (no exchangeability needed), so a grid is never called different unless some pair
      differs on its own discordant trajectories: on common random numbers a knob that
      turns a few trajectories' outcomes at neighbouring settings makes their shuffles
      look aligned (p_Q small) on evidence no pair supports (``rho_m_grid``'s TSR: 2
      discordant trajectories of 400, p_Q = 0.001, p_pair = 0.5).

    The max of two p-values rejects only when both do, so its size is at most p_Q's
    where the shuffle is exact (both are returned: ``p_shuffle``, ``p_pair``).
    ``statistic`` is Q, ``critical`` the 1 − alpha quantile of Q*, ``deviating`` the
    points of the pairs whose McNemar mid-p is significant after Holm over the pairs (0
    when p > alpha), ``se`` the contrasts' as in `grid_test`.
    """
    k, n = x.shape
    b_count = max(n_resamples or 0, resamples_for(alpha))
    xi = x.astype(np.int64)
    c = x - x.mean(axis=0)
    means = x.mean(axis=1)
    out: dict[str, Any] = {"points": k, "n": n, "means": means, "resamples": b_count,
                           "se": c.std(axis=1, ddof=1) / math.sqrt(n),
                           "largest": int(np.argmax(np.abs(means - means.mean()))),
                           "test": f"binary: Cochran's Q by within-trajectory shuffles "
                                   f"({b_count}), exact McNemar of the most different pair"}
    rows = xi.sum(axis=0)
    total = int(rows.sum())
    denom = k * total - int(np.sum(rows * rows))
    if denom == 0:  # every trajectory the same at every point: nothing differs
        return {**out, "p": 1.0, "p_shuffle": 1.0, "p_pair": 1.0, "statistic": 0.0,
                "critical": 0.0, "deviating": 0}

    def q_of(cols: np.ndarray) -> np.ndarray:
        return np.asarray((k - 1) * (k * np.sum(cols * cols, axis=-1) - total**2) / denom)

    cols = xi.sum(axis=1)
    q_obs = float(q_of(cols))
    mixed = xi[:, (rows > 0) & (rows < k)].T  # (D, k): only these shuffle to anything new
    fixed = cols - mixed.sum(axis=0)
    rng = np.random.default_rng([seed, k, n, 49])
    q_star = np.empty(b_count)
    step = max(1, 4_000_000 // max(1, mixed.size))
    for start in range(0, b_count, step):
        m = min(step, b_count - start)
        order = np.argsort(rng.random((m, *mixed.shape)), axis=2)
        shuffled = np.take_along_axis(np.broadcast_to(mixed, (m, *mixed.shape)), order, 2)
        q_star[start:start + m] = q_of(shuffled.sum(axis=1) + fixed)
    tol = 1e-9 * max(1.0, abs(q_obs))
    above, tied = np.sum(q_star > q_obs + tol), np.sum(np.abs(q_star - q_obs) <= tol)
    p_q = float((above + (tied + 1) / 2) / (b_count + 1))
    disc = xi @ (1 - xi).T  # disc[i, j]: trajectories with 1 at i and 0 at j
    iu = np.triu_indices(k, 1)
    p_pairs = mcnemar_midp(disc[iu], disc.T[iu])
    p = max(p_q, float(p_pairs.min()))
    held = adjust(p_pairs, "holm") <= alpha if p <= alpha else np.zeros(p_pairs.size, bool)
    deviating = len(set(iu[0][held]) | set(iu[1][held]))
    return {**out, "p": p, "p_shuffle": p_q, "p_pair": float(p_pairs.min()),
            "statistic": q_obs, "critical": float(np.quantile(q_star, 1 - alpha)),
            "deviating": deviating}
