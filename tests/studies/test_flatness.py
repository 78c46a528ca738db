"""Flat means flat: the flat / not-flat decision is a paired global
test across the grid on common random numbers (`wmtsim.core.grid_test.grid_test`), the
same in `wmtsim analyze`, `wmtsim claims`, the dashboard and the docs.

Constructed cases with known answers: a flat grid (the test rejects at about its level),
a small effect that only the pairing can see (per-point intervals read it as flat; the
paired test finds it and the point), and a configuration that reads none of the swept
knobs (identical values at every point: p = 1)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats
from typer.testing import CliRunner

from wmtsim.core.grid_test import grid_test
from wmtsim.interfaces.cli.main import app
from wmtsim.studies.sweeps.flatness import flatness, flatness_text, margin_flatness


def _per_point_chi2(x: np.ndarray) -> float:
    """The test the sweep pages used before: a χ² test of equal means from each point's
    own interval, ignoring the pairing (precision-weighted, k − 1 degrees of freedom)."""
    m = x.mean(axis=1)
    se = x.std(axis=1, ddof=1) / math.sqrt(x.shape[1])
    w = 1 / se**2
    q = float(np.sum(w * (m - np.sum(w * m) / w.sum()) ** 2))
    return float(stats.chi2.sf(q, x.shape[0] - 1))


def _crn(rng: np.random.Generator, k: int, n: int, effect: np.ndarray) -> np.ndarray:
    """k points on n shared trajectories: a large common part per trajectory (what common
    random numbers share), the points' effects, and a little independent noise."""
    common = rng.normal(0.0, 1.0, n)
    return common + effect[:, None] + rng.normal(0.0, 0.05, (k, n))


def test_a_flat_grid_is_rejected_at_about_the_level() -> None:
    rng = np.random.default_rng(7)
    k, n, runs = 6, 120, 120
    rejected = [grid_test(_crn(rng, k, n, np.zeros(k)), n_resamples=1000, seed=s)["p"] <= 0.05
                for s in range(runs)]
    rate = float(np.mean(rejected))
    # nominal 5%; ± 4% is two Monte Carlo standard errors at 120 runs
    assert 0.005 <= rate <= 0.11, rate


def test_a_small_effect_visible_only_through_the_pairing() -> None:
    rng = np.random.default_rng(3)
    k, n = 8, 300
    effect = np.zeros(k)
    effect[5] = 0.03  # 0.03 against a between-trajectory spread of 1
    x = _crn(rng, k, n, effect)
    assert _per_point_chi2(x) > 0.5  # per-point intervals: "flat"
    r = grid_test(x)
    # point 5 is the one found (others may follow: they sit 0.03/8 below the grand mean)
    assert r["p"] < 0.001 and r["largest"] == 5 and 1 <= r["deviating"] <= 2
    assert r["points"] == k and r["n"] == n and r["resamples"] >= 2000
    assert r["means"][5] - np.delete(r["means"], 5).mean() == pytest.approx(0.03, abs=0.01)
    # the same effect without common random numbers is invisible at this n
    unpaired = effect[:, None] + rng.normal(0.0, 1.0, (k, n))
    assert grid_test(unpaired)["p"] > 0.01


def test_identical_points_are_flat_and_a_constant_shift_is_not() -> None:
    x = np.tile(np.random.default_rng(1).random(50), (4, 1))
    r = grid_test(x)
    assert r["p"] == 1.0 and r["statistic"] == 0.0 and r["deviating"] == 0
    x[2] += 0.01  # the same shift on every trajectory: exact, whatever the spread
    assert grid_test(x)["p"] == pytest.approx(1 / (r["resamples"] + 1))
    x[1, 3] = np.nan  # a trajectory missing at one point is left out everywhere
    assert grid_test(x)["n"] == 49
    with pytest.raises(ValueError, match="points, trajectories"):
        grid_test(np.zeros(5))


def test_margin_flatness_is_one_family_over_the_claims() -> None:
    rng = np.random.default_rng(2)
    common = rng.normal(0, 1, 200)
    flat = [(c, common + rng.normal(0, 0.05, 200)) for c in range(4)]
    moving = [(c, common + 0.05 * c + rng.normal(0, 0.05, 200)) for c in range(4)]
    t = margin_flatness({"flat claim": flat, "moving claim": moving})
    rows = {r["policy"]: r for r in t.iter_rows(named=True)}
    assert rows["flat claim"]["flat"] and not rows["moving claim"]["flat"]
    assert rows["moving claim"]["best_row"] == 3
    assert "Holm over 2 claims" in rows["flat claim"]["family"]
    assert "no significant difference across the grid" in flatness_text(rows["flat claim"])
    assert "differs significantly" in flatness_text(rows["moving claim"])


def test_analyze_reads_the_paired_test(tmp_path: Path) -> None:
    """On a sweep: linear reads neither ρ nor M (identical trajectories at every point:
    flat, p = 1, no best named); the table and `analyze`'s words come from one test."""
    from wmtsim.studies.sweeps.store import load_results
    from wmtsim.studies.sweeps.sweep import load_sweep, run_sweep

    (tmp_path / "g.toml").write_text(
        'scenario = "decay_pressure"\npolicies = ["linear", "wmt"]\n'
        '[parameters.rho]\nvalues = [0.5, 0.99]\n[parameters.M]\nvalues = [1, 6]\n'
        '[design]\nkind = "grid"\ntrajectories = 60\nseed = 0\n')
    run_sweep(load_sweep(tmp_path / "g.toml"), tmp_path / "s", progress=False)
    t = flatness(load_results(tmp_path / "s"), "accuracy")
    rows = {r["policy"]: r for r in t.iter_rows(named=True)}
    assert rows["linear"]["p"] == 1.0 and rows["linear"]["flat"]
    assert rows["wmt"]["points"] == 4 and rows["wmt"]["n"] == 60
    assert "Holm over 2 configurations" in rows["wmt"]["family"]
    res = CliRunner().invoke(app, ["analyze", str(tmp_path / "s"), "--metric", "accuracy",
                                   "--no-charts", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert ("ACCURACY of linear: no significant difference across the grid" in said)
    stored = pl.read_parquet(tmp_path / "a" / "flatness.parquet")  # accuracy, and TSR
    assert set(stored["metric"]) == {"accuracy", "tsr"}
    assert stored.filter(pl.col("metric") == "accuracy")["p"].to_list() == t["p"].to_list()
    wmt = flatness_text(rows["wmt"]).split(";")[0]
    assert " ".join(wmt.split()) in said
