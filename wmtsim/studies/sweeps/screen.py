"""Screening: which of WMT's knobs matter for which metric in a world (Morris 1991).

The method of elementary effects (Morris 1991, with Campolongo et al. 2007's μ*): r
*trajectories* through the unit cube, each starting at a random point of a p-level grid
and moving one parameter at a time by Δ = p / (2(p − 1)), in a random order. A step that
moves parameter i gives its elementary effect EE_i = (f(x + Δe_i) − f(x)) / Δ, the change
of the metric's mean per whole range of the knob. Per parameter:

* μ* = mean |EE_i| (the screening measure: how much the knob moves the metric),
* μ = mean EE_i (its direction), σ = s.d. of EE_i (non-linearity or interactions).

Intervals: a percentile bootstrap over the r Morris trajectories (each trajectory's d
effects resampled together), describing μ*'s spread over the design.

**The verdict** is a test, not the interval. Every point of a screening runs on the same
simulated trajectories (common random numbers), so a knob the engine does not read has
every EE exactly 0 ("inert"). For a knob that is read, the null hypothesis is "it moves
the metric's mean nowhere along the design": E[EE_ik] = 0 at each of its r steps k. Each
step's EE is the mean over simulated trajectories t of the paired per-trajectory effects
e_ikt = (y_t(x + Δe_i) − y_t(x)) / Δ, with standard error se_ik; the statistic is
T_i = Σ_k (EE_ik / se_ik)², and its null distribution is a bootstrap over simulated
trajectories (the same resample at every step, so the steps' shared noise — common random
numbers make it strongly correlated — is kept) of Σ_k ((EE*_ik − EE_ik) / se*_ik)²,
studentised inside each resample (`morris_test`). A knob "matters" when its p-value,
corrected over the screening's family, is at most alpha (5%); else it is "within noise".
**The family** is every (scenario, metric, knob) test of one screening — the atlas's
18 knobs × its rows — read with Benjamini–Hochberg (`correction`, default "bh"): an
exploratory map, so its promise is the false discovery rate (at most 5% of the "matters"
cells expected false; it assumes positive dependence, which common random numbers give
tests of one scenario) and, per knob, a false "matters" rate at most 5%; "holm" gives
family-wise error instead. The previous rule ("the μ* interval's lower end above the
expected |EE| of noise") called a null knob "matters" 3.8% of the time at r = 6 with no
correction across the atlas, and 19% for a knob that is read but moves only the
noise under common random numbers. ``noise``, the mean over the knob's steps
of sqrt(2/π) · se / Δ (the expected |EE| of noise alone), is reported beside μ*.
Knobs that no screened policy reads (`wmtsim.core.knob_readers`) are not simulated and
are reported as "not read", with the reason.

Our own small numpy implementation rather than SALib: the design is 20 lines, and the
estimator needs the per-trajectory paired noise floor that SALib does not compute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.formatting import D3_FORMAT
from wmtsim.core.grid_test import within_rounding
from wmtsim.core.inference import ALPHA, CORRECTION_NAMES, adjust
from wmtsim.studies.sweeps.evaluate import evaluate, make_point, paired_se
from wmtsim.studies.sweeps.knob_ranges import WMT_RANGES, KnobRange

if TYPE_CHECKING:
    from pathlib import Path

    import polars as pl

    from wmtsim.studies.scenarios.scenario import Scenario

SCREEN_METRICS = ("tsr", "asr", "prompt_tokens")
LEVELS = 4  # p: grid levels; Δ = p / (2(p − 1)) = 2/3


@dataclass(frozen=True)
class MorrisDesign:
    """``x[k, s]``: the unit coordinates of trajectory k's s-th point (s = 0..d);
    ``moved[k, s]``: the parameter moved between points s and s + 1; ``step[k, s]`` its
    signed move (±Δ)."""

    x: np.ndarray
    moved: np.ndarray
    step: np.ndarray


def morris_design(d: int, r: int, seed: int, levels: int = LEVELS) -> MorrisDesign:
    """r Morris trajectories in [0, 1]^d (each of d + 1 points)."""
    rng = np.random.default_rng(seed)
    delta = levels / (2 * (levels - 1))
    grid = np.arange(levels) / (levels - 1)
    x = np.empty((r, d + 1, d))
    moved = np.empty((r, d), dtype=np.int64)
    step = np.empty((r, d))
    for k in range(r):
        point = rng.choice(grid, size=d)
        x[k, 0] = point
        for s, i in enumerate(rng.permutation(d)):
            move = delta if point[i] + delta <= 1 + 1e-12 else -delta
            point = point.copy()
            point[i] = min(max(point[i] + move, 0.0), 1.0)
            x[k, s + 1] = point
            moved[k, s], step[k, s] = i, move
    return MorrisDesign(x, moved, step)


def elementary_effects(y: np.ndarray, design: MorrisDesign) -> np.ndarray:
    """``ee[k, i]``: parameter i's effect in trajectory k, from outputs ``y[k, s]``."""
    r, d = design.moved.shape
    ee = np.empty((r, d))
    for k in range(r):
        for s in range(d):
            ee[k, design.moved[k, s]] = (y[k, s + 1] - y[k, s]) / design.step[k, s]
    return ee


def morris_test(effects: np.ndarray, n_resamples: int = 2000, seed: int = 0
                ) -> np.ndarray:
    """p-values of "knob i moves the mean nowhere along the design", per knob (module
    docstring): ``effects`` (d, r, n) holds the per-simulated-trajectory elementary
    effects e_ikt of knob i at its step in Morris trajectory k (NaN where the metric is
    undefined on t at either point). T_i = Σ_k (EE_ik / se_ik)²; its null distribution is
    the bootstrap over t (one resample for every step) of Σ_k ((EE* − EE) / se*)²,
    studentised by each resample's own standard error; p = (1 + #{T* ≥ T}) / (B + 1).
    A step with no spread that moves is an exact effect (p = 1/(B + 1)); one that
    neither moves nor spreads adds 0. A knob whose every effect is 0 gets p = 1."""
    e = np.asarray(effects, dtype=np.float64)
    d, r, n = e.shape
    ok = np.isfinite(e)
    e0 = np.where(ok, e, 0.0).reshape(d * r, n)
    e0, tol = within_rounding(e0)  # an effect within rounding of 0 is 0
    m = ok.reshape(d * r, n).astype(np.float64)

    def moments(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(weighted counts, means, standard errors) per step, per row of the trajectory
        weights ``w`` (B, n)."""
        cnt = w @ m.T  # (B, d·r) weighted counts of finite effects
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (w @ e0.T) / cnt
            var = (w @ (e0 * e0).T) / cnt - mean * mean
            k = m.sum(axis=1)  # finite trajectories per step
            se = np.sqrt(np.maximum(var, 0.0) * k / np.maximum(k - 1, 1) / k)
        return cnt, mean, se

    ones = np.full((1, n), 1.0 / n)
    _, centre, se0 = moments(ones)
    centre, se0 = np.where(np.isfinite(centre), centre, 0.0)[0], se0[0]
    exact = (se0 == 0) & (np.abs(centre) > tol)

    def stat(w: np.ndarray, about: np.ndarray) -> np.ndarray:
        """Σ_k over each knob's steps of the squared studentised deviation of the
        weighted mean from ``about``; a resample in which a step has no spread is scaled
        by the sample's se (it says nothing of the spread), a step without spread in the
        sample either adds 0 — unless it moves: an exact effect, inf."""
        cnt, mean, se = moments(w)
        scale = np.where(se > 0, se, se0)
        z2 = np.where(scale > 0, ((mean - about) / np.where(scale > 0, scale, 1.0)) ** 2,
                      0.0)
        z2 = np.where((cnt > 0) & np.isfinite(z2), z2, 0.0)
        return np.asarray(z2.reshape(-1, d, r).sum(axis=2))  # (B, d)

    t_obs = stat(ones, np.zeros_like(centre))[0]
    t_obs = np.where(exact.reshape(d, r).any(axis=1), np.inf, t_obs)
    rng = np.random.default_rng([seed, d, r, n, 38])
    b = n_resamples
    t_star = np.empty((b, d))
    step = max(1, 4_000_000 // (n + d * r))  # resamples per block: bounded memory
    for start in range(0, b, step):
        k = min(step, b - start)
        idx = rng.integers(0, n, size=(k, n)) + n * np.arange(k)[:, None]
        w = np.bincount(idx.ravel(), minlength=k * n).reshape(k, n) / n
        t_star[start:start + k] = stat(w, centre)
    p = (1 + np.sum(t_star >= t_obs, axis=0)) / (b + 1)
    return np.where(t_obs > 0, p, 1.0)


def morris_indices(ee: np.ndarray, n_resamples: int = 2000, confidence: float = 0.95,
                   seed: int = 0) -> dict[str, np.ndarray]:
    """μ*, its bootstrap interval over trajectories, μ and σ per parameter (columns)."""
    r = ee.shape[0]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, r, size=(n_resamples, r))
    boot = np.abs(ee)[idx].mean(axis=1)  # (B, d)
    tail = (1 - confidence) / 2
    return {"mu_star": np.abs(ee).mean(axis=0),
            "mu_star_low": np.quantile(boot, tail, axis=0),
            "mu_star_high": np.quantile(boot, 1 - tail, axis=0),
            "mu": ee.mean(axis=0),
            "sigma": ee.std(axis=0, ddof=1) if r > 1 else np.full(ee.shape[1], np.nan)}


@dataclass
class Screening:
    """A screening's table (one row per scenario, policy, metric, parameter) and size."""

    table: pl.DataFrame
    trajectories: int
    n: int
    seed: int
    points: int
    seconds: float


def screen(scenarios: Sequence[Scenario], policy: str = "wmt",
           ranges: Sequence[KnobRange] = WMT_RANGES, r: int = 10, n: int = 200,
           seed: int = 0, metrics: Sequence[str] = SCREEN_METRICS, workers: int = 1,
           scheduler: str | None = None, alpha: float = ALPHA,
           correction: str = "bh") -> Screening:
    """Morris screening of ``ranges`` for ``policy`` on each scenario (``r`` trajectories,
    ``n`` simulated trajectories per point, common random numbers on ``seed``); each
    read knob's `morris_test`, corrected over the screening (``correction``: bh, holm or
    none), decides "matters" at ``alpha`` (module docstring)."""
    import time

    import polars as pl

    from wmtsim.core.knob_readers import unread

    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    total = 0
    for sc in scenarios:
        skipped = unread([k.key for k in ranges], [policy], [sc.world])
        live = [k for k in ranges if k.key not in skipped]
        specs = [k.spec(sc) for k in live]
        for k in ranges:
            if k.key in skipped:
                rows += [_row(sc, policy, m, k, verdict="not read", reason=skipped[k.key])
                         for m in metrics]
        if not live:
            continue
        design = morris_design(len(live), r, seed)
        grid = [[make_point(sc, {s.key: s.from_unit(u) for s, u in zip(specs, x, strict=True)},
                            policy, seed, n) for x in traj] for traj in design.x]
        outcomes = evaluate([p for traj in grid for p in traj], n, workers=workers,
                            scheduler=scheduler)
        total += len(outcomes)
        for m in metrics:
            y = np.array([[outcomes[p.key].mean(m) for p in traj] for traj in grid])
            ee = elementary_effects(y, design)
            idx = morris_indices(ee, seed=seed)
            noise = _noise(grid, outcomes, design, m, len(live))
            p = morris_test(_trajectory_effects(grid, outcomes, design, m, len(live)),
                            seed=seed)
            for i, k in enumerate(live):
                inert = bool(np.all(ee[:, i] == 0))
                rows.append(_row(sc, policy, m, k, verdict="inert" if inert else "",
                                 noise=noise[i], p=float(p[i]),
                                 values={name: float(v[i]) for name, v in idx.items()}))
    table = pl.DataFrame(rows, infer_schema_length=None)
    p_adj = adjust(table["p"].to_numpy(), correction)  # NaN (not read) is not counted
    verdict = [v or ("matters" if pa <= alpha else "within noise")
               for v, pa in zip(table["verdict"].to_list(), p_adj, strict=True)]
    family = (f"{CORRECTION_NAMES[correction]} over the screening's "
              f"{int(np.isfinite(p_adj).sum())} tests at {alpha:.0%}")
    table = table.with_columns(pl.Series("p_adjusted", p_adj), pl.Series("verdict", verdict),
                               pl.lit(family).alias("family")).with_columns(
        pl.col("mu_star").rank("ordinal", descending=True).over("scenario", "metric")
        .alias("rank"))
    return Screening(table, r, n, seed, total, time.perf_counter() - t0)


def _trajectory_effects(grid: list[list[Any]], outcomes: dict[str, Any],
                        design: MorrisDesign, metric: str, d: int) -> np.ndarray:
    """(d, r, n): each knob's per-simulated-trajectory elementary effects, one row per
    Morris trajectory (each moves each knob once)."""
    r = len(grid)
    n = outcomes[grid[0][0].key].metric(metric).size
    out = np.full((d, r, n), np.nan)
    for k, traj in enumerate(grid):
        for s in range(d):
            a, b = outcomes[traj[s].key].metric(metric), outcomes[traj[s + 1].key].metric(metric)
            out[design.moved[k, s], k] = (b - a) / design.step[k, s]
    return out


def _row(sc: Scenario, policy: str, metric: str, k: KnobRange, verdict: str,
         reason: str = "", noise: float = math.nan, p: float = math.nan,
         values: dict[str, float] | None = None) -> dict[str, Any]:
    spec = k.spec(sc)
    values = values or {}
    nan = math.nan
    return {"scenario": sc.name, "policy": policy, "metric": metric, "parameter": k.key,
            "low": float(spec.low or 0), "high": float(spec.high or 0),
            "mu_star": values.get("mu_star", nan), "mu_star_low": values.get("mu_star_low", nan),
            "mu_star_high": values.get("mu_star_high", nan), "mu": values.get("mu", nan),
            "sigma": values.get("sigma", nan), "noise": float(noise), "p": float(p),
            "verdict": verdict,
            "reason": reason or k.why}


def _noise(grid: list[list[Any]], outcomes: dict[str, Any], design: MorrisDesign,
           metric: str, d: int) -> np.ndarray:
    """Per parameter: the mean over its steps of sqrt(2/π)·se/|Δ| (the expected |EE| of
    paired sampling noise alone)."""
    acc = np.zeros(d)
    for k, traj in enumerate(grid):
        for s in range(d):
            a, b = outcomes[traj[s].key].metric(metric), outcomes[traj[s + 1].key].metric(metric)
            se = paired_se(a, b)
            acc[design.moved[k, s]] += math.sqrt(2 / math.pi) * (0.0 if math.isnan(se) else se
                                                                 ) / abs(design.step[k, s])
    return acc / len(grid)


def write_screen(result: Screening, folder: Path, charts: bool = True) -> list[Path]:
    """screen.csv / .parquet (and a chart of μ* with its interval) into ``folder``."""
    from wmtsim.core.output import atomic_write_parquet, atomic_write_text

    written = [atomic_write_parquet(result.table, folder / "screen.parquet"),
               atomic_write_text(folder / "screen.csv", result.table.write_csv())]
    if charts:
        from wmtsim.studies.sweeps.analysis import write_chart

        written += write_chart(screen_chart(result.table), folder / "screen")
    return written


def screen_chart(table: pl.DataFrame) -> Any:
    """μ* per parameter with its bootstrap interval, one panel per metric."""
    import altair as alt
    import polars as pl

    data = table.filter(pl.col("verdict") != "not read").to_pandas()
    base = alt.Chart(data).encode(y=alt.Y("parameter:N", sort="-x", title=None))
    bars = base.mark_bar().encode(x=alt.X("mu_star:Q", title="μ* (metric per whole range)"),
                                  color=alt.Color("verdict:N"))
    err = base.mark_rule().encode(x="mu_star_low:Q", x2="mu_star_high:Q")
    return (bars + err).properties(width=260, height=300).facet(
        column=alt.Column("metric:N"), row=alt.Row("scenario:N")).resolve_scale(x="independent")


VERDICTS = ("matters", "within noise", "inert", "not read")


def atlas_chart(table: pl.DataFrame) -> Any:
    """The atlas: one cell per (scenario, knob), coloured by verdict, one row per metric;
    16 px per world and no label hidden (Vega hid every other world's label)."""
    import altair as alt

    return alt.Chart(table.to_pandas()).mark_rect().encode(
        x=alt.X("parameter:N", title=None, axis=alt.Axis(labelLimit=0)),  # whole names
        y=alt.Y("scenario:N", title=None, axis=alt.Axis(labelLimit=0, labelOverlap=False)),
        color=alt.Color("verdict:N", scale=alt.Scale(
            domain=list(VERDICTS), range=["#d62728", "#ff9896", "#dddddd", "#ffffff"])),
        tooltip=["scenario", "metric", "parameter",
                 *(alt.Tooltip(f"{c}:Q", format=D3_FORMAT)
                   for c in ("mu_star", "mu_star_low", "mu_star_high", "noise")), "verdict"],
    ).properties(width=520, height=alt.Step(16)).facet(row="metric:N").properties(
        title="Screening atlas: which WMT knob matters for which metric in which world")
