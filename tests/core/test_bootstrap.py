"""`mean_ci` gives scipy's percentile bootstrap to the bit, without importing scipy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from wmtsim.core.bootstrap import mean_ci


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
