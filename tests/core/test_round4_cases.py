"""Hand-derived cases for issue 49's statistics that the mutation run's quick subset left
unpinned (docs/testing.md, "Round four's statistics"): the binary grid test's mid-p on
ties and its standard errors, grid_test at its smallest sizes, and the calibration's
predictive cell at one replicate and on ties."""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.grid_test import binary_test, grid_test
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
