"""Morris screening (`wmtsim.studies.sweeps.screen`): the design, the estimator on a function
with known effects, and a screening that names inert and unread knobs."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wmtsim.studies.scenarios.scenario import load_scenario
from wmtsim.studies.sweeps.knob_ranges import ranges_for
from wmtsim.studies.sweeps.screen import (
    elementary_effects,
    morris_design,
    morris_indices,
    screen,
)


def test_each_trajectory_moves_each_parameter_once_by_delta() -> None:
    d, r = 5, 7
    design = morris_design(d, r, seed=3)
    assert design.x.shape == (r, d + 1, d)
    assert ((design.x >= 0) & (design.x <= 1)).all()
    for k in range(r):
        assert sorted(design.moved[k]) == list(range(d))
        steps = np.diff(design.x[k], axis=0)
        for s in range(d):
            changed = np.flatnonzero(steps[s])
            assert list(changed) == [design.moved[k, s]]
            assert np.isclose(steps[s, changed[0]], design.step[k, s])
            assert np.isclose(abs(design.step[k, s]), 2 / 3)


def test_linear_effects_are_recovered_exactly() -> None:
    """f = 3 x0 − 2 x1 + 0 x2 + x0 x3 (an interaction): μ* = |c| for the linear terms, 0
    for the inert one, σ > 0 only where there is an interaction."""
    design = morris_design(4, 20, seed=0)
    x = design.x
    y = 3 * x[..., 0] - 2 * x[..., 1] + x[..., 0] * x[..., 3]
    ee = elementary_effects(y, design)
    idx = morris_indices(ee)
    assert np.isclose(idx["mu_star"][1], 2.0) and np.isclose(idx["mu"][1], -2.0)
    assert idx["mu_star"][2] == 0.0
    assert idx["sigma"][1] < 1e-12 and idx["sigma"][3] > 0.1
    assert idx["mu_star_low"][0] <= idx["mu_star"][0] <= idx["mu_star_high"][0]


def test_screen_names_unread_inert_and_moving_knobs() -> None:
    sc = load_scenario("paper_poisoning")
    res = screen([sc], "wmt", ranges_for(["rho", "rho_g", "u_init_root", "tau_obs"]),
                 r=3, n=40, metrics=("tsr", "prompt_tokens"))
    t = res.table
    assert set(t["metric"]) == {"tsr", "prompt_tokens"}
    verdict = {(r["parameter"], r["metric"]): r["verdict"] for r in t.iter_rows(named=True)}
    assert verdict[("params.rho_g", "tsr")] == "not read"  # no global memories here
    # the root's initial score never enters a selection (the root is always in context)
    assert verdict[("params.u_init_root", "tsr")] == "inert"
    # r · (d + 1) points for the three live knobs; trajectories that meet share a key
    assert 3 < res.points <= 3 * 4
    moving = t.filter(pl.col("parameter").is_in(["params.rho", "params.tau_obs"]))
    assert (moving["mu_star"] > 0).any()
    assert set(moving["verdict"]) <= {"matters", "within noise", "inert"}
    # "matters" is the corrected test: Benjamini–Hochberg over the screening's
    # tests (the three read knobs × two metrics; "not read" is not a test)
    read = t.filter(pl.col("verdict") != "not read")
    assert read["p"].is_finite().all() and t.filter(pl.col("verdict") == "not read")[
        "p"].is_nan().all()
    assert set(t["family"]) == {"Benjamini–Hochberg over the screening's 6 tests at 5%"}
    for row in read.iter_rows(named=True):
        if row["verdict"] != "inert":
            assert (row["verdict"] == "matters") == (row["p_adjusted"] <= 0.05)


def test_morris_test_on_hand_cases() -> None:
    """A knob with every effect 0 gets p = 1; a step that moves every trajectory by the
    same amount is an exact effect (p = 1/(B + 1)); a missing (NaN) effect is left out."""
    from wmtsim.studies.sweeps.screen import morris_test

    e = np.zeros((2, 3, 20))
    e[1, 0] = 0.5  # knob 1 moves every trajectory by 0.5 at one step
    e[1, 1, 4] = np.nan
    p = morris_test(e, n_resamples=99)
    assert p[0] == 1.0 and p[1] == pytest.approx(1 / 100)
