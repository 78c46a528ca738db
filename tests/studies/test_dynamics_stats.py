"""The statistics of `wmtsim.studies.dynamics.dynamics` against small cases worked by hand."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from wmtsim.studies.dynamics.dynamics import kaplan_meier, median_lifetime, wilson

Z = 1.959963984540054  # the 97.5% normal quantile


def test_kaplan_meier_on_a_hand_worked_case() -> None:
    # Lifetimes: censored at 0; an event at 1; censored at 2; two events and one
    # censoring at 3. Risk sets: 6, 5, 4, 3 (censored at k stays at risk at k).
    km = kaplan_meier(np.array([0, 1, 0, 2]), np.array([1, 0, 1, 1]))
    assert km["at_risk"].to_list() == [6, 5, 4, 3]
    s = km["survival"].to_numpy()
    np.testing.assert_allclose(s, [1.0, 4 / 5, 4 / 5, 4 / 5 * 1 / 3])
    # Greenwood at k = 3: S² (1/(5·4) + 2/(3·1)).
    assert km["se"][3] == pytest.approx(math.sqrt((4 / 15) ** 2 * (1 / 20 + 2 / 3)))
    # The log-log band at k = 1: S^exp(±z σ), σ = sqrt(1/20) / |log S|.
    sigma = math.sqrt(1 / 20) / abs(math.log(0.8))
    assert km["low"][1] == pytest.approx(0.8 ** math.exp(Z * sigma))
    assert km["high"][1] == pytest.approx(0.8 ** math.exp(-Z * sigma))
    assert km["low"][1] == pytest.approx(0.2038, abs=1e-4)
    assert km["high"][1] == pytest.approx(0.9692, abs=1e-4)
    # No event yet: the band is the point.
    assert (km["low"][0], km["high"][0]) == (1.0, 1.0)
    # Median: S first <= 1/2 at k = 3; the lower band reaches 1/2 at k = 1, the upper
    # band (0.686 at k = 3) never does.
    m = median_lifetime(km)
    assert (m["median"], m["median_low"], m["n"]) == (3.0, 1.0, 6.0)
    assert math.isnan(m["median_high"])


def test_kaplan_meier_without_censoring_is_the_empirical_survival() -> None:
    life = np.array([0, 1, 1, 2, 2, 2, 5])
    events = np.bincount(life, minlength=6)
    km = kaplan_meier(events, np.zeros(6, np.int64))
    expected = [(life > k).mean() for k in range(6)]
    np.testing.assert_allclose(km["survival"].to_numpy(), expected)
    assert km["survival"][5] == 0.0 and km["low"][5] == 0.0  # everyone gone: the point
    assert median_lifetime(km)["median"] == 2.0


def test_kaplan_meier_of_nothing() -> None:
    km = kaplan_meier(np.zeros(3, np.int64), np.zeros(3, np.int64))
    assert km.height == 0
    assert math.isnan(median_lifetime(km)["median"])


def test_wilson_on_a_hand_worked_case() -> None:
    low, high = wilson(np.array([3]), np.array([10]))
    # p = 0.3, n = 10: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n).
    centre = (0.3 + Z * Z / 20) / (1 + Z * Z / 10)
    half = Z * math.sqrt(0.021 + Z * Z / 400) / (1 + Z * Z / 10)
    assert (low[0], high[0]) == (pytest.approx(centre - half), pytest.approx(centre + half))
    assert low[0] == pytest.approx(0.1078, abs=1e-4)


def test_the_tables_of_a_population() -> None:
    from wmtsim.core.params import Params
    from wmtsim.core.stubs import Stubs
    from wmtsim.core.world_spec import PoisonSpec, WorldSpec
    from wmtsim.studies.dynamics.dynamics import population_dynamics
    from wmtsim.studies.scenarios.scenario import Scenario

    s = Scenario("t", "", WorldSpec(poison=(PoisonSpec("plausible", p_supersede=0.5),
                                            PoisonSpec("failed"))),
                 Stubs(), Params(), ("a2_no_controller", "wmt"), 300, 0)
    rep = population_dynamics(s)
    fates = rep.fates.filter(pl.col("kind") == "all")
    for policy in ("a2_no_controller", "wmt"):
        f = fates.filter(pl.col("policy") == policy)
        assert f["share"].sum() == pytest.approx(1.0)
        assert f["poisons"].sum() == 600
    # A2 keeps every poison to the end; Full WMT supersedes some and folds the rest away.
    a2 = fates.filter(pl.col("policy") == "a2_no_controller")
    assert a2.filter(pl.col("fate") == "eligible_at_end")["share"][0] == 1.0
    wmt = fates.filter(pl.col("policy") == "wmt")
    assert wmt.filter(pl.col("fate") == "superseded")["poisons"][0] > 0
    life = rep.lifetimes.filter(pl.col("kind") == "all")
    assert math.isnan(life.filter(pl.col("policy") == "a2_no_controller")["median"][0])
    assert life.filter(pl.col("policy") == "wmt")["median"][0] < 10
    assert set(rep.spread["policy"]) == {"a2_no_controller", "wmt"}
    assert rep.steps["prompts"].sum() == 2 * rep.steps.filter(
        pl.col("policy") == "wmt")["prompts"].sum()


def test_a_scenario_without_poison_gives_empty_tables() -> None:
    from wmtsim.studies.dynamics.dynamics import population_dynamics
    from wmtsim.studies.scenarios.scenario import load_scenario

    rep = population_dynamics(load_scenario("gaia_like"), ("wmt",), 20, 0)
    assert rep.fates.is_empty() and rep.lifetimes.is_empty()
    assert "median" in rep.lifetimes.columns and "share" in rep.fates.columns
    assert rep.spread["contaminated"][0] == 0
