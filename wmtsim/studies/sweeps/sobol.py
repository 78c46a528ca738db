"""Sobol indices with honest intervals: R independent scramblings (docs/statistics.md).

The points of one scrambled Sobol sequence are not independent draws, so a bootstrap
over them misstates the estimator's spread (on Ishigami it is 3–25× too wide). The
replicate method is: draw R independently scrambled sequences (Owen scrambling, each
from its own seed ``[seed, r]``), estimate the indices on each (`sobol_estimate`:
Saltelli 2010 first order, Jansen 1999 total), and report their mean with a Student-t
interval on R − 1 degrees of freedom. The R estimates are independent and identically
distributed, so the interval is exact up to the normality of their mean.

**Monte Carlo noise.** When f is a simulated mean (a sweep point: the mean over n
trajectories run on common random numbers), f(x) = μ(x) + ε(x) with ε a random function
of x fixed by the trajectories' draws, shared by every point and every scrambling. The
point-mean estimators then estimate the indices of μ + ε, not of the mean function μ,
and the replicate interval misses ε's spread: on a sweep like ``sobol_gaia`` S1 and ST
covered 0.87 and 0.81, and a knob that is read but does not move the mean got ST ≈ 0.03,
"non-zero" every time. `sobol_mean_function` estimates μ's indices from the
per-trajectory values: each product of point means in the estimators is corrected by its
covariance over trajectories divided by n (E[ā b̄] = μ_a μ_b + Cov(a, b) / n), which
removes ε's contribution to the variance of f, to Jansen's numerator and to Saltelli's;
and each scrambling is read on its own share of the trajectories, so the R replicates are
independent draws of design *and* noise and their t interval counts both (a bootstrap of
the trajectories overstated the noise's spread about 1.7×: the squared mean is a
degenerate statistic at an inert knob). ``noise_share`` is the share of the design
variance of f that the correction removed: how much of the "variance" was the simulator's noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

Function = Callable[[np.ndarray], np.ndarray]
"""f: (N, d) points in [0, 1)^d -> (N,) outputs."""


def sobol_estimate(a: np.ndarray, b: np.ndarray, ab: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(S1, ST) from ``f(A)`` (..., N), ``f(B)`` (..., N), ``f(AB_i)`` (..., d, N)
    (leading axes: resamples or replicates)."""
    # Centre the outputs first (as scipy.stats.sobol_indices does): the estimators'
    # expectations do not change, but S1's variance no longer grows with the mean of f,
    # which matters for rates such as TSR with a small spread around a large mean.
    mean = np.mean(np.concatenate([a, b], axis=-1), axis=-1, keepdims=True)
    a, b, ab = a - mean, b - mean, ab - mean[..., None, :]
    var = np.var(np.concatenate([a, b], axis=-1), axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        s1 = np.mean(b[..., None, :] * (ab - a[..., None, :]), axis=-1) / var
        st = 0.5 * np.mean((a[..., None, :] - ab) ** 2, axis=-1) / var
    return s1, st


def replicate_interval(estimates: np.ndarray, confidence: float = 0.95
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, low, high) over the first axis of ``estimates`` (R, ...): R independent
    replicate estimates (one per scrambling), with a Student-t interval on R − 1 degrees
    of freedom."""
    from scipy import stats

    est = np.asarray(estimates, dtype=np.float64)
    r = est.shape[0]
    if r < 2:
        raise ValueError(f"{r} replicate(s): a replicate interval needs at least 2")
    t = float(stats.t.ppf(0.5 + confidence / 2, r - 1))
    mean = est.mean(axis=0)
    half = t * est.std(axis=0, ddof=1) / math.sqrt(r)
    return mean, mean - half, mean + half


def scrambled_blocks(d: int, m: int, seed: int, replicate: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The A and B matrices (2^m, d) of one independently scrambled Sobol sequence."""
    from scipy.stats import qmc

    u = qmc.Sobol(d=2 * d, scramble=True, rng=np.random.default_rng([seed, replicate]))
    x = np.asarray(u.random_base2(m))
    return x[:, :d], x[:, d:]


def sobol_replicated(f: Function, d: int, m: int, replicates: int = 10, seed: int = 0,
                     confidence: float = 0.95) -> dict[str, Any]:
    """S1 and ST of ``f`` over [0, 1)^d from ``replicates`` independent scramblings of
    2^m base points each: the mean over replicates with a t interval. Returns arrays
    ``S1``, ``S1_low``, ``S1_high``, ``ST``, ``ST_low``, ``ST_high`` (d,), the replicate
    estimates ``S1_r``, ``ST_r`` (R, d), and ``replicates``."""
    if replicates < 2:
        raise ValueError(f"replicates={replicates}: a replicate interval needs at least 2")
    s1_r, st_r = np.empty((replicates, d)), np.empty((replicates, d))
    for r in range(replicates):
        a, b = scrambled_blocks(d, m, seed, r)
        ab = np.repeat(a[None], d, axis=0)
        for i in range(d):
            ab[i, :, i] = b[:, i]
        f_a, f_b = f(a), f(b)
        f_ab = np.stack([f(ab[i]) for i in range(d)])
        s1_r[r], st_r[r] = sobol_estimate(f_a, f_b, f_ab)
    out: dict[str, Any] = {"replicates": replicates, "S1_r": s1_r, "ST_r": st_r}
    for name, est in (("S1", s1_r), ("ST", st_r)):
        mean, low, high = replicate_interval(est, confidence)
        # a mean function's indices lie in [0, 1]: the interval is cut to that range (it
        # loses no coverage there); at an inert knob the replicate estimates are skewed
        # (a squared noise mean less its expectation), and uncut intervals wholly below
        # 0 covered the true 0 only 0.86 of the time at R = 10
        out.update({name: mean, f"{name}_low": np.clip(low, 0.0, 1.0),
                    f"{name}_high": np.clip(high, 0.0, 1.0)})
    return out


def ishigami(x: np.ndarray, a: float = 7.0, b: float = 0.1) -> np.ndarray:
    """The Ishigami function on [0, 1)^3 mapped to [−π, π)^3 (Ishigami & Homma 1990)."""
    z = -math.pi + 2 * math.pi * np.asarray(x)
    return np.asarray(np.sin(z[:, 0]) + a * np.sin(z[:, 1]) ** 2
                      + b * z[:, 2] ** 4 * np.sin(z[:, 0]))


def ishigami_indices(a: float = 7.0, b: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """The analytic first-order and total Sobol indices of `ishigami`."""
    pi4 = math.pi**4
    v1 = 0.5 * (1 + b * pi4 / 5) ** 2
    v2 = a**2 / 8
    v13 = b**2 * math.pi**8 * (1 / 18 - 1 / 50)
    var = v1 + v2 + v13
    return (np.array([v1, v2, 0.0]) / var, np.array([v1 + v13, v2, v13]) / var)


def sobol_mean_function(a: np.ndarray, b: np.ndarray, ab: np.ndarray,
                        confidence: float = 0.95) -> dict[str, Any]:
    """First-order and total indices of the mean function from per-trajectory values on
    common random numbers (module docstring, "Monte Carlo noise"): ``a``, ``b`` (R, N, n)
    and ``ab`` (R, d, N, n) hold trajectory t's value at base point j of scrambling r.

    Scrambling r is read on its own trajectories only (t ≡ r mod R), so the R replicate
    pairs (index numerator, mean function's variance) are independent in the design
    points *and* in the simulation's draws; each is corrected for the noise of its n/R
    trajectories. Each index is the ratio of the replicates' mean numerator to their
    mean variance, with Fieller's interval on R − 1 degrees of freedom
    (`fieller_interval`): the mean of per-replicate ratios with a t interval covered
    0.72–0.75 on a narrow output range (TSR 0.176–0.220), where a replicate's
    variance can be near 0 or negative and its ratio explodes, and gave NaN bounds. When
    the mean variance is not significantly above 0 the design is **flat**: the indices
    are undefined (NaN) and ``flat`` says why (`flat_reason`); otherwise ``flat`` is "".
    Returns ``S1``, ``S1_low``, ``S1_high``, ``ST``, ``ST_low``, ``ST_high`` (d,), the
    replicate estimates ``S1_r``, ``ST_r`` (R, d), ``noise_share`` (the share of the
    design variance of the point means that was noise, mean over replicates),
    ``replicates``, ``trajectories`` (per replicate) and ``flat``. The intervals are cut
    to [0, 1]."""
    a, b, ab = (np.asarray(x, dtype=np.float64) for x in (a, b, ab))
    r_, d, n = a.shape[0], ab.shape[1], a.shape[-1]
    if r_ < 2 or n < 2 * r_:
        raise ValueError(f"{r_} scrambling(s), {n} trajectories: the mean function's "
                         "interval needs at least 2 scramblings and 2 trajectories each")
    s1_n, st_n = np.empty((r_, d)), np.empty((r_, d))
    var_r, raw_r = np.empty(r_), np.empty(r_)
    for r in range(r_):
        own = slice(r, None, r_)  # this scrambling's trajectories
        sub = a[r:r + 1, :, own], b[r:r + 1, :, own], ab[r:r + 1, :, :, own]
        w = np.full((sub[0].shape[-1], 1), 1.0 / sub[0].shape[-1])
        s1, st, var, raw = _corrected_parts(*sub, w)
        s1_n[r], st_n[r], var_r[r], raw_r[r] = s1[0, :, 0], st[0, :, 0], var[0, 0], raw[0, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        s1_r, st_r = s1_n / var_r[:, None], st_n / var_r[:, None]
        share = float(np.mean(1.0 - var_r / raw_r)) if np.all(raw_r > 0) else 1.0
    out: dict[str, Any] = {"replicates": r_, "trajectories": n // r_, "S1_r": s1_r,
                           "ST_r": st_r, "noise_share": share, "flat": ""}
    for name, num in (("S1", s1_n), ("ST", st_n)):
        est, low, high, ok = fieller_interval(num, var_r, confidence)
        # a mean function's indices lie in [0, 1]: the interval is cut to that range (it
        # loses no coverage there)
        out.update({name: est, f"{name}_low": np.clip(low, 0.0, 1.0),
                    f"{name}_high": np.clip(high, 0.0, 1.0)})
    if not ok.all():
        out["flat"] = flat_reason(var_r, share, confidence)
    return out


def flat_reason(var_r: np.ndarray, noise_share: float, confidence: float = 0.95) -> str:
    """Why a design's indices are undefined: its mean function's variance over the
    design (``var_r``, one estimate per scrambling) is not significantly above 0 at
    ``confidence`` (the denominator of every index; Fieller's set is then unbounded)."""
    r = var_r.size
    mean = float(np.mean(var_r))
    se = float(np.std(var_r, ddof=1)) / math.sqrt(r) if r > 1 else math.nan
    ratio = f"{mean / se:.2g}" if se > 0 else "0"
    return (f"flat: indices undefined (the mean function's variance over the design is "
            f"not distinguishable from 0: {ratio} standard errors over {r} scramblings; "
            f"{noise_share:.0%} of the point means' variance is simulation noise)")


def fieller_interval(num: np.ndarray, den: np.ndarray, confidence: float = 0.95
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fieller's interval for a ratio of means E[num] / E[den] from R independent
    replicate pairs (``num`` (R, ...), ``den`` (R,)), on R − 1 degrees of freedom
    (Fieller 1954; Franz 2007, "Ratios: a short guide to confidence limits"): the θ
    with (n̄ − θ d̄)² ≤ t² Var(n̄ − θ d̄). Returns (estimate n̄ / d̄, low, high, defined):
    ``defined`` is False where d̄ is not significantly above 0 (d̄ ≤ 0 or
    d̄ / se(d̄) ≤ t): the set is then unbounded, the ratio undefined, and the estimate,
    low and high are NaN for the caller to report as such."""
    from scipy import stats

    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    r = num.shape[0]
    t = float(stats.t.ppf(0.5 + confidence / 2, r - 1))
    shape = (r,) + (1,) * (num.ndim - 1)
    dn = den.reshape(shape)
    nm, dm = num.mean(axis=0), float(den.mean())
    v_nn = num.var(axis=0, ddof=1) / r
    v_dd = float(den.var(ddof=1)) / r
    v_nd = ((num - nm) * (dn - dm)).sum(axis=0) / (r - 1) / r
    nan = np.full(nm.shape, math.nan)
    if not (dm > 0 and dm * dm > t * t * v_dd):
        return nan, nan, nan, np.zeros(nm.shape, dtype=bool)
    q = t * t / (dm * dm)
    g = q * v_dd
    est = nm / dm
    disc = np.maximum(v_nn - 2 * est * v_nd + est * est * v_dd - q * (v_nn * v_dd - v_nd**2),
                      0.0)
    half = t / dm * np.sqrt(disc)
    centre = est - q * v_nd
    return est, (centre - half) / (1 - g), (centre + half) / (1 - g), np.ones(nm.shape,
                                                                             dtype=bool)


def _corrected_indices(a: np.ndarray, b: np.ndarray, ab: np.ndarray, w: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(S1 (R, d, m), ST (R, d, m), noise share (R, m)) of the mean function under each
    column of the trajectory weights ``w`` (n, m; columns sum to 1): the Saltelli 2010
    and Jansen 1999 estimators on the weighted point means, each product of two means
    less the weighted covariance of its per-trajectory values over n."""
    n = a.shape[-1]
    ddof = n / (n - 1)

    def mean(x: np.ndarray) -> np.ndarray:
        return np.asarray(x @ w)

    def cov(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The weighted covariance over trajectories of the mean of x and y: Cov / n."""
        return np.asarray((mean(x * y) - mean(x) * mean(y)) * ddof / n)

    s1_num, st_num, var, raw = _corrected_parts(a, b, ab, w)
    with np.errstate(invalid="ignore", divide="ignore"):
        return s1_num / var[:, None], st_num / var[:, None], 1.0 - var / raw


def _corrected_parts(a: np.ndarray, b: np.ndarray, ab: np.ndarray, w: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The numerators and denominator of `_corrected_indices`: (Saltelli's S1 numerator
    (R, d, m), Jansen's ST numerator (R, d, m), the mean function's variance (R, m), the
    point means' raw variance (R, m))."""
    n = a.shape[-1]
    ddof = n / (n - 1)

    def mean(x: np.ndarray) -> np.ndarray:
        return np.asarray(x @ w)

    def cov(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The weighted covariance over trajectories of the mean of x and y: Cov / n."""
        return np.asarray((mean(x * y) - mean(x) * mean(y)) * ddof / n)

    g = np.concatenate([a, b], axis=1)  # (R, 2N, n): the points Var(f) is taken over
    h = g - g.mean(axis=1, keepdims=True)  # each trajectory's deviation from its mean
    hm = mean(h)  # (R, 2N, m): f(x) − mean f
    raw = np.mean(hm**2, axis=1)
    var = raw - np.mean(cov(h, h), axis=1)  # (R, m)
    diff = ab - a[:, None]  # (R, d, N, n): f(AB_i) − f(A) per trajectory
    dm = mean(diff)
    st_num = np.mean(dm**2 - cov(diff, diff), axis=2) / 2  # Jansen
    centre = np.mean(mean(g), axis=1, keepdims=True)  # (R, 1, m)
    bm = mean(b) - centre
    s1_num = np.mean(bm[:, None] * dm - cov(b[:, None], diff), axis=2)  # Saltelli
    return s1_num, st_num, var, raw
