"""Coverage checks of the intervals and tests (docs/statistics.md), at CI sizes: a null,
a known effect, a rare effect, a pooled ratio, the corrections, and Sobol indices of
Ishigami against its analytic values. The full study is scripts/coverage_study.py."""

from __future__ import annotations

import numpy as np
import pytest

from wmtsim.core.inference import (
    FAILS,
    HOLDS,
    HOLDS_NS,
    TIE,
    adjust,
    paired_effect,
    resamples_for,
    verdict,
)
from wmtsim.studies.sweeps.sobol import ishigami, ishigami_indices, sobol_replicated


def test_resamples_grow_with_the_quantile() -> None:
    assert resamples_for(0.05) == 2000
    assert resamples_for(0.05 / 8) >= 50 / (0.05 / 16)


def test_null_effect_prints_the_rule_of_three_not_zero_width() -> None:
    e = paired_effect(np.zeros(400), np.zeros(400), bound=1.0)
    assert e["n_nonzero"] == 0 and e["p"] == 1.0
    assert e["low"] == pytest.approx(-3 / 400) and e["high"] == pytest.approx(3 / 400)


def test_rare_effect_is_tested_exactly_and_not_significant_on_four() -> None:
    a, b = np.zeros(400), np.zeros(400)
    a[:4] = 1.0  # all positive: the sign test, p = 2 / 2^4
    e = paired_effect(a, b, bound=1.0)
    assert e["n_nonzero"] == 4 and e["p"] == pytest.approx(0.125)
    assert e["test"].startswith("exact") and e["low"] < 0 < e["high"]


def test_rare_effect_interval_covers() -> None:
    rng = np.random.default_rng(3)
    covered = 0
    runs = 200
    for _ in range(runs):  # true mean 0.01 · 0.5: rare, one-signed
        d = (rng.random(400) < 0.01) * rng.random(400)
        e = paired_effect(d, np.zeros(400), bound=1.0)
        covered += e["low"] <= 0.005 <= e["high"]
    assert covered / runs >= 0.93


@pytest.mark.parametrize("shift", [0.0, 0.25])
def test_dense_interval_and_test_cover(shift: float) -> None:
    rng = np.random.default_rng(int(shift * 100))
    runs, covered, rejected = 150, 0, 0
    for _ in range(runs):
        base = rng.normal(size=300)
        a, b = base + shift + rng.normal(size=300), base + rng.normal(size=300)
        e = paired_effect(a, b, n_resamples=1000)
        covered += e["low"] <= shift <= e["high"]
        rejected += e["p"] <= 0.05
    assert covered / runs >= 0.9
    if shift == 0.0:
        assert rejected / runs <= 0.1
    else:
        assert rejected / runs >= 0.5


def test_pooled_ratio_null_and_exact_permutation_agree_with_enumeration() -> None:
    rng = np.random.default_rng(5)
    n = 200
    den = rng.integers(1, 5, n).astype(float)
    num_a = rng.binomial(den.astype(int), 0.3).astype(float)
    num_b = num_a.copy()
    idx = rng.choice(n, 6, replace=False)
    num_b[idx] = np.maximum(0, num_b[idx] - 1)
    e = paired_effect(num_a, num_b, den, den)
    assert e["test"].startswith("exact")
    # the largest possible D (every differing trajectory on a's side) is the observed one
    k = int((num_a != num_b).sum())
    assert e["p_greater"] == pytest.approx(1 / 2**k)


def test_holm_and_bh_against_hand_values() -> None:
    p = [0.01, 0.04, 0.03, 0.2]
    assert np.allclose(adjust(p, "holm"), [0.04, 0.09, 0.09, 0.2])
    assert np.allclose(adjust(p, "bh"), [0.04, 0.16 / 3, 0.16 / 3, 0.2])
    assert np.allclose(adjust(p, "none"), p)
    with pytest.raises(ValueError, match="allowed: holm, bh, none"):
        adjust(p, "bonferonni")


def test_holm_controls_false_holds_under_a_global_null() -> None:
    rng = np.random.default_rng(8)
    worlds, false = 100, 0
    for _ in range(worlds):  # 50 null tests per world
        p = [paired_effect(rng.normal(size=100), rng.normal(size=100), interval=False)["p"]
             for _ in range(50)]
        false += bool(np.any(adjust(p, "holm") <= 0.05))
    assert false / worlds <= 0.12


def test_verdicts() -> None:
    assert verdict(0.001, 0.9, 0.1) == HOLDS
    assert verdict(0.9, 0.001, -0.1) == FAILS
    assert verdict(0.2, 0.8, 0.1) == HOLDS_NS
    assert verdict(1.0, 1.0, 0.0) == TIE
    assert verdict(0.001, 0.9, 0.1, p_adjusted=0.3) == HOLDS_NS


def test_sobol_replicate_intervals_cover_ishigami() -> None:
    s1, st = ishigami_indices()
    hits = []
    for seed in range(8):
        r = sobol_replicated(ishigami, 3, 7, replicates=8, seed=seed)
        hits += list((r["S1_low"] <= s1) & (s1 <= r["S1_high"]))
        hits += list((r["ST_low"] <= st) & (st <= r["ST_high"]))
    assert np.mean(hits) >= 0.85
    assert np.allclose(r["S1"], s1, atol=0.08) and np.allclose(r["ST"], st, atol=0.08)


def test_sweep_sobol_design_with_scramblings_covers_ishigami() -> None:
    """The sweep path: a sobol sweep file's design with R scramblings, read back by
    `sobol_table` as R replicate estimates with t intervals that cover the analytic
    indices (the single-scrambling bootstrap is labelled as such)."""
    import polars as pl

    from wmtsim.studies.sweeps.analysis import sobol_table
    from wmtsim.studies.sweeps.design import design_rows
    from wmtsim.studies.sweeps.spec import ParameterSpec, Sweep

    s1, st = ishigami_indices()
    specs = tuple(ParameterSpec(f"x{i}", low=0.0, high=1.0) for i in (1, 2, 3))
    hits = []
    for seed in range(6):
        sweep = Sweep(name="ishigami", description="", path=None, scenarios=(),
                      policies=("wmt",), parameters=specs, kind="sobol", points=128,
                      trajectories=1, seed=seed, replicates=1, scramblings=8)
        rows = list(design_rows(sweep))
        assert len(rows) == sweep.rows == 8 * 128 * 5
        assert len({r.index for r in rows}) == len(rows)
        x = np.array([[r.values[s.key] for s in specs] for r in rows])
        frame = pl.DataFrame({"policy": "wmt", "scenario": "s", "replicate": 0,
                              "block": [r.block for r in rows],
                              "base": [r.base for r in rows],
                              "block_param": [r.block_param for r in rows],
                              "f": ishigami(x)})
        out = sobol_table(frame, [s.key for s in specs], 128, "f")
        assert out["scramblings"].to_list() == [8, 8, 8]
        assert out["method"][0].startswith("replicate t")
        hits += list((out["S1_low"].to_numpy() <= s1) & (s1 <= out["S1_high"].to_numpy()))
        hits += list((out["ST_low"].to_numpy() <= st) & (st <= out["ST_high"].to_numpy()))
    assert np.mean(hits) >= 0.8
    # scrambling 0 is the design every sobol sweep had before scramblings existed, so
    # adding scramblings extends a sweep's stored points rather than replacing them
    one = Sweep(name="ishigami", description="", path=None, scenarios=(), policies=("wmt",),
                parameters=specs, kind="sobol", points=128, trajectories=1, seed=5,
                replicates=1)
    many = list(design_rows(sweep))  # seed 5, 8 scramblings
    assert [r.values for r in design_rows(one)] == [r.values for r in many[:one.rows]]
    assert [r.values for r in many[:one.rows]] != [r.values for r in many[one.rows:
                                                                         2 * one.rows]]
