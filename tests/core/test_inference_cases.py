"""Hand-worked cases of `wmtsim.core.inference`: each threshold at its
boundary, each formula on data small enough to work by hand, each verdict at p exactly
alpha. Every expected value is derived in the test's docstring, not by the code under test.

Two closed forms of the Clopper–Pearson upper limit (Beta(k + 1, n − k) quantile) are used
throughout: at k = 0 the Beta(1, n) CDF is 1 − (1 − x)^n, so the 1 − q quantile is
1 − q^(1/n); at k = n − 1 the Beta(n, 1) CDF is x^n, so it is (1 − q)^(1/n).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from wmtsim.core.inference import (
    EXACT_MAX,
    FAILS,
    HOLDS,
    HOLDS_NS,
    SPARSE,
    TIE,
    clopper_pearson_upper,
    directed_verdict,
    paired_effect,
    resamples_for,
    rule_of_three,
    verdict,
)


def test_rule_of_three_and_its_empty_sample() -> None:
    """3/n: 3/300 = 0.01; with no trial there is no bound (NaN, not a division by 0)."""
    assert rule_of_three(300) == pytest.approx(0.01)
    assert math.isnan(rule_of_three(0))


def test_clopper_pearson_upper_by_hand() -> None:
    """k = n − 1 = 1 of n = 2 at alpha = 0.19: Beta(2, 1) quantile √(1 − 0.19) = 0.9
    (a wrong second shape, n + k = 3, gives Beta(2, 3): ≈ 0.67). k = 0 of n = 10 at
    0.025: 1 − 0.025^(1/10) = 1 − e^(−0.36889) = 0.30850. k = n (every trial a success):
    the limit is 1 (the Beta(n + 1, 0) quantile does not exist)."""
    assert clopper_pearson_upper(1, 2, 0.19) == pytest.approx(0.9, abs=1e-12)
    assert clopper_pearson_upper(0, 10, 0.025) == pytest.approx(0.30850, abs=1e-5)
    assert clopper_pearson_upper(5, 5, 0.025) == 1.0
    assert clopper_pearson_upper(7, 5, 0.025) == 1.0


def test_the_linearised_se_of_a_pooled_ratio() -> None:
    """a: numerators (2, 1) over denominators (1, 3); b: (0, 0) over (1, 1).
    R_a = 3/4, mean(den_a) = 2, so z_a = ((2 − 3/4·1), (1 − 3/4·3)) / 2 = (0.625, −0.625);
    R_b = 0, so z_b = 0 and z = z_a. With two values sd = |z_1 − z_2| / √2, so
    se = sd / √2 = |z_1 − z_2| / 2 = 0.625. A sign slip (num + R·den) or R / den in z gives
    z_a = (1.375, 1.625) or (0.625, 0.375): se 0.125. Swapping a and b negates z: the same
    se, and it checks b's half of the formula. D = 3/4 − 0 = 0.75."""
    num, den = np.array([2.0, 1.0]), np.array([1.0, 3.0])
    zero, one = np.zeros(2), np.ones(2)
    e = paired_effect(num, zero, den, one)
    assert e["mean"] == pytest.approx(0.75) and e["se"] == pytest.approx(0.625)
    e = paired_effect(zero, num, one, den)
    assert e["mean"] == pytest.approx(-0.75) and e["se"] == pytest.approx(0.625)
    # its conservative bound: tests/core/test_inference_sparse_ratio.py (the same case)


def test_a_ratio_contribution_of_zero_counts_on_neither_side() -> None:
    """a: (1, 1, 1) over (2, 2, 2), so R_a = 1/2 and z_a = 0; b: (0, 1, 2) over (1, 1, 4),
    R_b = 3/6 = 1/2, mean(den_b) = 2, z_b = (−0.5, 0.5, 0) / 2 = (−0.25, 0.25, 0);
    z = z_a − z_b = (0.25, −0.25, 0). All three trajectories differ (k = 3 < SPARSE). The
    bound reads D's exact contributions w_t = n (δn_t − R_b δd_t) / Σ den_a with
    δn = (1, 0, −1), δd = (1, 1, −2), Σ den_a = 6: w = 3 · (0.5, −0.5, 0) / 6 =
    (0.25, −0.25, 0) (here equal to z): one positive, one negative, one exactly 0 (it is
    neither). The bound is ± scale · CP(1 of 3, 0.025) = ± scale · x with x the
    Beta(2, 2) 0.975 quantile: 3x² − 2x³ = 0.975, x ≈ 0.9057. Symmetric because k_pos =
    k_neg = 1. A ratio's scale is the largest contribution the metric allows, not the
    largest observed: bound · max(den) / mean(den_a) = 1 · 4 / 2 = 2."""
    na, da = np.ones(3), np.full(3, 2.0)
    nb, db = np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.0, 4.0])
    e = paired_effect(na, nb, da, db, bound=1.0)
    assert e["n_nonzero"] == 3 and e["mean"] == pytest.approx(0.0)
    assert e["interval"] == "conservative bound (3 of 3 differ)"
    x = e["high"] / 2.0
    assert 3 * x**2 - 2 * x**3 == pytest.approx(0.975, abs=1e-9)
    assert e["low"] == pytest.approx(-e["high"])


def test_the_sparse_bound_of_a_mean_uses_the_bound_and_both_tails_at_alpha_over_2() -> None:
    """n = 4, a − b = (−0.5, −0.5, −0.5, 0): k = 3 differ, all negative. With bound 1:
    low = −1 · CP(3 of 4, 0.025) = −0.975^(1/4) = −0.99369, high = 1 · CP(0 of 4, 0.025)
    = 1 − 0.025^(1/4) = 1 − 0.39764 = 0.60236. With no bound (an unbounded metric) there
    is no interval (issue 38: the largest observed difference does not bound the mean of
    a sparse effect), only the exact test: 2^3 swaps, only the identity
    is as low, so p_less = 1/8, p = 2/8."""
    a, b = np.zeros(4), np.array([0.5, 0.5, 0.5, 0.0])
    e = paired_effect(a, b, bound=1.0)
    assert e["low"] == pytest.approx(-0.99369, abs=1e-5)
    assert e["high"] == pytest.approx(0.60236, abs=1e-5)
    assert e["p_less"] == pytest.approx(1 / 8) and e["p"] == pytest.approx(0.25)
    e = paired_effect(a, b)
    assert math.isnan(e["low"]) and math.isnan(e["high"])
    assert e["interval"] == "none: 3 of 4 differ, unbounded metric (exact test)"
    assert e["p"] == pytest.approx(0.25)
    # the mirror: a − b all positive puts the large side high
    e = paired_effect(b, a, bound=1.0)
    assert e["low"] == pytest.approx(-0.60236, abs=1e-5)
    assert e["high"] == pytest.approx(0.99369, abs=1e-5)


@pytest.mark.parametrize("k", [SPARSE - 1, SPARSE])
def test_the_interval_switches_to_the_bootstrap_at_sparse_differing(k: int) -> None:
    """SPARSE = 10: with 9 differing trajectories the interval is the conservative bound,
    with 10 the bootstrap."""
    assert SPARSE == 10
    a = np.zeros(40)
    a[:k] = 1.0
    e = paired_effect(a, np.zeros(40), bound=1.0, n_resamples=200)
    if k < SPARSE:
        assert e["interval"] == f"conservative bound ({k} of 40 differ)"
    else:
        assert e["interval"].startswith("paired percentile bootstrap")


@pytest.mark.parametrize("k", [EXACT_MAX, EXACT_MAX + 1])
def test_the_test_is_exact_up_to_exact_max_differing(k: int) -> None:
    """EXACT_MAX = 16: 16 differing trajectories, all +1, are tested exactly — the sign
    test, p = 2 · 2^−16 = 3.0517578125e-05; 17 go to the paired t-test."""
    assert EXACT_MAX == 16
    a = np.zeros(40)
    a[:k] = 1.0
    e = paired_effect(a, np.zeros(40), interval=False)
    if k <= EXACT_MAX:
        assert e["test"] == "exact permutation (2^16 swaps)"
        assert e["p"] == pytest.approx(2 * 2.0**-16, rel=1e-9)
        assert e["p_greater"] == pytest.approx(2.0**-16, rel=1e-9)
    else:
        assert e["test"] == "paired t"


def test_the_t_test_has_n_minus_1_degrees_of_freedom() -> None:
    """17 differences μ + e_i with e = eight +1, eight −1 and one 0: mean μ, and
    Σ(e_i)² = 16 over n − 1 = 16, so sd = 1 and t = μ √17. With μ = 2.119905 / √17,
    t = 2.119905, the 0.975 quantile of t with 16 degrees of freedom (any t table):
    p_greater = 0.025, p_less = 0.975, p = 0.05. (With 18 degrees of freedom p would be
    0.0482.) Every difference is nonzero (μ ≈ 0.514), so k = 17 > EXACT_MAX."""
    mu = 2.119905 / math.sqrt(17)
    d = mu + np.array([1.0] * 8 + [-1.0] * 8 + [0.0])
    e = paired_effect(d, np.zeros(17), interval=False)
    assert e["test"] == "paired t" and e["n_nonzero"] == 17
    assert e["se"] == pytest.approx(1 / math.sqrt(17))
    assert e["p"] == pytest.approx(0.05, abs=1e-6)
    assert e["p_greater"] == pytest.approx(0.025, abs=1e-6)
    assert e["p_less"] == pytest.approx(0.975, abs=1e-6)
    e = paired_effect(np.zeros(17), d, interval=False)  # the mirror
    assert e["p_greater"] == pytest.approx(0.975, abs=1e-6)
    assert e["p_less"] == pytest.approx(0.025, abs=1e-6)


def test_a_zero_denominator_total_on_either_side_has_no_test() -> None:
    """Σ den_b = 0: b's pooled ratio Σ num / Σ den is 0/0, undefined, so is D; nothing is
    tested (test "none", NaN) — on either side."""
    one, zero = np.ones(3), np.zeros(3)
    for e in (paired_effect(one, one, one, zero), paired_effect(one, one, zero, one)):
        assert e["test"] == "none" and math.isnan(e["mean"]) and math.isnan(e["p"])
        assert e["n"] == 3


def test_the_bootstrap_fills_every_resample_when_chunks_do_not_divide_it() -> None:
    """n = 3,000 trajectories: resamples are drawn in chunks of 2,000,000 // 3,000 = 666,
    so 2,000 resamples are three chunks of 666 and a last one of 2. Every difference is 1,
    so every resample's D is exactly 1 and the interval is [1, 1] — an unfilled or
    misplaced slot would show."""
    e = paired_effect(np.ones(3000), np.zeros(3000), n_resamples=2000, bound=1.0)
    assert e["resamples"] == 2000
    assert e["low"] == 1.0 and e["high"] == 1.0


def test_one_trajectory_has_no_se_and_no_warning() -> None:
    """n = 1: a standard deviation needs two values: se is NaN, set without asking numpy
    (which would warn "Degrees of freedom <= 0")."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = paired_effect(np.array([1.0]), np.array([0.0]), bound=1.0)
    assert e["n"] == 1 and math.isnan(e["se"])


def test_verdict_at_p_exactly_alpha() -> None:
    """Significant means p ≤ alpha: a two-sided 2 · 0.025 = 0.05 (exact in binary: a
    doubling) is significant at 0.05, in the smaller one-sided p's direction; so is an
    adjusted p of exactly 0.05; one ulp above is not."""
    assert verdict(0.025, 0.5, 0.1) == HOLDS
    assert verdict(0.5, 0.025, -0.1) == FAILS
    assert verdict(0.01, 0.99, 0.1, p_adjusted=0.05) == HOLDS
    assert verdict(0.99, 0.01, -0.1, p_adjusted=0.05) == FAILS
    above = math.nextafter(0.05, 1.0)
    assert verdict(0.01, 0.99, 0.1, p_adjusted=above) == HOLDS_NS
    assert verdict(0.99, 0.01, -0.1, p_adjusted=above) == TIE


def test_directed_verdict() -> None:
    """The direction is the estimate's sign: margin +0.1 at p 0.01 holds, −0.1 fails; at
    p = 0.05 = alpha still significant; at 0.2 holds (not significant) or tie; an
    undefined margin, or one of exactly 0 (no direction), is a tie whatever p."""
    assert directed_verdict(0.1, 0.01) == HOLDS
    assert directed_verdict(-0.1, 0.01) == FAILS
    assert directed_verdict(0.1, 0.05) == HOLDS
    assert directed_verdict(-0.1, 0.05) == FAILS
    assert directed_verdict(0.1, 0.2) == HOLDS_NS
    assert directed_verdict(-0.1, 0.2) == TIE
    assert directed_verdict(0.0, 0.2) == TIE
    assert directed_verdict(math.nan, 0.0) == TIE
    assert directed_verdict(0.0, 0.01) == TIE
    assert directed_verdict(-0.0, 0.0) == TIE


def test_an_unbounded_interval_is_the_hull_moved_out_by_the_largest_contributions() -> None:
    """An unbounded metric's bootstrap interval (k ≥ 20% of n), recomputed by hand on the
    same resamples: the hull of the percentile interval and the studentised one
    [D − t*_.975 se, D − t*_.025 se], then moved out by the largest contribution on each
    side: differences 5, −2 and eighteen 1s on n = 20 give 5 / 20 above, 2 / 20 below."""
    d = np.array([5.0, -2.0] + [1.0] * 18)
    n, b = d.size, resamples_for(0.05)
    wide = paired_effect(d + 3.0, np.full(n, 3.0), seed=3)  # the differences are d
    rng = np.random.default_rng([3, n, 21])  # the resamples paired_effect draws
    x = d[rng.integers(0, n, size=(b, n))]
    means, se_star = x.mean(axis=1), x.std(axis=1, ddof=1) / math.sqrt(n)
    mean, se = d.mean(), d.std(ddof=1) / math.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):  # a resample of 1s: se* = 0
        t = (means - mean) / se_star
    t_lo, t_hi = np.quantile(t[np.isfinite(t)], [0.025, 0.975])  # t* needs se* > 0
    p_lo, p_hi = np.quantile(means, [0.025, 0.975])
    assert wide["low"] == pytest.approx(min(p_lo, mean - t_hi * se) - 2 / 20, abs=1e-12)
    assert wide["high"] == pytest.approx(max(p_hi, mean - t_lo * se) + 5 / 20, abs=1e-12)
    assert "studentised" in wide["interval"] and "largest contribution" in wide["interval"]
    plain = paired_effect(d, np.zeros(n), seed=3, bound=100.0)  # bounded: percentile only
    assert (plain["low"], plain["high"]) == pytest.approx((p_lo, p_hi), abs=1e-12)


def test_a_pooled_ratio_margin_is_its_exact_contribution() -> None:
    """A pooled ratio's contributions are w_t = n (δn_t − r_b δd_t) / Σ den_a: with
    den 2 everywhere on both sides, num_a = (3, nine 1s, ten 0s) and num_b = 0 on n = 20,
    r_b = 0 and Σ den_a = 40, so the largest w_t / n is 3 / 40 and none is negative: the
    unbounded interval reaches at least 3 / 40 past the percentile one, and it is the same
    interval as the mean's (den constant: the ratio is the mean / 2)."""
    na = np.array([3.0] + [1.0] * 9 + [0.0] * 10)
    den = np.full(20, 2.0)
    plain = paired_effect(na, np.zeros(20), den, den, bound=100.0)
    wide = paired_effect(na, np.zeros(20), den, den)
    assert wide["low"] <= plain["low"] + 1e-12
    assert wide["high"] >= plain["high"] + 3 / 40 - 1e-12
    as_mean = paired_effect(na / 2, np.zeros(20))
    assert (wide["low"], wide["high"]) == pytest.approx((as_mean["low"], as_mean["high"]),
                                                        abs=1e-12)


def test_a_right_skewed_sample_takes_both_ends_from_the_studentised_interval() -> None:
    """Differences 20, nine 1s and ten 0s (n = 20, D = 1.45): on paired_effect's
    resamples the percentile interval is about [0.30, 3.45] and the studentised one about
    [0.22, 12.2], so the hull is the studentised interval on both sides, moved out by
    20 / 20 above and nothing below (no negative difference)."""
    d = np.array([20.0] + [1.0] * 9 + [0.0] * 10)
    n, b = d.size, resamples_for(0.05)
    rng = np.random.default_rng([3, n, 21])
    x = d[rng.integers(0, n, size=(b, n))]
    means, se_star = x.mean(axis=1), x.std(axis=1, ddof=1) / math.sqrt(n)
    mean, se = d.mean(), d.std(ddof=1) / math.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (means - mean) / se_star
    t_lo, t_hi = np.quantile(t[np.isfinite(t)], [0.025, 0.975])
    p_lo, p_hi = np.quantile(means, [0.025, 0.975])
    assert mean - t_hi * se < p_lo and mean - t_lo * se > p_hi + 5  # the hull is studentised
    wide = paired_effect(d, np.zeros(n), seed=3)
    assert wide["low"] == pytest.approx(mean - t_hi * se, abs=1e-12)
    assert wide["high"] == pytest.approx(mean - t_lo * se + 1.0, abs=1e-12)


def test_the_contributions_average_to_the_pooled_difference_exactly() -> None:
    """D = mean(w) with w_t = n (δn_t − r_b δd_t) / Σ den_a (module docstring), for
    denominators that differ between the sides and across trajectories."""
    from wmtsim.core.inference import _contributions, _ratio_diff

    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(2, 40))
        na, nb = rng.integers(0, 9, n).astype(float), rng.integers(0, 9, n).astype(float)
        da, db = na + rng.integers(1, 5, n), nb + rng.integers(1, 9, n)
        w = _contributions(na, da, nb, db, nb.sum() / db.sum())
        assert float(w.mean()) == pytest.approx(float(_ratio_diff(na, da, nb, db)), abs=1e-12)


def test_an_unbounded_metric_needs_dense_differences_for_an_interval() -> None:
    """`DENSE` = 20% and `SPARSE` = 10 at their boundaries: on n = 100, 19 differing
    trajectories get no interval and 20 get one; on n = 50, 10 differing (exactly
    `SPARSE`, and 20% of n) get one. The text names the test that decides alone: exact up
    to `EXACT_MAX` = 16 differing, the t-test above."""
    def effect(k: int, n: int) -> dict:
        d = np.zeros(n)
        d[:k] = np.linspace(1.0, 3.0, k)
        return paired_effect(d, np.zeros(n))

    assert math.isnan(effect(19, 100)["low"]) and "t-test" in effect(19, 100)["interval"]
    assert "exact test" in effect(16, 100)["interval"]
    assert math.isfinite(effect(20, 100)["low"])
    assert math.isfinite(effect(10, 50)["low"]) and math.isnan(effect(9, 45)["low"])


def test_the_zero_bound_names_what_it_bounds() -> None:
    """k = 0: a mean, or a ratio with equal denominators, bounds the share of trajectories
    that differ; a ratio with unequal denominators, the share of the denominator."""
    z = np.zeros(10)
    equal, unequal = np.full(10, 2.0), np.arange(1.0, 11.0)
    assert paired_effect(z, z, bound=1.0)["interval"].endswith("of trajectories differ")
    assert paired_effect(z, z, equal, equal, bound=1.0)["interval"].endswith(
        "of trajectories differ")
    assert paired_effect(z, z, unequal, unequal, bound=1.0)["interval"].endswith(
        "of the denominator is on trajectories that differ")
