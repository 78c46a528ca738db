"""Monte Carlo coverage studies, one per procedure issue 38 found short (docs/statistics.md,
"Coverage"). Each calls the project's own function on data with a known truth, is seeded,
runs in seconds, and states its Monte Carlo error: ``MC`` below is the standard error of
an estimated rate, sqrt(p (1 − p) / runs), and every assertion allows 3 of them beyond the
nominal level. Each assertion failed on the code issue 38 was filed against; the numbers
before and after are in the commit messages and docs/statistics.md.

The expensive studies (the screening atlas's family, a Sobol sweep on the simulator) are
in benchmarks/coverage.py.
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.inference import paired_effect


def mc_error(rate: float, runs: int) -> float:
    """The Monte Carlo standard error of a rate estimated from ``runs`` runs."""
    return math.sqrt(max(rate * (1 - rate), 0.05 * 0.95) / runs)


# --- 1. the zero-difference bound of a pooled ratio --------------------------------------


def pooled_zero_case(rng: np.random.Generator, p: float, n: int = 200, heavy: int = 20
                     ) -> tuple[float, dict[str, float]]:
    """A pooled rate Σ num / Σ den on n trajectories: ``heavy`` of them have denominator
    90, the rest 20 (paper_poisoning's spread). Only a heavy trajectory can differ (with
    probability p): there a succeeds on every step and b on none. The truth, conditional
    on the denominators, is p · Σ_heavy den / Σ den."""
    den = np.full(n, 20.0)
    den[:heavy] = 90.0
    differ = np.zeros(n, dtype=bool)
    differ[:heavy] = rng.random(heavy) < p
    num_a = np.where(differ, den, 0.0)
    truth = p * den[:heavy].sum() / den.sum()
    e = paired_effect(num_a, np.zeros(n), den, den, bound=1.0, n_resamples=400)
    return truth, e


def test_zero_difference_bound_of_a_pooled_ratio_covers() -> None:
    """With p = 0.05 the truth (0.0167) is above 3/n = 0.015 and no heavy trajectory
    differs in 36% of the runs: the old rule of three (± 3/n) covered 0.64; the weighted
    bound (the three largest shares of the denominator, 0.05) covers. At p = 0.15 the
    truth (0.05) sits on the weighted bound: the worst case, nominal 0.95."""
    rng = np.random.default_rng(38)
    runs = 1500
    for p in (0.05, 0.15):
        hits = []
        for _ in range(runs):
            truth, e = pooled_zero_case(rng, p)
            hits.append(e["low"] <= truth <= e["high"])
        cov = float(np.mean(hits))
        assert cov >= 0.95 - 3 * mc_error(cov, runs), (p, cov)


# --- 1. sparse effects on an unbounded metric ----------------------------------------------


def test_sparse_unbounded_effect_reports_no_interval_it_cannot_keep() -> None:
    """Prompt tokens: 1% of 400 trajectories differ by a heavy-tailed amount (lognormal,
    σ = 1.5; true mean difference 0.01 · e^1.125). No interval built from fewer than 10
    observed differences bounds such a mean; the old one, scaled by the largest observed
    difference, covered 0.3-0.6 here. Every interval reported must cover at 95%; a sparse
    effect on an unbounded metric now reports none, and its exact test keeps its size
    on the null with random signs."""
    rng = np.random.default_rng(381)
    n, runs = 400, 600
    truth = 0.01 * math.exp(1.5**2 / 2)
    reported, hits, null_rejects = 0, [], []
    for _ in range(runs):
        diff = (rng.random(n) < 0.01) * rng.lognormal(0.0, 1.5, n)
        e = paired_effect(diff, np.zeros(n))
        if 0 < e["n_nonzero"] < 10 and math.isfinite(e["low"]):
            reported += 1
            hits.append(e["low"] <= truth <= e["high"])
        signed = diff * rng.choice([-1.0, 1.0], n)
        null_rejects.append(paired_effect(signed, np.zeros(n), interval=False)["p"] <= 0.05)
    if hits:  # any interval the code reports must keep its level
        cov = float(np.mean(hits))
        assert cov >= 0.95 - 3 * mc_error(cov, len(hits)), (cov, len(hits))
    size = float(np.mean(null_rejects))
    assert size <= 0.05 + 3 * mc_error(size, runs), size


# --- 4. grid_test's size at n = 50 ---------------------------------------------------------


def test_grid_test_keeps_its_size_at_n_50() -> None:
    """8 points on 50 shared trajectories, all with the same mean: a skewed metric
    (a common lognormal part plus exponential noise) and a rate (0/1 outcomes whose
    chance the trajectory sets). With the standard errors held at the sample's, the
    bootstrap's max-t rejected 0.148 and 0.095 of these 400 flat grids; studentised
    inside the bootstrap, 0.065 and 0.068 here (± 0.012 MC), and 0.052, 0.052 (± 0.006)
    over 1500 other grids (nominal 0.05; normal data: 0.061)."""
    from wmtsim.core.inference import grid_test

    rng = np.random.default_rng(4)
    k, n, runs = 8, 50, 400
    for kind in ("skewed", "rate"):
        rejected = []
        for s in range(runs):
            common = rng.normal(0.0, 1.0, n)
            x = (np.exp(common) + rng.exponential(1.0, (k, n)) if kind == "skewed" else
                 (rng.random((k, n)) < 0.3 + 0.4 * (common > 0)).astype(float))
            rejected.append(grid_test(x, n_resamples=1000, seed=s)["p"] <= 0.05)
        size = float(np.mean(rejected))
        assert size <= 0.05 + 3 * mc_error(size, runs), (kind, size)


# --- 5. attack's reported worst case -------------------------------------------------------


def test_attack_worst_case_is_unbiased_when_nothing_beats_the_script() -> None:
    """Two attacks of the same true harm 1 − TSR = 0.3: the scripted one (trial 0) and
    one the search found; on common random numbers they agree on half the trajectories.
    The search picks on 300 search trajectories, the report reads 1000 held-out ones
    (the shipped sizes). Picking the more harmful of the two on the held-out data itself
    overstated the harm by +0.0021 (± 0.0004 MC); chosen on the search data, the held-out
    value is unbiased (bias within 3 Monte Carlo errors of 0)."""
    from wmtsim.core.metrics import N_COUNTERS, C
    from wmtsim.studies.attack import Evaluation, SearchResult, SearchSettings

    def evaluation(seed: int, fails: np.ndarray) -> Evaluation:
        counts = np.zeros((fails.size, N_COUNTERS), dtype=np.int64)
        counts[:, C.tasks] = 1
        counts[:, C.success] = ~fails
        return Evaluation("wmt", seed, counts, 0.0)

    def two_attacks(n: int) -> tuple[np.ndarray, np.ndarray]:
        u = rng.random(n)
        v = np.where(rng.random(n) < 0.5, u, rng.random(n))  # half the draws shared
        return u < 0.3, v < 0.3

    rng = np.random.default_rng(5)
    settings = SearchSettings(harm="1-tsr", n_search=300, n_holdout=1000)
    scripted, other = "scripted", "found"  # stand-ins: only their identity matters
    runs, error = 1500, []
    for _ in range(runs):
        s_search, o_search = two_attacks(settings.n_search)
        s_held, o_held = two_attacks(settings.n_holdout)
        best = other if o_search.mean() > s_search.mean() else scripted  # a tie: trial 0
        held = {scripted: evaluation(1, s_held), other: evaluation(1, o_held)}
        r = SearchResult("wmt", 1.0, settings, [], best, scripted,  # type: ignore[arg-type]
                         held[best], held[scripted], 0.0, 0.0)
        error.append(r.chosen_eval.value("1-tsr") - 0.3)
    bias, se = float(np.mean(error)), float(np.std(error) / math.sqrt(runs))
    assert abs(bias) <= 3 * se, (bias, se)


# --- 5. the margin against the closest rival -----------------------------------------------


def test_margin_interval_covers_when_all_five_tie() -> None:
    """A Table 4 claim (the subject against 4 rivals) where all five configurations have
    the same mean on common random numbers: the true margin min_o D_o is 0. The interval
    of the rival closest on the point estimate, at 95%, covered 0.913-0.919 (issue 38;
    0.90 here); the margin's interval over every rival (`margin_interval`) covers."""
    from wmtsim.studies.verdicts import check_claim

    rng = np.random.default_rng(55)
    n, runs = 30, 1200
    names = ("wmt", "a", "b", "c", "d")
    hits = []
    for _ in range(runs):
        common = rng.normal(0.0, 1.0, n)
        values = {p: common + rng.normal(0.0, 1.0, n) for p in names}
        r = check_claim("wmt", names[1:], 1, values, interval=True)
        hits.append(r["margin_low"] <= 0.0 <= r["margin_high"])
    cov = float(np.mean(hits))
    assert cov >= 0.95 - 3 * mc_error(cov, runs), cov


# --- 3. Morris screening's false "matters" ------------------------------------------------


def test_morris_test_keeps_its_level_per_null_knob_at_r_6() -> None:
    """Five knobs at the atlas's r = 6, n = 150 simulated trajectories per point on common
    random numbers: y_t(x) = 0.3 x_0 + z_t (x_1 − 0.5) + 0.3 ε_t(x). Knob 0 moves the mean;
    knob 1 is read but moves only the noise (its effect on trajectory t is ±z_t, the same
    at every step: common random numbers correlate its steps); knobs 2-4 are not in f at
    all but their points carry fresh noise. Each null knob's false "matters" rate at 5%
    (before the screening's correction, which only lowers it) must be at most 5%. The
    rule it replaces ("the μ* interval's lower end above the noise floor") called knob 1
    "matters" in 0.19 of 300 runs and knobs 2-4 in 0.05 (benchmarks/coverage.py
    reimplements it); `morris_test`: 0.07, 0.04 there."""
    from wmtsim.studies.screen import morris_design, morris_test

    rng = np.random.default_rng(6)
    d, r, n, runs = 5, 6, 150, 400
    rejected = np.zeros(d)
    for it in range(runs):
        design = morris_design(d, r, seed=it)
        z = rng.normal(size=n)
        effects = np.empty((d, r, n))
        for k in range(r):
            y = [0.3 * x[0] + z * (x[1] - 0.5) + 0.3 * rng.normal(size=n)
                 for x in design.x[k]]
            for s in range(d):
                effects[design.moved[k, s], k] = (y[s + 1] - y[s]) / design.step[k, s]
        rejected += morris_test(effects, n_resamples=1000, seed=it) <= 0.05
    rate = rejected / runs
    assert rate[0] >= 0.9  # the knob that moves the mean is found
    for i in range(1, d):
        assert rate[i] <= 0.05 + 3 * mc_error(rate[i], runs), (i, rate)


# --- 2. Sobol indices under common random numbers ------------------------------------------


def crn_trajectories(x: np.ndarray, z: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per-trajectory values (points, n) of a simulated f on common random numbers: the
    mean function μ(x) = x_1 + 2 x_2² (S1 = ST = (0.190, 0.810, 0)); knob x_3 is read (it
    scales trajectory t's draw z_t) but does not move the mean; the noise shared by every
    point, z_t and sin(2π(u_t + x_1 + x_2)), has mean 0 over trajectories."""
    mu = x[:, 0] + 2 * x[:, 1] ** 2
    return (mu[:, None] + 3.0 * z[None, :] * x[:, 2:3]
            + np.sin(2 * np.pi * (u[None, :] + x[:, 0:1] + x[:, 1:2])))


CRN_S = np.array([1 / 12, 16 / 45, 0.0]) / (1 / 12 + 16 / 45)


def test_sobol_indices_of_the_mean_function_under_common_random_numbers() -> None:
    """A sweep like `sobol_gaia` (R = 4 scramblings of N = 64, 500 trajectories per point,
    the same trajectories at every point) through `sobol_table`, the path `wmtsim analyze`
    takes. On the point means (the old reading) the intervals covered the mean function's
    indices 0.60-0.75 and called the read-but-inert x_3 non-zero every time
    (benchmarks/coverage.py); from the trajectories (`sobol_mean_function`) they cover at
    95%, x_3's total index is called non-zero at most 5% of the time, and `noise_share`
    is reported."""
    import polars as pl

    from wmtsim.studies.analysis import sobol_table
    from wmtsim.studies.sweep_file import ParameterSpec, Sweep, design_rows

    rng = np.random.default_rng(2)
    specs = tuple(ParameterSpec(f"x{i}", low=0.0, high=1.0) for i in (1, 2, 3))
    n, runs = 500, 80
    hits, inert_nonzero, shares = [], 0, []
    for seed in range(runs):
        sweep = Sweep("crn", "", None, (), ("wmt",), specs, "sobol", 64, n, seed, 1,
                      scramblings=4)
        rows = list(design_rows(sweep))
        x = np.array([[r.values[s.key] for s in specs] for r in rows])
        values = crn_trajectories(x, rng.normal(size=n), rng.random(n))
        frame = pl.DataFrame({"policy": "wmt", "scenario": "s", "replicate": 0,
                              "block": [r.block for r in rows],
                              "base": [r.base for r in rows],
                              "block_param": [r.block_param for r in rows],
                              "f": values.mean(axis=1),
                              "f_t": pl.Series(list(values), dtype=pl.List(pl.Float64))})
        out = sobol_table(frame, [s.key for s in specs], 64, "f", trajectories="f_t")
        assert out["method"][0].startswith("mean function")
        for name in ("S1", "ST"):
            hits += list((out[f"{name}_low"].to_numpy() <= CRN_S)
                         & (CRN_S <= out[f"{name}_high"].to_numpy()))
        inert_nonzero += out["ST_low"][2] > 0
        shares.append(out["noise_share"][0])
    cov = float(np.mean(hits))
    assert cov >= 0.95 - 3 * mc_error(cov, len(hits)), cov
    rate = inert_nonzero / runs
    assert rate <= 0.05 + 3 * mc_error(rate, runs), rate
    assert 0.0 < float(np.mean(shares)) < 0.2  # the noise is counted, and is small here
