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


def test_degenerate_samples() -> None:
    assert mean_ci(np.array([np.nan]))["n"] == 0
    assert mean_ci(np.array([0.5, 0.5])) == {"mean": 0.5, "low": 0.5, "high": 0.5, "n": 2}


def test_mean_ci_imports_no_scipy() -> None:
    code = ("import sys, numpy as np\nfrom wmtsim.core.bootstrap import mean_ci\n"
            "mean_ci(np.arange(10.0))\nassert 'scipy' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
