"""The stub fit's selector likelihood as a numba kernel (docs/stub_logs.md, (L2)): one pass
over a log's selection rows for the log-likelihood and its gradient. It lives with the
engine's kernels so that the kernel cache is keyed by the engine's sources only
(`wmtsim.numba_cache`); `wmtsim.studies.stub_fit.likelihoods` is its reader.
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.jit import jit

SQRT3 = math.sqrt(3.0)
LOG_FLOOR = math.log(1e-300)
"""The log-probability of an observation the family makes impossible (ε is bounded by
±2√3): a floor, with `FLOOR_SLOPE` pulling the optimiser back towards the support."""
FLOOR_SLOPE = 50.0


@jit
def _half_cdf_pdf(x):
    """F and f of S at x ∈ [0, 2] (the lower half of `ih4_cdf`, `ih4_pdf`)."""
    f = x**4 / 24.0
    d = x**3 / 6.0
    if x > 1.0:
        f -= 4.0 * (x - 1.0) ** 4 / 24.0
        d -= 4.0 * (x - 1.0) ** 3 / 6.0
    return f, d


@jit
def _log_tail(x):
    """log F(x) and d log F/dx for S, x ≤ 2, with `LOG_FLOOR` and its slope outside the
    support (or where F underflows)."""
    if x <= 0.0:
        return LOG_FLOOR + FLOOR_SLOPE * x, FLOOR_SLOPE
    f, d = _half_cdf_pdf(x)
    if f < 1e-300:
        return LOG_FLOOR, FLOOR_SLOPE
    return math.log(f), d / f


@jit
def _selector_kernel(theta, relevance, poisoned, du, db, chosen):
    """−(L2)'s log-likelihood and its gradient in ``theta`` in one pass over the rows."""
    threshold, noise, boost, w_u, w_b = theta[0], theta[1], theta[2], theta[3], theta[4]
    grad = np.zeros(5)
    total = 0.0
    for i in range(relevance.shape[0]):
        z = (relevance[i] + boost * poisoned[i] + w_u * du[i] + w_b * db[i] - threshold) / noise
        x = 2.0 + z / SQRT3
        # log P(y_i) and its derivative in x: P(chosen) = F(x), P(not) = F(4 − x).
        if chosen[i] > 0:
            if x <= 2.0:
                lp, dlp = _log_tail(x)
            else:
                f, d = _half_cdf_pdf(max(4.0 - x, 0.0)) if x < 4.0 else (0.0, 0.0)
                lp, dlp = math.log1p(-f), d / (1.0 - f)
        else:
            if x >= 2.0:
                lp, dlp = _log_tail(4.0 - x)
                dlp = -dlp
            else:
                f, d = _half_cdf_pdf(max(x, 0.0))
                lp, dlp = math.log1p(-f), -d / (1.0 - f)
        total += lp
        dz = dlp / SQRT3  # d log P / dz
        grad[0] -= dz / noise
        grad[1] -= dz * z / noise
        grad[2] += dz * poisoned[i] / noise
        grad[3] += dz * du[i] / noise
        grad[4] += dz * db[i] / noise
    return -total, -grad
