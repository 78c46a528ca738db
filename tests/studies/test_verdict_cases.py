"""Hand-worked cases of the claim tests (`wmtsim.core.verdicts`) and the paper's range
checks (`wmtsim.studies.compare.paper_checks.range_test`), issue 30: defaults that decide what is
computed, a rival whose value is undefined, and the TOST at the ends of its range. The
expected values are derived in the docstrings."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from wmtsim.core.inference import TIE
from wmtsim.core.verdicts import check_claim, pair_test, read_family
from wmtsim.studies.compare.paper_checks import range_test


def test_claim_tests_compute_no_interval_unless_asked() -> None:
    """A claim's verdict needs p-values only: `pair_test` and `check_claim` skip the
    interval (and its bootstrap) by default — low/high NaN, no margin interval fields."""
    rng = np.random.default_rng(1)
    x, y = rng.normal(1.0, 1.0, 60), rng.normal(0.0, 1.0, 60)
    r = pair_test(x, y, 1)
    assert math.isnan(r["low"]) and math.isnan(r["high"]) and r["resamples"] == 0
    c = check_claim("s", ["o"], 1, {"s": x, "o": y})
    assert "margin_low" not in c and "margin_high" not in c
    c = check_claim("s", ["o"], 1, {"s": x, "o": y}, interval=True)
    assert c["margin_low"] < c["margin"] < c["margin_high"]


def test_a_rival_with_an_undefined_value_never_lets_a_claim_hold() -> None:
    """The rival's pooled ratio is 3/0 (every denominator 0): undefined, so the claim
    "s beats o" cannot be shown: p_holds = 1, p_fails = 1, p = 1, no margin, verdict tie.
    (Skipping the rival instead would leave p_holds at its start, 0: "holds".)"""
    s = (np.array([1.0, 1.0, 1.0]), np.array([2.0, 2.0, 2.0]))
    o = (np.array([1.0, 1.0, 1.0]), np.zeros(3))
    c = check_claim("s", ["o"], 1, {"s": s, "o": o})
    assert c["n"] == 3 and c["p_holds"] == 1.0 and c["p"] == 1.0
    assert math.isnan(c["margin"])
    (row,) = read_family([c])
    assert row["verdict"] == TIE and not row["significant"]


def test_range_test_se_margin_and_p_by_hand() -> None:
    """num (2, 1), den (1, 3): θ = 3/4, mean(den) = 2, z = ((2 − 3/4), (1 − 9/4)) / 2 =
    (0.625, −0.625), se = |z_1 − z_2| / 2 = 0.625 (a sign slip or θ / den in z: 0.125).
    Range [0.5, 0.8]: margin = min(0.75 − 0.5, 0.8 − 0.75) = 0.05; p_holds (inside) =
    max(Φ(−(0.75 − 0.5)/0.625), Φ((0.75 − 0.8)/0.625)) = max(Φ(−0.4), Φ(−0.08)) =
    max(0.34458, 0.46812) = 0.46812 (normal table); p_fails = min(1, 2 · min(Φ(0.4),
    Φ(0.08))) = min(1, 2 · 0.53188) = 1. Range [0.7, 0.9]: margin = min(0.05, 0.15) =
    0.05 (the low side is the near one)."""
    num, den = np.array([2.0, 1.0]), np.array([1.0, 3.0])
    r = range_test(num, den, 0.5, 0.8)
    assert r["value"] == pytest.approx(0.75) and r["se"] == pytest.approx(0.625)
    assert r["n"] == 2 and r["margin"] == pytest.approx(0.05)
    assert r["p_holds"] == pytest.approx(0.46812, abs=1e-5)
    assert r["p_fails"] == 1.0
    r = range_test(num, den, 0.7, 0.9)
    assert r["margin"] == pytest.approx(0.05)


@pytest.mark.parametrize(("low", "high", "inside"), [
    (0.5, 0.6, True),    # θ exactly at the low end
    (0.4, 0.5, True),    # θ exactly at the high end
    (0.5, 0.5, True),    # a range of one point, θ on it
    (0.51, 0.6, False),
    (0.4, 0.49, False),
])
def test_range_test_without_spread_at_the_ends(low: float, high: float,
                                               inside: bool) -> None:
    """num (1, 2), den (2, 4): θ = 3/6 = 0.5 exactly and num = θ · den on both
    trajectories, so z = 0 and se = 0: no normal theory, the answer is certain — inside
    (low ≤ θ ≤ high, ends included): p_holds 0, p_fails 1; outside: the reverse."""
    r = range_test(np.array([1.0, 2.0]), np.array([2.0, 4.0]), low, high)
    assert r["value"] == 0.5 and r["se"] == 0.0
    assert (r["p_holds"], r["p_fails"]) == ((0.0, 1.0) if inside else (1.0, 0.0))


def test_range_test_of_one_trajectory_has_no_se_and_no_warning() -> None:
    """n = 1: se NaN (no spread to estimate, and numpy is not asked: it would warn
    "Degrees of freedom <= 0"); θ = 1/2 inside [0.4, 0.6] is then read as certain."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = range_test(np.array([1.0]), np.array([2.0]), 0.4, 0.6)
    assert r["n"] == 1 and math.isnan(r["se"]) and r["p_holds"] == 0.0


def test_a_paired_difference_no_trajectory_defines_is_a_dash() -> None:
    """`compare gaia_like` (its own help example) crashed: a metric no trajectory defines
    (CCR without memory) has n = 0, and the rule of three divided by it."""
    from wmtsim.core.verdicts import effect_text

    assert effect_text({"mean": 0.0, "n": 0, "n_nonzero": 0, "high": float("nan")}) == (
        "– (defined on no trajectory)")
