"""The one bootstrap: percentile intervals over trajectories, for every module that
reports an interval (`wmtsim.engine.simulation`'s summaries and paired differences, sweep
point means in `wmtsim.studies.sweeps.analysis`, claims maps, mechanism attribution).

Trajectories are resampled with replacement by index matrices drawn from numpy's default
generator (`resample_indices`); a `Resampler` keeps one matrix per sample size, drawn
from the seed ``[seed, n]``, so every series of that size is resampled the same way
(comparisons stay paired). `mean_ci` is scipy's percentile bootstrap of the mean (its
numbers, without importing scipy); `pooled_ci` resamples a ratio's numerator and
denominator together; `paired_bootstrap` resamples the rows of a matrix with shared
indices.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    return mean_cis([x], confidence, n_resamples, seed)[0]


def _draws(seed: int, size: int, n_resamples: int) -> np.ndarray:
    """The ``(n_resamples, size)`` indices `mean_ci` and `pooled_ci` resample with: both
    draw them first from ``default_rng(seed)``, so the two share them."""
    return resample_indices(np.random.default_rng(seed), size, n_resamples)


class _Draws:
    """`_draws`, kept for the last (seed, size) asked: callers that ask in order of
    (seed, size) draw each matrix once and hold one at a time (a matrix of a large
    sample is big)."""

    def __init__(self, n_resamples: int) -> None:
        self.n_resamples = n_resamples
        self._key: tuple[int, int] | None = None
        self._value = np.empty((0, 0), dtype=np.int64)

    def __call__(self, seed: int, size: int) -> np.ndarray:
        if self._key != (seed, size):
            self._key, self._value = (seed, size), _draws(seed, size, self.n_resamples)
        return self._value


def _type7(theta: np.ndarray, confidence: float) -> tuple[float, float]:
    """The two-sided percentile interval of the sorted ``theta`` as
    ``scipy.stats.quantile`` computes it (type 7)."""
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
    return float(low), float(high)


def mean_cis(xs: Sequence[np.ndarray], confidence: float = 0.95, n_resamples: int = 2000,
             seed: int | Sequence[int] = 0) -> list[dict[str, float]]:
    """`mean_ci` of each of ``xs`` (``seed``: one for all, or one each), the same numbers
    to the bit, with the resampling indices drawn once per (seed, number of finite values)
    instead of once per series: a run's summary (70 intervals) was mostly these draws."""
    seeds = [seed] * len(xs) if isinstance(seed, int) else list(seed)
    out: list[dict[str, float]] = [{} for _ in xs]
    todo = []
    for k, x in enumerate(xs):
        x = x[np.isfinite(x)]
        if x.size == 0:
            out[k] = {"mean": float("nan"), "low": float("nan"), "high": float("nan"),
                      "n": 0}
            continue
        mean = float(x.mean())
        if x.size < 2 or np.all(x == x[0]):
            out[k] = {"mean": mean, "low": mean, "high": mean, "n": int(x.size)}
            continue
        todo.append((seeds[k], x.size, k, x, mean))
    draws = _Draws(n_resamples)
    for s, size, k, x, mean in sorted(todo, key=lambda t: t[:3]):
        i = draws(s, size)  # each row one resample
        theta = np.sort(np.mean(x[..., i], axis=-1))
        low, high = _type7(theta, confidence)
        out[k] = {"mean": mean, "low": low, "high": high, "n": int(x.size)}
    return out


def pooled_ci(num: np.ndarray, den: np.ndarray, confidence: float = 0.95,
              n_resamples: int = 2000, seed: int = 0) -> dict[str, float]:
    """Σ num / Σ den over trajectories with a percentile-bootstrap interval (trajectories
    resampled, numerator and denominator together)."""
    return pooled_cis([(num, den)], confidence, n_resamples, seed)[0]


def pooled_cis(parts: Sequence[tuple[np.ndarray, np.ndarray]], confidence: float = 0.95,
               n_resamples: int = 2000, seed: int | Sequence[int] = 0
               ) -> list[dict[str, float]]:
    """`pooled_ci` of each ``(num, den)`` of ``parts`` (``seed``: one for all, or one
    each), the same numbers to the bit, the resampling indices drawn once per (seed, size)
    (they are `mean_ci`'s too)."""
    seeds = [seed] * len(parts) if isinstance(seed, int) else list(seed)
    out: list[dict[str, float]] = [{} for _ in parts]
    todo = []
    for k, (num, den) in enumerate(parts):
        total = float(den.sum())
        if total <= 0:
            out[k] = {"pooled": float("nan"), "pooled_low": float("nan"),
                      "pooled_high": float("nan")}
            continue
        value = float(num.sum()) / total
        if num.size < 2:
            out[k] = {"pooled": value, "pooled_low": value, "pooled_high": value}
            continue
        todo.append((seeds[k], num.size, k, num, den, value))
    draws = _Draws(n_resamples)
    alpha = (1.0 - confidence) / 2.0
    for s, size, k, num, den, value in sorted(todo, key=lambda t: t[:3]):
        idx = draws(s, size)
        sums_den = den[idx].sum(axis=1)
        ok = sums_den > 0
        stat = num[idx].sum(axis=1)[ok] / sums_den[ok]
        out[k] = {"pooled": value, "pooled_low": float(np.quantile(stat, alpha)),
                  "pooled_high": float(np.quantile(stat, 1.0 - alpha))}
    return out


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
