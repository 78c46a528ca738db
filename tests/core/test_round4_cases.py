"""Hand-derived cases for issue 49's statistics that the mutation run's quick subset left
unpinned (docs/testing.md, "Round four's statistics"): the binary grid test's mid-p on
ties and its standard errors, grid_test at its smallest sizes, the calibration's
predictive cell at one replicate and on ties, and the studentisation inside grid_test's
and Morris's bootstraps with their zero-spread rules."""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.grid_test import _studentised_max, binary_test, grid_test
from wmtsim.studies.calibration.inference import prediction_interval, predictive_cell


def test_binary_mid_p_counts_ties_half() -> None:
    """k = 2 and one discordant trajectory: every shuffle gives the same Q (the columns'
    totals only swap), so each of the B shuffles and the data tie: p_Q = ((B + 1)/2) /
    (B + 1) = 1/2 exactly; McNemar's mid-p of (1, 0) is 2 · ½ · ½ = 1/2."""
    x = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    r = binary_test(x)
    assert r["p_shuffle"] == 0.5
    assert math.isclose(r["p_pair"], 0.5) and math.isclose(r["p"], 0.5)


def test_binary_standard_errors_are_the_contrasts() -> None:
    """Two points, four trajectories, one discordant: contrasts ±(½, 0, 0, 0); their SD
    (ddof 1) is ½ · √(1/4 · 3/4 · 4/3) = 1/4, so se = (1/4) / √4 = 1/8 at each point."""
    x = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    np.testing.assert_allclose(grid_test(x)["se"], [0.125, 0.125])


def test_grid_test_at_its_smallest_sizes() -> None:
    """Two points on two trajectories is the smallest grid tested; one point or one
    trajectory is not a test (p NaN)."""
    assert math.isfinite(grid_test(np.array([[0.1, 0.5], [0.3, 0.2]]))["p"])
    assert math.isfinite(grid_test(np.array([[1.0, 0.0], [0.0, 0.0]]))["p"])
    assert math.isnan(grid_test(np.array([[0.1, 0.5]]))["p"])
    assert math.isnan(grid_test(np.array([[0.1], [0.3]]))["p"])


def test_prediction_interval_needs_two_replicates() -> None:
    assert prediction_interval(0.3, 0.1, 1) == (-math.inf, math.inf)


def test_predictive_cell_of_one_replicate_uses_the_floor() -> None:
    """One replicate has no SD of its own: the cell's SD is the metric's floor (0.005 for
    a rate) and its interval is unbounded."""
    cell = predictive_cell(np.array([0.4]), 0.41, "asr")
    assert cell["sd"] == 0.005 and cell["low"] == -math.inf and cell["inside"]
    assert math.isclose(float(cell["z"]), 2.0)


def test_predictive_quantile_counts_ties_half() -> None:
    """Replicates 0.1, 0.2, 0.2, 0.3 and the paper at 0.2: one below, two tied, so the
    predictive quantile is (1 + ½ · 2) / 4 = 1/2; at 0.3: (3 + ½) / 4 = 7/8."""
    v = np.array([0.1, 0.2, 0.2, 0.3])
    assert predictive_cell(v, 0.2, "asr")["quantile"] == 0.5
    assert predictive_cell(v, 0.3, "asr")["quantile"] == 0.875


def test_cochran_q_by_hand_and_the_point_furthest_from_the_mean() -> None:
    """C = (2, 1, 0) successes at the points, R = (2, 1, 0) of the trajectories, N = 3:
    Q = (k − 1)(k ΣC² − N²) / (k N − ΣR²) = 2 (15 − 9) / (9 − 5) = 3. A grid whose lowest
    point is furthest from the mean names that point ``largest``."""
    r = binary_test(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    assert math.isclose(r["statistic"], 3.0)
    x = np.zeros((4, 10))
    x[0, 0] = 1.0
    x[1:, :2] = 1.0
    assert binary_test(x)["largest"] == 0


def test_prediction_interval_is_finite_from_two_replicates() -> None:
    low, high = prediction_interval(0.3, 0.1, 2)
    assert math.isfinite(low) and math.isfinite(high)


def test_a_cell_without_values_is_not_inside() -> None:
    assert predictive_cell(np.array([math.nan]), 0.3, "asr")["inside"] is False


def test_morris_p_values_of_a_clear_effect_and_of_none() -> None:
    """A knob whose every step moves the mean by 1 with noise of SD 0.1 on 40
    trajectories: no resample's deviation reaches T (p = 1/(B + 1) exactly); a knob
    with no effect (noise only) gets a p-value in (0, 1], far from 0."""
    from wmtsim.studies.sweeps.screen import morris_test

    rng = np.random.default_rng(1)
    e = np.stack([1.0 + 0.1 * rng.normal(size=(4, 40)), 0.1 * rng.normal(size=(4, 40))])
    p = morris_test(e, n_resamples=999, seed=0)
    assert p[0] == 1 / 1000
    assert 0.05 < p[1] <= 1.0, p


# The studentisation inside the two bootstraps and its zero-spread rules (the survivors of
# the round4 mutation group that were not equivalent): each value below is derived by hand.

_C = np.array([[1.0, 3.0, 2.0, 2.0], [-1.0, -3.0, -2.0, -2.0]])  # contrasts, k = 2, n = 4
_D = np.array([2.0, -2.0])  # their means
_SE = np.array([0.5, 0.5])  # the sample's se (any positive value: used only as fallback)


def test_studentised_max_of_one_resample_by_hand() -> None:
    """A resample drawing trajectory 0 three times and trajectory 1 once (weights ¾, ¼):
    row 0's mean is ¾ · 1 + ¼ · 3 = 1.5, E[c²] = ¾ · 1 + ¼ · 9 = 3, so the variance is
    (3 − 1.5²) · n/(n − 1) = 0.75 · 4/3 = 1 and se* = √(1/4) = ½; |1.5 − 2| / ½ = 1 (row 1
    is the mirror image). A variance of E[c²] + m² (7: t = 0.378), E[c²] − m/m (8/3:
    t = 0.612) or with n/(n + 1) (0.6: t = 1.291) gives another number."""
    w = np.array([[0.75, 0.25, 0.0, 0.0]])
    assert math.isclose(float(_studentised_max(w, _C, _D, _SE)[0]), 1.0, abs_tol=1e-12)


def test_studentised_max_resample_without_spread_uses_the_sample_se() -> None:
    """A resample drawing trajectory 0 four times has no spread (variance 1 − 1² = 0): it
    says nothing of the spread, so it is scaled by the sample's se = ½ and gives
    |1 − 2| / ½ = 2. Keeping the resample's own scale 0 (``scale >= 0``) would make it
    add 0 instead."""
    w = np.array([[1.0, 0.0, 0.0, 0.0]])
    assert float(_studentised_max(w, _C, _D, _SE)[0]) == 2.0


def test_studentised_max_contrast_without_any_spread_adds_nothing() -> None:
    """A contrast with no spread in the resample nor in the sample (se 0) adds 0 whatever
    its deviation (the rule as documented), so the max is row 1's 1 (as in the first
    case), not row 0's |0.5 − (−2)| = 2.5 divided by a stand-in scale of 1. From
    `grid_test` such a contrast's deviation is 0 up to rounding: there this rule only
    keeps rounding residue out of T*."""
    c = np.array([[0.5, 0.5, 0.5, 0.5], [1.0, 3.0, 2.0, 2.0]])
    w = np.array([[0.75, 0.25, 0.0, 0.0]])
    t = _studentised_max(w, c, np.array([-2.0, 2.0]), np.array([0.0, 0.5]))
    assert math.isclose(float(t[0]), 1.0, abs_tol=1e-12)


def test_grid_test_point_at_the_mean_divides_by_nothing() -> None:
    """Point 0 is always the trajectories' mean (points 1 and 2 mirror each other), so its
    contrast is 0 with no spread: se = 0, and it must add 0 to T and to every T* without
    a 0/0 (floating-point errors raised here; a division by its zero scale, even if
    masked afterwards, raises). Point 1's contrasts are 1, 2, 3, 5: d = 2.75, sample
    variance 8.75/3, se = √(8.75/12), T = 2.75 / se; the tie with point 2 names point 1."""
    x = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 5.0], [-1.0, -2.0, -3.0, -5.0]])
    with np.errstate(divide="raise", invalid="raise"):
        r = grid_test(x)
    assert r["se"][0] == 0.0 and r["largest"] == 1
    assert math.isclose(r["statistic"], 2.75 / math.sqrt(8.75 / 12), rel_tol=1e-12)


def test_grid_test_too_small_names_no_point() -> None:
    """One point or one trajectory is not a test: no point is named (``largest`` = −1,
    the sentinel, not point 1) and none deviates."""
    for x in (np.array([[0.1, 0.5]]), np.array([[0.1], [0.3]])):
        r = grid_test(x)
        assert r["largest"] == -1 and r["deviating"] == 0


def test_morris_two_trajectories_by_hand() -> None:
    """One step, two trajectories: a resample either draws both (mean = the sample's,
    T* = 0) or one trajectory twice (no spread: scaled by the sample's se, T* = 1, as
    (e_t − m)² = se² = var here).

    Knob 0, effects 1 and 3: m = 2, variance E[e²] − m² = 5 − 4 = 1, se = √(1 · 2/1 / 2)
    = 1, T = 4 > 1 ≥ every T*, so p = 1/(B + 1) exactly. A variance of E[e²] + m² gives
    T = 4/9, and the resamples of trajectory 0 alone (T* = 1/2) push p to about ¼.

    Knob 1, effects 1 and −3: m = −1, variance 5 − 1 = 4, se = 2, T = 1/4, so p =
    (1 + #one-trajectory resamples) / (B + 1), about ½. Keeping a resample's own zero
    scale (``se >= 0``) makes those T* 0 and p = 1/(B + 1)."""
    from wmtsim.studies.sweeps.screen import morris_test

    p = morris_test(np.array([[[1.0, 3.0]], [[1.0, -3.0]]]), n_resamples=999, seed=0)
    assert p[0] == 1 / 1000
    assert 0.4 < p[1] < 0.6, p


def test_morris_constant_rounding_sized_effect_is_no_effect() -> None:
    """Every effect 2⁻⁴⁵ (≈ 3e-14, below the exact-effect tolerance 1e-12; a power of two,
    so every mean and variance is exact): no spread (variance 2⁻⁹⁰ − 2⁻⁹⁰ = 0) and no
    move, so the step adds 0, T = 0 and p = 1. Letting a zero scale through
    (``scale >= 0``: the squared deviation 2⁻⁹⁰ added unscaled) gives T > 0 = every T*,
    so p = 1/(B + 1): a knob that moves nothing would "matter"."""
    from wmtsim.studies.sweeps.screen import morris_test

    assert morris_test(np.full((1, 1, 4), 2.0**-45), n_resamples=99)[0] == 1.0


def test_morris_step_without_spread_divides_by_nothing() -> None:
    """Knob 0's effects are all 0 (neither moves nor spreads: p = 1); its zero scale must
    not be divided by, even where the result is masked afterwards (floating-point errors
    raised here)."""
    from wmtsim.studies.sweeps.screen import morris_test

    e = np.array([[[0.0, 0.0, 0.0, 0.0]], [[1.0, 2.0, 3.0, 4.0]]])
    with np.errstate(divide="raise", invalid="raise"):
        p = morris_test(e, n_resamples=99)
    assert p[0] == 1.0


def test_rounding_sized_differences_are_not_called_significant() -> None:
    """Two grid points 3e-14 apart on every trajectory, and a knob whose every effect is
    1e-13: differences within rounding of 0, whose own spread is rounding too. Each is no
    effect (p = 1), where studentising by that spread gave p = 0.047 and p = 0.01."""
    import numpy as np

    from wmtsim.core.grid_test import grid_test
    from wmtsim.studies.sweeps.screen import morris_test

    x = np.vstack([np.arange(7.0) * 0.1, np.arange(7.0) * 0.1 + 3e-14])
    assert grid_test(x, n_resamples=199)["p"] == 1.0
    assert morris_test(np.full((1, 1, 10), 1e-13), n_resamples=99)[0] == 1.0
    assert morris_test(np.full((1, 1, 7), 7.1e-15), n_resamples=99)[0] == 1.0
    # a real effect of the same shape is still exact (p = 1 / (B + 1))
    assert morris_test(np.full((1, 1, 10), 0.5), n_resamples=99)[0] == 0.01
