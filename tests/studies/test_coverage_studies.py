"""Monte Carlo coverage studies, one per procedure issue 38 found short (docs/statistics.md,
"Coverage"). Each calls the project's own function on data with a known truth, is seeded,
runs in seconds, and states its Monte Carlo error: ``MC`` below is the standard error of
an estimated rate, sqrt(p (1 − p) / runs), and every assertion allows 3 of them beyond the
nominal level. Each assertion failed on the code issue 38 was filed against; the numbers
before and after are in the commit messages and docs/statistics.md.

The expensive studies (the screening atlas's family, a Sobol sweep on the simulator) are
in benchmarks/coverage.py.
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.inference import paired_effect


def mc_error(rate: float, runs: int) -> float:
    """The Monte Carlo standard error of a rate estimated from ``runs`` runs."""
    return math.sqrt(max(rate * (1 - rate), 0.05 * 0.95) / runs)


# --- 1. the zero-difference bound of a pooled ratio --------------------------------------


def pooled_zero_case(rng: np.random.Generator, p: float, n: int = 200, heavy: int = 20
                     ) -> tuple[float, dict[str, float]]:
    """A pooled rate Σ num / Σ den on n trajectories: ``heavy`` of them have denominator
    90, the rest 20 (paper_poisoning's spread). Only a heavy trajectory can differ (with
    probability p): there a succeeds on every step and b on none. The truth, conditional
    on the denominators, is p · Σ_heavy den / Σ den."""
    den = np.full(n, 20.0)
    den[:heavy] = 90.0
    differ = np.zeros(n, dtype=bool)
    differ[:heavy] = rng.random(heavy) < p
    num_a = np.where(differ, den, 0.0)
    truth = p * den[:heavy].sum() / den.sum()
    e = paired_effect(num_a, np.zeros(n), den, den, bound=1.0, n_resamples=400)
    return truth, e


def test_zero_difference_bound_of_a_pooled_ratio_covers() -> None:
    """With p = 0.05 the truth (0.0167) is above 3/n = 0.015 and no heavy trajectory
    differs in 36% of the runs: the old rule of three (± 3/n) covered 0.64; the weighted
    bound (the three largest shares of the denominator, 0.05) covers. At p = 0.15 the
    truth (0.05) sits on the weighted bound: the worst case, nominal 0.95."""
    rng = np.random.default_rng(38)
    runs = 1500
    for p in (0.05, 0.15):
        hits = []
        for _ in range(runs):
            truth, e = pooled_zero_case(rng, p)
            hits.append(e["low"] <= truth <= e["high"])
        cov = float(np.mean(hits))
        assert cov >= 0.95 - 3 * mc_error(cov, runs), (p, cov)


# --- 1. sparse effects on an unbounded metric ----------------------------------------------


def test_sparse_unbounded_effect_reports_no_interval_it_cannot_keep() -> None:
    """Prompt tokens: 1% of 400 trajectories differ by a heavy-tailed amount (lognormal,
    σ = 1.5; true mean difference 0.01 · e^1.125). No interval built from fewer than 10
    observed differences bounds such a mean; the old one, scaled by the largest observed
    difference, covered 0.3-0.6 here. Every interval reported must cover at 95%; a sparse
    effect on an unbounded metric now reports none, and its exact test keeps its size
    on the null with random signs."""
    rng = np.random.default_rng(381)
    n, runs = 400, 600
    truth = 0.01 * math.exp(1.5**2 / 2)
    reported, hits, null_rejects = 0, [], []
    for _ in range(runs):
        diff = (rng.random(n) < 0.01) * rng.lognormal(0.0, 1.5, n)
        e = paired_effect(diff, np.zeros(n))
        if 0 < e["n_nonzero"] < 10 and math.isfinite(e["low"]):
            reported += 1
            hits.append(e["low"] <= truth <= e["high"])
        signed = diff * rng.choice([-1.0, 1.0], n)
        null_rejects.append(paired_effect(signed, np.zeros(n), interval=False)["p"] <= 0.05)
    if hits:  # any interval the code reports must keep its level
        cov = float(np.mean(hits))
        assert cov >= 0.95 - 3 * mc_error(cov, len(hits)), (cov, len(hits))
    size = float(np.mean(null_rejects))
    assert size <= 0.05 + 3 * mc_error(size, runs), size
