"""The conservative bound of a sparse *ratio* effect (k < SPARSE differing trajectories)
contains its own estimate (issue 30: found by tests/core/test_inference_cases.py, when
the bound was built from the centred linearised z_t, whose mean is 0 on each side, so
that it could exclude D and even be [0, 0] with D = 1).

The bound is built from D's exact contributions: with δn_t, δd_t the trajectory's
differences of numerator and denominator and r_b = Σ num_b / Σ den_b,
D = Σ_t (δn_t − r_b δd_t) / Σ den_a, so D is the mean of w_t = n (δn_t − r_b δd_t) /
Σ den_a, 0 where the two sides agree; the bound is [−max|w| · CP(k_neg), max|w| · CP(k_pos)]
with CP the Clopper–Pearson upper limit at α/2 = 0.025.
"""

from __future__ import annotations

import numpy as np
import pytest

from wmtsim.core.inference import paired_effect


def test_a_ratio_where_both_trajectories_differ() -> None:
    """a: (2, 1) over (1, 3), b: (0, 0) over (1, 1). D = 3/4 − 0 = 0.75; r_b = 0, Σ den_a =
    4, so w = 2 · (2, 1) / 4 = (1.0, 0.5): both positive, max|w| = 1. CP(2 of 2) = 1, so
    high = 1; CP(0 of 2) = 1 − 0.025^(1/2) = 0.841886, so low = −0.841886."""
    e = paired_effect(np.array([2.0, 1.0]), np.array([0.0, 0.0]), np.array([1.0, 3.0]),
                      np.array([1.0, 1.0]))
    assert e["interval"].startswith("conservative bound")
    assert e["mean"] == pytest.approx(0.75)
    assert e["high"] == pytest.approx(1.0)
    assert e["low"] == pytest.approx(-(1 - 0.025 ** 0.5), abs=1e-6)
    assert e["low"] <= 0 <= e["mean"] <= e["high"]


def test_a_ratio_whose_denominators_sit_in_one_trajectory() -> None:
    """Only trajectory 0 has a denominator: a = 1/1, b = 0/1, D = 1 (the centred z_0 was
    0, so the old bound was [0, 0]). r_b = 0, Σ den_a = 1, n = 3: w_0 = 3 · 1 / 1 = 3.
    CP(1 of 3) solves 3x² − 2x³ = 0.975 (the Beta(2, 2) cdf): x = 0.905701, so high =
    2.717102; CP(0 of 3) = 1 − 0.025^(1/3) = 0.707598, so low = −2.122794."""
    e = paired_effect(np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.0]),
                      np.array([1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]))
    assert e["interval"].startswith("conservative bound")
    assert e["mean"] == pytest.approx(1.0)
    assert e["high"] == pytest.approx(2.717102, abs=1e-5)
    assert e["low"] == pytest.approx(-2.122794, abs=1e-5)
    assert e["low"] <= e["mean"] <= e["high"]


def test_the_contributions_add_up_to_the_estimate() -> None:
    """Random sparse ratio effects: the bound always holds D (the contributions w_t have
    mean D exactly, so max|w| · k/n ≥ |D| and CP(k) ≥ k/n)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(20, 60))
        da = rng.integers(1, 5, n).astype(float)
        na = rng.binomial(da.astype(int), 0.4).astype(float)
        nb, db = na.copy(), da.copy()
        idx = rng.choice(n, size=int(rng.integers(1, 9)), replace=False)
        db[idx] = rng.integers(1, 5, idx.size)
        nb[idx] = rng.binomial(db[idx].astype(int), 0.7)
        e = paired_effect(na, nb, da, db)
        if e["n_nonzero"] == 0:  # the draws made both sides agree: the rule of three
            continue
        assert e["interval"].startswith("conservative bound")
        assert e["low"] - 1e-12 <= e["mean"] <= e["high"] + 1e-12, (e["mean"], e["low"],
                                                                      e["high"])
