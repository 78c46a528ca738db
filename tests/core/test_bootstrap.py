"""`mean_ci` gives scipy's percentile bootstrap to the bit, without importing scipy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from wmtsim.core.bootstrap import mean_ci, mean_cis, pooled_ci, pooled_cis


@pytest.mark.parametrize("case", range(60))
def test_mean_ci_is_scipys_percentile_bootstrap(case: int) -> None:
    r = np.random.default_rng(case)
    n = int(r.integers(2, 400))
    x = [r.random(n), (r.random(n) < 0.2).astype(float),
         r.integers(0, 40, n).astype(float)][case % 3]
    if case % 7 == 0:
        x[: n // 5] = np.nan  # non-finite values are dropped first
    confidence = (0.95, 0.9, 0.99, 0.5)[case % 4]
    n_resamples = (2000, 999, 10, 3)[case % 4]
    got = mean_ci(x, confidence, n_resamples, seed=case)
    xf = x[np.isfinite(x)]
    want = stats.bootstrap((xf,), np.mean, confidence_level=confidence,
                           n_resamples=n_resamples, method="percentile",
                           rng=np.random.default_rng(case), vectorized=True)
    assert got["low"] == float(want.confidence_interval.low)
    assert got["high"] == float(want.confidence_interval.high)
    assert got["mean"] == float(xf.mean()) and got["n"] == xf.size


def test_mean_ci_at_confidence_one_is_the_range_of_the_resample_means() -> None:
    """At confidence 1 the type-7 quantiles are at p = 0 and p = 1: the first and the last
    of the sorted resample means (at p = 1, j + 1 = n must be clipped to the last index,
    n − 1). For x = (0, 1, 3, 7) the resample means lie in [0, 7], reached by the resamples
    of four 0s and of four 7s, each 4^−4 = 1/256 likely, so 2,000 resamples miss one of
    them with chance ≈ 2 · (255/256)^2000 ≈ 8e-4 (seed 0 draws both): [0, 7], as scipy."""
    x = np.array([0.0, 1.0, 3.0, 7.0])
    got = mean_ci(x, confidence=1.0, n_resamples=2000, seed=0)
    assert (got["low"], got["high"]) == (0.0, 7.0)
    want = stats.bootstrap((x,), np.mean, confidence_level=1.0, n_resamples=2000,
                           method="percentile", rng=np.random.default_rng(0),
                           vectorized=True)
    assert (got["low"], got["high"]) == (float(want.confidence_interval.low),
                                         float(want.confidence_interval.high))


def test_degenerate_samples() -> None:
    assert mean_ci(np.array([np.nan]))["n"] == 0
    assert mean_ci(np.array([0.5, 0.5])) == {"mean": 0.5, "low": 0.5, "high": 0.5, "n": 2}


def test_mean_ci_imports_no_scipy() -> None:
    code = ("import sys, numpy as np\nfrom wmtsim.core.bootstrap import mean_ci\n"
            "mean_ci(np.arange(10.0))\nassert 'scipy' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr


def test_batched_intervals_are_each_series_own() -> None:
    """`mean_cis` and `pooled_cis` draw each resampling matrix once per (seed, size) for
    a whole batch (a run's summary): every interval must still be the one its series
    gets alone from scipy (means) or from its own draws (pooled), to the bit, whatever
    the order of sizes and seeds in the batch."""
    r = np.random.default_rng(99)
    sizes = [5, 40, 5, 2, 40, 1, 17, 40, 5]
    seeds = [0, 3, 3, 0, 3, 1, 0, 0, 0]
    xs = [r.random(n) for n in sizes]
    xs[4][:3] = np.nan  # 37 finite values: a size of its own
    xs[7][:] = 0.25  # constant: no resampling
    got = mean_cis(xs, 0.9, 500, seeds)
    for x, seed, g in zip(xs, seeds, got, strict=True):
        xf = x[np.isfinite(x)]
        if xf.size < 2 or np.all(xf == xf[0]):
            assert g["low"] == g["high"] == g["mean"]
            continue
        want = stats.bootstrap((xf,), np.mean, confidence_level=0.9, n_resamples=500,
                               method="percentile", rng=np.random.default_rng(seed),
                               vectorized=True)
        assert (g["low"], g["high"]) == (float(want.confidence_interval.low),
                                         float(want.confidence_interval.high))
    parts = [(r.integers(0, 5, n).astype(float), r.integers(0, 3, n).astype(float))
             for n in sizes]
    parts[2] = (parts[2][0], np.zeros(5))  # no denominator: nan
    for (num, den), seed, g in zip(parts, seeds, pooled_cis(parts, 0.9, 500, seeds),
                                   strict=True):
        assert g == pooled_ci(num, den, 0.9, 500, seed) or np.isnan(g["pooled"])
        if num.size >= 2 and den.sum() > 0:  # the interval of its own draws, as before
            idx = np.random.default_rng(seed).integers(0, num.size, (500, num.size))
            sums = den[idx].sum(axis=1)
            stat = num[idx].sum(axis=1)[sums > 0] / sums[sums > 0]
            alpha = (1.0 - 0.9) / 2.0  # as pooled_ci computes it (not quite 0.05)
            assert g["pooled_low"] == float(np.quantile(stat, alpha))
            assert g["pooled_high"] == float(np.quantile(stat, 1.0 - alpha))
