"""The one bootstrap: percentile intervals over trajectories, for every module that
reports an interval (`wmtsim.engine.simulation`'s summaries and paired differences, sweep
point means in `wmtsim.studies.analysis`, claims maps, mechanism attribution).

Trajectories are resampled with replacement by index matrices drawn from numpy's default
generator (`resample_indices`); a `Resampler` keeps one matrix per sample size, drawn
from the seed ``[seed, n]``, so every series of that size is resampled the same way
(comparisons stay paired). `mean_ci` is scipy's percentile bootstrap of the mean (its
numbers, without importing scipy); `pooled_ci` resamples a ratio's numerator and
denominator together; `paired_bootstrap` resamples the rows of a matrix with shared
indices.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def resample_indices(rng: np.random.Generator, n: int, n_resamples: int,
                     dtype: Any = np.int64) -> np.ndarray:
    """``(n_resamples, n)`` trajectory indices drawn with replacement."""
    return rng.integers(0, n, size=(n_resamples, n), dtype=dtype)


class Resampler:
    """Bootstrap index matrices, one per sample size, drawn from ``[seed, n]`` and shared
    by every series of that size."""

    def __init__(self, n_resamples: int, seed: int, dtype: Any = np.int64) -> None:
        self.n_resamples, self.seed, self.dtype = n_resamples, seed, dtype
        self._cache: dict[int, np.ndarray] = {}

    def means(self, x: np.ndarray) -> np.ndarray:
        """The mean of every resample of ``x``."""
        n = x.size
        if n not in self._cache:
            rng = np.random.default_rng([self.seed, n])
            self._cache[n] = resample_indices(rng, n, self.n_resamples, self.dtype)
        return np.asarray(x[self._cache[n]].mean(axis=1))


def mean_ci(x: np.ndarray, confidence: float = 0.95, n_resamples: int = 2000,
            seed: int = 0) -> dict[str, float]:
    """Mean and percentile-bootstrap interval of the finite values of ``x``.

    The same numbers as ``scipy.stats.bootstrap((x,), np.mean, method="percentile",
    vectorized=True, rng=np.random.default_rng(seed))``, to the bit (the resampling
    draws, then scipy's ``quantile`` with its default ``linear`` method, Hyndman & Fan's
    type 7), written out so that a run's summary does not import scipy.stats (~1 s of a
    warm ``wmtsim run``); tests/core/test_bootstrap.py holds it to scipy's result.
    """
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"mean": float("nan"), "low": float("nan"), "high": float("nan"), "n": 0}
    mean = float(x.mean())
    if x.size < 2 or np.all(x == x[0]):
        return {"mean": mean, "low": mean, "high": mean, "n": int(x.size)}
    rng = np.random.default_rng(seed)
    i = rng.integers(0, x.size, (n_resamples, x.size))  # each row one resample
    theta = np.sort(np.mean(x[..., i], axis=-1))
    alpha = (1 - confidence) / 2
    p = np.array([alpha, 1 - alpha])
    # Type 7 quantiles as scipy.stats.quantile computes them: j = floor(p·n + 1 − p) − 1,
    # g its fractional part, q = (1 − g)·θ_(j) + g·θ_(j+1), indices clipped to the sample.
    jg = p * theta.size + (1 - p)
    jp1 = jg // 1
    j = jp1 - 1
    g = jg % 1
    g[j < 0] = 0
    j = np.clip(j, 0.0, theta.size - 1).astype(np.int64)
    jp1 = np.clip(jp1, 0.0, theta.size - 1).astype(np.int64)
    low, high = (1 - g) * theta[j] + g * theta[jp1]
    return {"mean": mean, "low": float(low), "high": float(high), "n": int(x.size)}


def pooled_ci(num: np.ndarray, den: np.ndarray, confidence: float = 0.95,
              n_resamples: int = 2000, seed: int = 0) -> dict[str, float]:
    """Σ num / Σ den over trajectories with a percentile-bootstrap interval (trajectories
    resampled, numerator and denominator together)."""
    total = float(den.sum())
    if total <= 0:
        return {"pooled": float("nan"), "pooled_low": float("nan"),
                "pooled_high": float("nan")}
    value = float(num.sum()) / total
    if num.size < 2:
        return {"pooled": value, "pooled_low": value, "pooled_high": value}
    idx = resample_indices(np.random.default_rng(seed), num.size, n_resamples)
    sums_den = den[idx].sum(axis=1)
    ok = sums_den > 0
    stat = num[idx].sum(axis=1)[ok] / sums_den[ok]
    alpha = (1.0 - confidence) / 2.0
    return {"pooled": value, "pooled_low": float(np.quantile(stat, alpha)),
            "pooled_high": float(np.quantile(stat, 1.0 - alpha))}


def mean_interval(x: np.ndarray, confidence: float, rs: Resampler
                  ) -> tuple[float, float, float, int]:
    """(mean, low, high, n) of the finite values of ``x``, resampled by ``rs``."""
    x = x[np.isfinite(x)]
    if x.size == 0:
        return float("nan"), float("nan"), float("nan"), 0
    mean = float(x.mean())
    if x.size < 2:
        return mean, mean, mean, int(x.size)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(rs.means(x), [alpha, 1.0 - alpha])
    return mean, float(lo), float(hi), int(x.size)


def paired_bootstrap(rows: np.ndarray, n_resamples: int, alpha: float,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals of each row's mean, every row resampled with the same
    trajectory indices (paired); chunks keep the index matrix small."""
    k, n = rows.shape
    if n == 0:
        return np.full(k, np.nan), np.full(k, np.nan)
    means = np.empty((n_resamples, k))
    step = max(1, 2_000_000 // n)
    for start in range(0, n_resamples, step):
        b = min(step, n_resamples - start)
        idx = resample_indices(rng, n, b)
        for j in range(k):
            means[start:start + b, j] = rows[j][idx].mean(axis=1)
    return (np.quantile(means, alpha / 2, axis=0),
            np.quantile(means, 1 - alpha / 2, axis=0))
