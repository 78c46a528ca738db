"""Analysis: Pareto front, Sobol indices (Ishigami), robustness, bootstrap, analyze."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from test_sweep_support import write_files

from wmtsim.studies.sweeps.analysis import (
    analyze,
    bootstrap_mean,
    pareto_front,
    pareto_mask,
    point_means,
    robust_settings,
    sobol_from_blocks,
)
from wmtsim.studies.sweeps.store import load_results
from wmtsim.studies.sweeps.sweep import ParameterSpec, Sweep, design_rows, load_sweep, run_sweep


def naive_front(cost: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Undominated points, an exact duplicate only at its first occurrence."""
    n = cost.size
    return np.array([not any(cost[j] <= cost[i] and value[j] >= value[i]
                             and (cost[j] < cost[i] or value[j] > value[i])
                             for j in range(n))
                     and not any(cost[j] == cost[i] and value[j] == value[i]
                                 for j in range(i)) for i in range(n)])


def test_pareto_mask_matches_the_naive_definition() -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(1, 40))
        cost = rng.integers(0, 8, n).astype(float)  # many ties
        value = rng.integers(0, 8, n).astype(float)
        assert np.array_equal(pareto_mask(cost, value), naive_front(cost, value))


def test_pareto_front_on_a_hand_made_frame() -> None:
    frame = pl.DataFrame({
        "policy": ["wmt"] * 6 + ["linear"] * 2,
        "name": ["a", "b", "c", "d", "e", "f", "g", "h"],
        "prompt_tokens": [100.0, 200.0, 150.0, 300.0, 250.0, 100.0, 50.0, 60.0],
        "tsr": [0.5, 0.8, 0.5, 0.9, 0.7, 0.4, 0.1, 0.2],
    })
    front = pareto_front(frame, by=("policy",))
    # wmt: a (100, .5) beats c and f; b (200, .8) beats e; d (300, .9) is the best TSR.
    assert front.filter(pl.col("policy") == "wmt")["name"].to_list() == ["a", "b", "d"]
    assert front.filter(pl.col("policy") == "linear")["name"].to_list() == ["g", "h"]
    assert pareto_front(frame)["name"].to_list() == ["g", "h", "a", "b", "d"]


def ishigami(x: np.ndarray, a: float = 7.0, b: float = 0.1) -> np.ndarray:
    return np.sin(x[:, 0]) + a * np.sin(x[:, 1]) ** 2 + b * x[:, 2] ** 4 * np.sin(x[:, 0])


def test_sobol_indices_of_ishigami_from_a_sobol_design() -> None:
    specs = tuple(ParameterSpec(f"x{i}", low=-math.pi, high=math.pi) for i in (1, 2, 3))
    sweep = Sweep(name="ishigami", description="", path=None, scenarios=(), policies=("wmt",),
                  parameters=specs, kind="sobol", points=4096, trajectories=1, seed=0,
                  replicates=1)
    rows = list(design_rows(sweep))
    assert len(rows) == 4096 * 5
    x = np.array([[r.values[s.key] for s in specs] for r in rows])
    y = ishigami(x).reshape(5, 4096)  # blocks A, B, AB_1, AB_2, AB_3
    est = sobol_from_blocks(y[0], y[1], y[2:], n_resamples=300, seed=1)
    # Analytical values for a = 7, b = 0.1.
    s1 = np.array([0.3139, 0.4424, 0.0])
    st = np.array([0.5576, 0.4424, 0.2437])
    assert np.allclose(est["S1"], s1, atol=0.04)
    assert np.allclose(est["ST"], st, atol=0.04)
    for k, truth in (("S1", s1), ("ST", st)):
        assert np.all(est[f"{k}_low"] <= est[k]) and np.all(est[k] <= est[f"{k}_high"])
        assert np.all(est[f"{k}_low"] - 0.02 <= truth)
        assert np.all(truth <= est[f"{k}_high"] + 0.02)
        assert np.all(est[f"{k}_high"] - est[f"{k}_low"] < 0.15)


def test_robust_settings_pick_the_best_worst_case() -> None:
    table = pl.DataFrame({
        "row": [0, 0, 1, 1, 2, 2],
        "policy": ["wmt"] * 6,
        "scenario": ["s1", "s2"] * 3,
        "replicate": [0] * 6,
        "rho": [0.5, 0.5, 0.7, 0.7, 0.9, 0.9],
        "tsr": [0.9, 0.2, 0.6, 0.5, 0.7, 0.4],
        "prompt_tokens": [10.0, 30.0, 20.0, 25.0, 15.0, 40.0],
    })
    best = robust_settings(table, ["rho"], "tsr")
    assert best["rho"].to_list() == [0.7, 0.9, 0.5]
    assert best["worst"].to_list() == [0.5, 0.4, 0.2]
    assert best["worst_scenario"].to_list() == ["s2", "s2", "s2"]
    cheap = robust_settings(table, ["rho"], "prompt_tokens")  # lower is better
    assert cheap["rho"].to_list() == [0.7, 0.5, 0.9]


def test_bootstrap_mean_interval() -> None:
    x = np.random.default_rng(0).normal(1.0, 1.0, 2000)
    mean, lo, hi, n = bootstrap_mean(np.append(x, np.nan))
    assert n == 2000 and lo < mean < hi
    assert hi - lo == pytest.approx(2 * 1.96 / math.sqrt(2000), rel=0.15)


def test_analyze_a_tiny_sweep(tmp_path: Path) -> None:
    sweep = load_sweep(write_files(tmp_path))
    run_sweep(sweep, tmp_path / "out", progress=False)
    results = load_results(tmp_path / "out")
    means = point_means(results, ("tsr", "prompt_tokens"), n_resamples=200)
    assert means.height == 12
    assert (means["tsr_low"] <= means["tsr"]).all() and (means["tsr"] <= means["tsr_high"]).all()
    assert np.allclose(means.sort("key")["tsr"], results.points.sort("key")["tsr"])
    written = analyze(tmp_path / "out", tmp_path / "analysis", n_resamples=200)
    for name in ("point_means", "pareto", "robust"):
        assert Path(str(written[name])).exists()
    for chart in ("pareto_chart", "heatmap_chart"):
        files = written[chart]
        assert isinstance(files, list)
        assert all(f.stat().st_size > 0 for f in files)
        assert [f.suffix for f in files] == [".html", ".png"]


def test_sobol_sweep_end_to_end(tmp_path: Path) -> None:
    text = ('scenario = "tiny.toml"\npolicies = ["wmt"]\n'
            "[parameters.rho]\nlow = 0.5\nhigh = 0.99\n"
            "[parameters.M]\nlow = 1\nhigh = 6\ninteger = true\n"
            '[design]\nkind = "sobol"\npoints = 8\ntrajectories = 20\nseed = 2\n')
    sweep = load_sweep(write_files(tmp_path, text, name="sobol.toml"))
    run_sweep(sweep, tmp_path / "out", progress=False)
    written = analyze(tmp_path / "out", n_resamples=100)
    sobol = pl.read_csv(written["sobol"])  # type: ignore[arg-type]
    assert sobol["parameter"].to_list() == ["rho", "M"]
    assert {"S1", "S1_low", "S1_high", "ST", "ST_low", "ST_high"} <= set(sobol.columns)
    assert all(Path(f).exists() for f in written["sensitivity_chart"])  # type: ignore[union-attr]


def test_a_sobol_sweep_with_scramblings_reports_the_mean_functions_indices(
        tmp_path: Path) -> None:
    """With R ≥ 2 scramblings `analyze` reads each point's trajectories: the indices are
    the mean function's (`sobol_mean_function`, each scrambling on its own trajectories)
    and ``noise_share`` is computed and written, equal to the direct call's."""
    from wmtsim.studies.sweeps.analysis import sobol_indices
    from wmtsim.studies.sweeps.store import load_results

    text = ('scenario = "tiny.toml"\npolicies = ["wmt"]\n'
            "[parameters.rho]\nlow = 0.5\nhigh = 0.99\n"
            "[parameters.budget]\nlow = 64\nhigh = 4096\nlog = true\ninteger = true\n"
            '[design]\nkind = "sobol"\npoints = 8\nscramblings = 4\ntrajectories = 200\n'
            "seed = 2\n")
    sweep = load_sweep(write_files(tmp_path, text, name="sobol.toml"))
    run_sweep(sweep, tmp_path / "out", progress=False)
    written = analyze(tmp_path / "out", n_resamples=100)
    sobol = pl.read_csv(written["sobol"])  # type: ignore[arg-type]
    # Enough trajectories that the mean function varies beyond its noise (a flatter
    # design is reported as flat: `sobol_mean_function`).
    assert sobol["method"][0] == ("mean function: Fieller over 4 scramblings, each on "
                                  "its own 50 trajectories, noise removed")
    share = sobol["noise_share"].to_numpy()
    assert np.all(np.isfinite(share)) and np.all(share == share[0])
    assert 0 <= share[0] < 1
    again = sobol_indices(load_results(tmp_path / "out"), "tsr")
    assert np.allclose(again["noise_share"].to_numpy(), share)
    assert (sobol["ST_low"] >= 0).all() and (sobol["ST_high"] <= 1).all()
