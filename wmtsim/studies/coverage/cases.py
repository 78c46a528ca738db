"""Known-truth cases for the coverage studies of docs/statistics.md ("Coverage").

Each function runs one of the project's procedures on synthetic data whose answer is
known, and returns what a coverage study counts (hits, rejections or errors per run).
tests/studies/test_coverage_studies.py runs them small and asserts the levels (within
3 Monte Carlo errors); scripts/coverage_study.py runs them large for the docs' table.
With ``old=True`` a case applies the rule the current one replaced instead (reimplemented here,
in a few lines each, only so that the "before" column is measured by the same code as
the "after" one).

* `pooled_zero_bound`: the interval of a pooled ratio when no trajectory differs;
* `sparse_unbounded`: a sparse effect on an unbounded metric, and its exact test's size;
* `grid_size`: `grid_test`'s rejections on flat grids of 50 trajectories;
* `morris_false_matters`: `morris_test`'s per-knob false "matters" rate at r = 6;
* `sobol_crn`: Sobol indices of a mean function from a sweep on common random numbers;
* `attack_bias`: the held-out harm of attack's worst case when nothing beats the script;
* `margin_ties`: the claims margin's interval when all five configurations tie.
* `prediction_coverage`: the calibration's prediction interval's exact coverage of a new corpus.
"""

from __future__ import annotations

import math

import numpy as np

from wmtsim.core.inference import clopper_pearson_upper, paired_effect


def mc_error(rate: float, runs: int) -> float:
    """The Monte Carlo standard error of a rate estimated from ``runs`` runs (at least
    that of a 5% rate, so a rate of 0 or 1 still gets a margin)."""
    return math.sqrt(max(rate * (1 - rate), 0.05 * 0.95) / runs)


def runs_for(nominal: float, off: float, sigmas: float = 3.0, power: float = 0.9) -> int:
    """Monte Carlo runs a rate test needs to have teeth: the test passes while the rate
    is within ``sigmas`` standard errors of ``nominal`` (so a procedure at its nominal
    rate fails it with probability ≤ 0.13% at 3σ), and fails with probability ≥
    ``power`` when the true rate is ``off`` (one-sided normal approximation:
    N = ((sigmas·√(p₀q₀) + z_power·√(p₁q₁)) / |p₁ − p₀|)²). E.g. a 40% liberal test at
    20% (0.28): 493 runs; a 5-point coverage loss (0.90 against 0.95): 432 runs."""
    from scipy import stats

    z = float(stats.norm.ppf(power))
    n = ((sigmas * math.sqrt(nominal * (1 - nominal)) + z * math.sqrt(off * (1 - off)))
         / abs(off - nominal)) ** 2
    return math.ceil(n)


def within(rate: float, nominal: float, runs: int, side: str, sigmas: float = 3.0) -> bool:
    """Whether an observed ``rate`` over ``runs`` runs is within ``sigmas`` standard
    errors of ``nominal`` on the side that matters: ``"above"`` for a size (not above
    nominal + 3 SE), ``"below"`` for a coverage (not below nominal − 3 SE)."""
    se = math.sqrt(nominal * (1 - nominal) / runs)
    return rate <= nominal + sigmas * se if side == "above" else rate >= nominal - sigmas * se


def runs_for_mean(gap: float, sd: float, sd_off: float, sigmas: float = 3.0,
                  power: float = 0.9) -> int:
    """`runs_for` for a mean of per-run scores with standard deviations ``sd`` (at the
    nominal level) and ``sd_off`` (``gap`` below it) rather than of 0/1 hits:
    N = ((sigmas·sd + z_power·sd_off) / gap)²."""
    from scipy import stats

    z = float(stats.norm.ppf(power))
    return math.ceil(((sigmas * sd + z * sd_off) / gap) ** 2)


def prediction_coverage(runs: int, r: int, seed: int, mean: float = 0.3,
                        sd: float = 0.05) -> np.ndarray:
    """Per run, the chance that `predictive_cell`'s 95% interval from ``r`` normal
    replicate corpora (N(mean, sd²)) covers a *new* corpus, computed exactly given the
    interval: Φ((high − mean)/sd) − Φ((low − mean)/sd). Its average over runs is the
    interval's coverage, and its spread is well under a 0/1 hit's (Rao–Blackwell: the
    new corpus is integrated out), so a loss of 1.5 points (the interval without
    √(1 + 1/R): 0.935 at R = 4) is seen in about 1,700 runs instead of 9,000."""
    from scipy import stats

    from wmtsim.studies.calibration.inference import predictive_cell

    rng = np.random.default_rng([seed, r])
    x = rng.normal(mean, sd, (runs, r))
    ends = np.array([[c["low"], c["high"]] for c in
                     (predictive_cell(row, mean, "tokens") for row in x)], dtype=float)
    return np.asarray(stats.norm.cdf(ends[:, 1], mean, sd) - stats.norm.cdf(ends[:, 0], mean, sd))


# --- paired_effect: no difference, and sparse unbounded differences -----------------------


def zero_bound_conditional(runs: int, ratio: float, seed: int, n: int = 100
                           ) -> tuple[list[bool], list[bool]]:
    """Coverage hits of `paired_effect`'s interval for a rate that differs on each of n
    trajectories with probability p = ``ratio`` · 3/n (differences 0 or 1, true mean
    difference p), split by what the run saw: (hits when no trajectory differed, k = 0:
    the rule of three; hits when some did, k > 0: the exact test's conservative bound
    or the bootstrap). The rule of three is an unconditional bound: P(k = 0) =
    (1 − p)^n ≤ 5% exactly when p ≥ 3/n, so above 3/n it misses every run with k = 0."""
    rng = np.random.default_rng([seed, int(ratio * 100), n])
    p = ratio * 3.0 / n
    zero: list[bool] = []
    some: list[bool] = []
    for _ in range(runs):
        d = (rng.random(n) < p).astype(np.float64)
        e = paired_effect(d, np.zeros(n), bound=1.0, n_resamples=400)
        (zero if e["n_nonzero"] == 0 else some).append(bool(e["low"] <= p <= e["high"]))
    return zero, some


def sparse_tails(runs: int, share: float, tail: str, seed: int, n: int = 400
                 ) -> tuple[list[bool], int]:
    """An AF-like metric (unbounded; most paired differences 0): each of n trajectories
    differs with probability ``share``, by a positive amount with ``tail`` "two-point"
    (1 w.p. 0.8, 20 w.p. 0.2: mean 4.8) or "lognormal" (σ = 1.5: mean e^1.125).
    Returns (coverage hits of every interval `paired_effect` reports, runs with an
    interval): below `wmtsim.core.inference.DENSE` it must report none."""
    rng = np.random.default_rng([seed, int(share * 1000), n])
    mean = 4.8 if tail == "two-point" else math.exp(1.5**2 / 2)
    hits = []
    for _ in range(runs):
        nz = rng.random(n) < share
        size = (np.where(rng.random(n) < 0.8, 1.0, 20.0) if tail == "two-point"
                else rng.lognormal(0.0, 1.5, n))
        e = paired_effect(nz * size, np.zeros(n), n_resamples=1000)
        if math.isfinite(e["low"]):
            hits.append(bool(e["low"] <= share * mean <= e["high"]))
    return hits, len(hits)


TAILS = {  # name: (draw of a positive size, its mean)
    "lognormal σ=1": (lambda rng, n: rng.lognormal(0.0, 1.0, n), math.exp(0.5)),
    "lognormal σ=1.5": (lambda rng, n: rng.lognormal(0.0, 1.5, n), math.exp(1.125)),
    "lognormal σ=2": (lambda rng, n: rng.lognormal(0.0, 2.0, n), math.exp(2.0)),
    "Pareto α=2.5": (lambda rng, n: rng.pareto(2.5, n) + 1.0, 2.5 / 1.5),
    "Pareto α=1.8": (lambda rng, n: rng.pareto(1.8, n) + 1.0, 1.8 / 0.8),
    "two-point": (lambda rng, n: np.where(rng.random(n) < 0.8, 1.0, 20.0), 4.8),
    "exponential": (lambda rng, n: rng.exponential(1.0, n), 1.0),
}
"""The tail families of `heavy_tails`."""


def heavy_tails(runs: int, family: str, share: float, mixed: bool, seed: int,
                n: int = 400) -> tuple[list[bool], list[bool]]:
    """An unbounded metric's paired differences: each of n trajectories differs with
    probability ``share`` by a size from ``family`` (`TAILS`), positive, or with
    ``mixed`` signs (+ w.p. 3/4, − w.p. 1/4: mean halved). Returns the coverage hits of
    `paired_effect`'s interval (the unbounded rule) and of the plain percentile interval
    on the same resamples, over the runs that report one (k ≥ 20% of n)."""
    draw, mean = TAILS[family]
    rng = np.random.default_rng([seed, int(share * 1000), n, list(TAILS).index(family),
                                 int(mixed)])
    truth = share * mean * (0.5 if mixed else 1.0)
    rule, plain = [], []
    for _ in range(runs):
        size = draw(rng, n) * (np.where(rng.random(n) < 0.75, 1.0, -1.0) if mixed else 1.0)
        d = (rng.random(n) < share) * size
        e = paired_effect(d, np.zeros(n), n_resamples=1000)
        if math.isfinite(e["low"]):
            # any bound makes the metric bounded, so its interval is the plain
            # percentile one (the bound is read only below `SPARSE`); same seed, same
            # resamples
            p = paired_effect(d, np.zeros(n), n_resamples=1000, bound=math.inf)
            rule.append(bool(e["low"] <= truth <= e["high"]))
            plain.append(bool(p["low"] <= truth <= p["high"]))
    return rule, plain


def pooled_zero_bound(runs: int, p: float, seed: int, n: int = 200, heavy: int = 20,
                      old: bool = False) -> list[bool]:
    """Coverage hits of `paired_effect`'s interval for a pooled rate Σ num / Σ den on n
    trajectories: ``heavy`` of them have denominator 90, the rest 20 (paper_poisoning's
    spread), and only a heavy one can differ (with probability p: a succeeds on every
    step, b on none). The truth, conditional on the denominators, is
    p · Σ_heavy den / Σ den. ``old``: the rule of three ± 3/n when none differs."""
    rng = np.random.default_rng(seed)
    den = np.full(n, 20.0)
    den[:heavy] = 90.0
    truth = p * den[:heavy].sum() / den.sum()
    hits = []
    for _ in range(runs):
        differ = np.zeros(n, dtype=bool)
        differ[:heavy] = rng.random(heavy) < p
        e = paired_effect(np.where(differ, den, 0.0), np.zeros(n), den, den, bound=1.0,
                          n_resamples=400)
        if old and e["n_nonzero"] == 0:
            e["low"], e["high"] = -3 / n, 3 / n
        hits.append(bool(e["low"] <= truth <= e["high"]))
    return hits


def sparse_unbounded(runs: int, seed: int, n: int = 400, old: bool = False
                     ) -> tuple[list[bool], list[bool]]:
    """Prompt tokens where 1% of n trajectories differ by a lognormal amount (σ = 1.5;
    true mean difference 0.01 · e^1.125): (coverage hits of every interval reported for
    a sparse effect, k < 10; the exact test's rejections of the same differences with
    random signs, a null). ``old``: the interval scaled by the largest observed
    difference (Clopper–Pearson shares times max |difference|)."""
    rng = np.random.default_rng(seed)
    truth = 0.01 * math.exp(1.5**2 / 2)
    hits, rejections = [], []
    for _ in range(runs):
        diff = (rng.random(n) < 0.01) * rng.lognormal(0.0, 1.5, n)
        e = paired_effect(diff, np.zeros(n))
        k = e["n_nonzero"]
        if old and 0 < k < 10:
            e["low"] = -float(diff.max()) * clopper_pearson_upper(0, n, 0.025)
            e["high"] = float(diff.max()) * clopper_pearson_upper(k, n, 0.025)
        if 0 < k < 10 and math.isfinite(e["low"]):
            hits.append(bool(e["low"] <= truth <= e["high"]))
        signed = diff * rng.choice([-1.0, 1.0], n)
        rejections.append(paired_effect(signed, np.zeros(n), interval=False)["p"] <= 0.05)
    return hits, rejections


# --- grid_test -----------------------------------------------------------------------------


def grid_pvalues(runs: int, kind: str, seed: int, k: int = 8, n: int = 50,
                 resamples: int = 1000) -> np.ndarray:
    """`grid_test`'s p-values on ``runs`` flat grids of `grid_size`'s ``kind`` or
    "binary": 0/1 outcomes on common random numbers, each trajectory's outcome shared by
    every point except that with probability 0.1 a point draws its own (P = 0.5 either
    way), so most trajectories agree at every point (a size of 0.000 measured)."""
    from wmtsim.core.grid_test import grid_test

    rng = np.random.default_rng([seed, k, n])
    out = np.empty(runs)
    for s in range(runs):
        if kind == "binary":
            own = rng.random((k, n)) < 0.1
            x = np.where(own, rng.random((k, n)) < 0.5, rng.random(n) < 0.5).astype(float)
        else:
            x = _flat_grid(rng, kind, k, n)
        out[s] = grid_test(x, n_resamples=resamples, seed=s)["p"]
    return out


def grid_power(runs: int, seed: int, shift: float = 0.3, k: int = 8, n: int = 50
               ) -> float:
    """`grid_test`'s power on the binary grid of `grid_pvalues` with one point's success
    chance moved from 0.5 to 0.5 + ``shift`` on the trajectories that draw their own."""
    from wmtsim.core.grid_test import grid_test

    rng = np.random.default_rng([seed, k, n, 1])
    hits = 0
    for s in range(runs):
        u = rng.random((k, n))
        chance = np.full((k, 1), 0.5)
        chance[0] += shift
        own = rng.random((k, n)) < 0.3
        x = np.where(own, u < chance, rng.random(n) < 0.5).astype(float)
        hits += grid_test(x, n_resamples=1000, seed=s)["p"] <= 0.05
    return hits / runs


def _flat_grid(rng: np.random.Generator, kind: str, k: int, n: int) -> np.ndarray:
    common = rng.normal(0.0, 1.0, n)
    if kind == "skewed":
        return np.asarray(np.exp(common) + rng.exponential(1.0, (k, n)))
    if kind == "rate":
        return (rng.random((k, n)) < 0.3 + 0.4 * (common > 0)).astype(float)
    return np.asarray(common + rng.normal(0.0, 0.5, (k, n)))


def grid_size(runs: int, kind: str, seed: int, k: int = 8, n: int = 50,
              old: bool = False) -> list[bool]:
    """`grid_test`'s rejections at 5% of flat grids: k points on n shared trajectories,
    all with the same mean. ``kind``: "skewed" (a common lognormal part plus exponential
    noise), "rate" (0/1 outcomes whose chance the trajectory sets) or "normal". ``old``:
    the bootstrap with the standard errors held at the sample's."""
    from wmtsim.core.grid_test import grid_test

    rng = np.random.default_rng(seed)
    out = []
    for s in range(runs):
        common = rng.normal(0.0, 1.0, n)
        if kind == "skewed":
            x = np.exp(common) + rng.exponential(1.0, (k, n))
        elif kind == "rate":
            x = (rng.random((k, n)) < 0.3 + 0.4 * (common > 0)).astype(float)
        else:
            x = common + rng.normal(0.0, 0.5, (k, n))
        p = _old_grid_p(x, 1000, s) if old else grid_test(x, n_resamples=1000, seed=s)["p"]
        out.append(bool(p <= 0.05))
    return out


def _old_grid_p(x: np.ndarray, b: int, seed: int) -> float:
    """The max-t bootstrap as it was: se held at the sample's in every resample."""
    k, n = x.shape
    c = x - x.mean(axis=0)
    d = c.mean(axis=1)
    se = c.std(axis=1, ddof=1) / math.sqrt(n)
    scale = np.where(se > 0, se, np.inf)
    t_obs = float(np.max(np.abs(d) / scale))
    rng = np.random.default_rng([seed, k, n, 21])
    idx = rng.integers(0, n, size=(b, n))
    t_star = np.max(np.abs(c[:, idx].mean(axis=2).T - d) / scale, axis=1)
    return float((1 + np.sum(t_star >= t_obs)) / (b + 1))


# --- Morris screening ----------------------------------------------------------------------


def morris_false_matters(runs: int, seed: int, r: int = 6, d: int = 5, n: int = 150,
                         old: bool = False) -> np.ndarray:
    """Per knob, the share of runs in which a screening calls it "matters" at 5% (before
    the screening's correction; `morris_pvalues` gives the p-values themselves), at the
    atlas's r = 6 and n = 150 simulated trajectories
    per point on common random numbers: y_t(x) = 0.3 x_0 + z_t (x_1 − 0.5) + 0.3 ε_t(x).
    Knob 0 moves the mean; knob 1 is read but moves only the noise (its effect on
    trajectory t is ±z_t at every step: common random numbers correlate its steps);
    knobs 2.. are not in f, but their points carry fresh noise. ``old``: "matters" when
    the lower end of μ*'s bootstrap interval is above the noise floor
    mean_steps(sqrt(2/π) · se / Δ)."""
    if not old:
        return np.asarray((morris_pvalues(runs, seed, r, d, n) <= 0.05).mean(axis=0))
    from wmtsim.studies.sweeps.screen import morris_indices

    rng = np.random.default_rng(seed)
    called = np.zeros(d)
    for it in range(runs):
        effects = _morris_effects(rng, it, r, d, n)
        ee = effects.mean(axis=2).T  # (r, d)
        floor = (math.sqrt(2 / math.pi) * effects.std(axis=2, ddof=1) / math.sqrt(n)
                 ).mean(axis=1)
        called += morris_indices(ee, n_resamples=1000, seed=it)["mu_star_low"] > floor
    return called / runs


def _morris_effects(rng: np.random.Generator, it: int, r: int, d: int, n: int
                    ) -> np.ndarray:
    from wmtsim.studies.sweeps.screen import morris_design

    design = morris_design(d, r, seed=it)
    z = rng.normal(size=n)
    effects = np.empty((d, r, n))
    for k in range(r):
        y = [0.3 * x[0] + z * (x[1] - 0.5) + 0.3 * rng.normal(size=n) for x in design.x[k]]
        for s in range(d):
            effects[design.moved[k, s], k] = (y[s + 1] - y[s]) / design.step[k, s]
    return effects


def morris_pvalues(runs: int, seed: int, r: int = 6, d: int = 5, n: int = 150
                   ) -> np.ndarray:
    """`morris_test`'s p-values (runs, d) on `morris_false_matters`'s world."""
    from wmtsim.studies.sweeps.screen import morris_test

    rng = np.random.default_rng(seed)
    return np.stack([morris_test(_morris_effects(rng, it, r, d, n), n_resamples=1000,
                                 seed=it) for it in range(runs)])


# --- Sobol indices under common random numbers ---------------------------------------------


SOBOL_TRUTH = np.array([1 / 12, 16 / 45, 0.0]) / (1 / 12 + 16 / 45)
"""S1 = ST of the mean function μ(x) = x_1 + 2 x_2² on [0, 1]^3 (additive, x_3 absent)."""


def crn_values(x: np.ndarray, z: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per-trajectory values (points, n) of a simulated f on common random numbers: the
    mean function μ(x) = x_1 + 2 x_2² (`SOBOL_TRUTH`); x_3 is read (it scales trajectory
    t's draw z_t) but does not move the mean; the noise every point shares, z_t and
    sin(2π(u_t + x_1 + x_2)), has mean 0 over trajectories."""
    mu = x[:, 0] + 2 * x[:, 1] ** 2
    return (mu[:, None] + 3.0 * z[None, :] * x[:, 2:3]
            + np.sin(2 * np.pi * (u[None, :] + x[:, 0:1] + x[:, 1:2])))


def narrow_tsr_values(x: np.ndarray, z: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per-trajectory 0/1 task successes (points, n) with a narrow mean function, like
    gaia_like's TSR: μ(x) = 0.176 + 0.044 (x_1 + 2 x_2²) / 3, in [0.176, 0.220], whose
    indices are `SOBOL_TRUTH`; trajectory t succeeds when a x_3-weighted mix of its
    common draw z_t and a draw of its own at the point falls below Φ⁻¹(μ(x)), so x_3 is
    read but does not move the mean (common random numbers: most trajectories agree at
    every point)."""
    from scipy import stats

    mu = 0.176 + 0.044 * (x[:, 0] + 2 * x[:, 1] ** 2) / 3
    w = 0.6 + 0.3 * x[:, 2:3]
    own = np.random.default_rng([int(u[0] * 2**31), x.shape[0]]).normal(size=(x.shape[0],
                                                                              z.size))
    latent = w * z[None, :] + np.sqrt(1 - w * w) * own
    return (latent < stats.norm.ppf(mu)[:, None]).astype(np.float64)


def sobol_crn(runs: int, seed: int, n: int = 500, points: int = 64, scramblings: int = 4,
              old: bool = False, narrow: bool = False
              ) -> tuple[list[bool], list[bool], list[float], list[bool]]:
    """A sweep like `sobol_gaia` (R scramblings of N points, n trajectories per point,
    the same at every point) read by `sobol_table`, the path `wmtsim analyze` takes:
    (coverage hits of S1 and ST against `SOBOL_TRUTH` in the runs whose indices are
    defined, whether x_3's ST interval excludes 0, ``noise_share``, whether the design
    was read as flat (indices undefined; no NaN in the table)) per run. ``old``: the
    indices of the point means (no trajectories given). ``narrow``: the outcomes are
    `narrow_tsr_values` (a TSR between 0.176 and 0.220) instead of `crn_values`."""
    import polars as pl

    from wmtsim.studies.sweeps.analysis import sobol_table
    from wmtsim.studies.sweeps.design import design_rows
    from wmtsim.studies.sweeps.spec import ParameterSpec, Sweep

    rng = np.random.default_rng(seed)
    specs = tuple(ParameterSpec(f"x{i}", low=0.0, high=1.0) for i in (1, 2, 3))
    hits, inert_nonzero, shares, flat = [], [], [], []
    for it in range(runs):
        sweep = Sweep(name="crn", description="", path=None, scenarios=(),
                      policies=("wmt",), parameters=specs, kind="sobol", points=points,
                      trajectories=n, seed=1000 * seed + it, replicates=1,
                      scramblings=scramblings)
        rows = list(design_rows(sweep))
        x = np.array([[r.values[s.key] for s in specs] for r in rows])
        values = (narrow_tsr_values if narrow else crn_values)(x, rng.normal(size=n),
                                                               rng.random(n))
        frame = pl.DataFrame({"policy": "wmt", "scenario": "s", "replicate": 0,
                              "block": [r.block for r in rows],
                              "base": [r.base for r in rows],
                              "block_param": [r.block_param for r in rows],
                              "f": values.mean(axis=1),
                              "f_t": pl.Series(list(values), dtype=pl.List(pl.Float64))})
        out = sobol_table(frame, [s.key for s in specs], points, "f",
                          trajectories=None if old else "f_t")
        is_flat = out["method"][0].startswith("flat")
        flat.append(is_flat)
        if is_flat:  # undefined, said so: no NaN and no interval to cover
            assert out["S1"].null_count() == out.height and not any(
                np.isnan(out[c].drop_nulls().to_numpy()).any() for c in out.columns
                if out[c].dtype == pl.Float64)
            continue
        for name in ("S1", "ST"):
            hits += list((out[f"{name}_low"].to_numpy() <= SOBOL_TRUTH)
                         & (SOBOL_TRUTH <= out[f"{name}_high"].to_numpy()))
        inert_nonzero.append(bool(out["ST_low"][2] > 0))
        shares.append(float(out["noise_share"][0]))
    return [bool(h) for h in hits], inert_nonzero, shares, flat


# --- attack's worst case, and the claims margin --------------------------------------------


def attack_bias(runs: int, seed: int, old: bool = False) -> list[float]:
    """Errors (reported − true harm) of attack's held-out worst case when nothing beats
    the script: two attacks of the same true harm 1 − TSR = 0.3, the scripted one (trial
    0) and one the search found, agreeing on half the trajectories (common random
    numbers); the search picks on 300 search trajectories, the report reads 1000 held-out
    ones (the shipped sizes). ``old``: the more harmful of the two on the held-out data."""
    from wmtsim.core.metrics import N_COUNTERS, C
    from wmtsim.studies.attack.search import Evaluation, SearchResult, SearchSettings

    rng = np.random.default_rng(seed)

    def two_attacks(n: int) -> tuple[np.ndarray, np.ndarray]:
        u = rng.random(n)
        v = np.where(rng.random(n) < 0.5, u, rng.random(n))  # half the draws shared
        return u < 0.3, v < 0.3

    def evaluation(fails: np.ndarray) -> Evaluation:
        counts = np.zeros((fails.size, N_COUNTERS), dtype=np.int64)
        counts[:, C.tasks] = 1
        counts[:, C.success] = ~fails
        return Evaluation("wmt", 1, counts, 0.0)

    settings = SearchSettings(harm="1-tsr", n_search=300, n_holdout=1000)
    errors = []
    for _ in range(runs):
        s_search, o_search = two_attacks(settings.n_search)
        held = dict(zip(("scripted", "found"), map(evaluation, two_attacks(1000)),
                        strict=True))
        best = "found" if o_search.mean() > s_search.mean() else "scripted"  # tie: trial 0
        r = SearchResult("wmt", 1.0, settings, [], best, "scripted",  # type: ignore[arg-type]
                         held[best], held["scripted"], 0.0, 0.0)
        value = (max(held[best].value("1-tsr"), held["scripted"].value("1-tsr")) if old
                 else r.chosen_eval.value("1-tsr"))
        errors.append(value - 0.3)
    return errors


def margin_ties(runs: int, seed: int, n: int = 30, old: bool = False) -> list[bool]:
    """Coverage hits of a claim's margin interval (the subject against 4 rivals, as in
    Table 4) when all five configurations have the same mean on common random numbers:
    the true margin min_o D_o is 0. ``old``: the interval of the rival closest on the
    point estimate, at 95%."""
    from wmtsim.core.verdicts import check_claim, pair_test

    rng = np.random.default_rng(seed)
    names = ("wmt", "a", "b", "c", "d")
    hits = []
    for _ in range(runs):
        common = rng.normal(0.0, 1.0, n)
        values = {p: common + rng.normal(0.0, 1.0, n) for p in names}
        r = check_claim("wmt", names[1:], 1, values, interval=not old)
        if old:
            e = pair_test(values["wmt"], values[r["closest"]], 1, interval=True)
            r["margin_low"], r["margin_high"] = e["low"], e["high"]
        hits.append(bool(r["margin_low"] <= 0.0 <= r["margin_high"]))
    return hits
