"""The conservative bound of a sparse *ratio* effect (k < SPARSE differing trajectories)
contains its own estimate, and is scaled by the largest contribution the
metric allows, never the largest observed one.

D's exact contributions: with δn_t, δd_t the trajectory's differences of numerator and
denominator and r_b = Σ num_b / Σ den_b, D = Σ_t (δn_t − r_b δd_t) / Σ den_a, so D is the
mean of w_t = n (δn_t − r_b δd_t) / Σ den_a, 0 where the two sides agree. For a rate
(num ≤ den, ``bound`` 1) |δn_t − r_b δd_t| ≤ max(den_a,t, den_b,t), so |w_t| ≤
scale = max(den) / mean(den_a); the bound is [−scale · CP(k_neg), scale · CP(k_pos)] with
CP the Clopper–Pearson upper limit at α/2 = 0.025. Without a bound there is no interval.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from wmtsim.core.inference import paired_effect, zero_difference_share


def test_a_rate_where_both_trajectories_differ() -> None:
    """a: (1, 3) successes over (1, 3), b: (0, 0) over (1, 3). D = 1 − 0 = 1; r_b = 0,
    Σ den_a = 4, w = 2 · (1, 3) / 4 = (0.5, 1.5): both positive. scale = 3 / 2 = 1.5.
    CP(2 of 2) = 1, so high = 1.5; CP(0 of 2) = 1 − 0.025^(1/2) = 0.841886, so
    low = −1.5 · 0.841886 = −1.262829."""
    den = np.array([1.0, 3.0])
    e = paired_effect(den.copy(), np.zeros(2), den, den, bound=1.0)
    assert e["interval"].startswith("conservative bound")
    assert e["mean"] == pytest.approx(1.0)
    assert e["high"] == pytest.approx(1.5)
    assert e["low"] == pytest.approx(-1.5 * (1 - 0.025 ** 0.5), abs=1e-6)
    # the same ratio of an unbounded metric: the exact test alone, no interval
    e = paired_effect(den.copy(), np.zeros(2), den, den)
    assert math.isnan(e["low"]) and math.isnan(e["high"]) and e["p"] == pytest.approx(0.5)


def test_a_rate_whose_denominators_sit_in_one_trajectory() -> None:
    """Only trajectory 0 has a denominator: a = 1/1, b = 0/1, D = 1 (the centred z_0 was
    0, so the bound of issue 30 was [0, 0]). scale = 1 / (1/3) = 3. CP(1 of 3) solves
    3x² − 2x³ = 0.975 (the Beta(2, 2) cdf): x = 0.905701, so high = 2.717102; CP(0 of 3)
    = 1 − 0.025^(1/3) = 0.707598, so low = −2.122794."""
    e = paired_effect(np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.0]),
                      np.array([1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]), bound=1.0)
    assert e["interval"].startswith("conservative bound")
    assert e["mean"] == pytest.approx(1.0)
    assert e["high"] == pytest.approx(2.717102, abs=1e-5)
    assert e["low"] == pytest.approx(-2.122794, abs=1e-5)


def test_the_bound_holds_the_estimate() -> None:
    """Random sparse rate effects: the bound always holds D (the contributions w_t have
    mean D exactly and |w_t| ≤ scale, so scale · k/n ≥ |D| and CP(k) ≥ k/n)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(20, 60))
        da = rng.integers(1, 5, n).astype(float)
        na = rng.binomial(da.astype(int), 0.4).astype(float)
        nb, db = na.copy(), da.copy()
        idx = rng.choice(n, size=int(rng.integers(1, 9)), replace=False)
        db[idx] = rng.integers(1, 5, idx.size)
        nb[idx] = rng.binomial(db[idx].astype(int), 0.7)
        e = paired_effect(na, nb, da, db, bound=1.0)
        if e["n_nonzero"] == 0:  # the draws made both sides agree: the rule of three
            continue
        assert e["interval"].startswith("conservative bound")
        assert e["low"] - 1e-12 <= e["mean"] <= e["high"] + 1e-12, (e["mean"], e["low"],
                                                                      e["high"])


def test_the_weighted_rule_of_three() -> None:
    """Equal denominators: 3/n, the rule of three. Denominators 90 (×20) and 20 (×180):
    Σ = 5400, the three largest shares 3 · 90 / 5400 = 0.05. At alpha = 0.01 the budget is
    −log 0.01 = 4.605: 4 whole shares and 0.605 of the fifth."""
    assert zero_difference_share(np.ones(400)) == pytest.approx(3 / 400)
    den = np.r_[np.full(20, 90.0), np.full(180, 20.0)]
    assert zero_difference_share(den) == pytest.approx(0.05)
    assert zero_difference_share(den, 0.01) == pytest.approx(-math.log(0.01) * 90 / 5400)
    assert zero_difference_share(np.ones(2)) == 1.0
    e = paired_effect(np.zeros(200), np.zeros(200), den, den, bound=1.0)
    assert e["high"] == pytest.approx(0.05) and e["low"] == pytest.approx(-0.05)
    assert "of the denominator" in e["interval"]
