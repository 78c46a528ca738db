"""Screening: which of WMT's knobs matter for which metric in a world (Morris 1991).

The method of elementary effects (Morris 1991, with Campolongo et al. 2007's μ*): r
*trajectories* through the unit cube, each starting at a random point of a p-level grid
and moving one parameter at a time by Δ = p / (2(p − 1)), in a random order. A step that
moves parameter i gives its elementary effect EE_i = (f(x + Δe_i) − f(x)) / Δ, the change
of the metric's mean per whole range of the knob. Per parameter:

* μ* = mean |EE_i| (the screening measure: how much the knob moves the metric),
* μ = mean EE_i (its direction), σ = s.d. of EE_i (non-linearity or interactions).

Intervals: a percentile bootstrap over the r Morris trajectories (each trajectory's d
effects resampled together), B = 1000. Noise: every point of a screening runs on the
same simulated trajectories (common random numbers), so a knob the engine does not read
has every EE exactly 0 ("inert"). A knob that is read has a sampling floor: the paired
standard error of each step's difference, se, gives the expected |EE| of pure noise,
sqrt(2/π) · se / Δ; its mean over the steps is ``noise``. A knob "matters" when the
lower end of its μ* interval is above that floor, and is "within noise" otherwise.
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
from wmtsim.studies.evaluate import evaluate, make_point, paired_se
from wmtsim.studies.knob_ranges import WMT_RANGES, KnobRange

if TYPE_CHECKING:
    from pathlib import Path

    import polars as pl

    from wmtsim.studies.scenario import Scenario

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
           scheduler: str | None = None) -> Screening:
    """Morris screening of ``ranges`` for ``policy`` on each scenario (``r`` trajectories,
    ``n`` simulated trajectories per point, common random numbers on ``seed``)."""
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
            for i, k in enumerate(live):
                inert = bool(np.all(ee[:, i] == 0))
                verdict = ("inert" if inert else "matters"
                           if idx["mu_star_low"][i] > noise[i] else "within noise")
                rows.append(_row(sc, policy, m, k, verdict=verdict, noise=noise[i],
                                 values={name: float(v[i]) for name, v in idx.items()}))
    table = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        pl.col("mu_star").rank("ordinal", descending=True).over("scenario", "metric")
        .alias("rank"))
    return Screening(table, r, n, seed, total, time.perf_counter() - t0)


def _row(sc: Scenario, policy: str, metric: str, k: KnobRange, verdict: str,
         reason: str = "", noise: float = math.nan,
         values: dict[str, float] | None = None) -> dict[str, Any]:
    spec = k.spec(sc)
    values = values or {}
    nan = math.nan
    return {"scenario": sc.name, "policy": policy, "metric": metric, "parameter": k.key,
            "low": float(spec.low or 0), "high": float(spec.high or 0),
            "mu_star": values.get("mu_star", nan), "mu_star_low": values.get("mu_star_low", nan),
            "mu_star_high": values.get("mu_star_high", nan), "mu": values.get("mu", nan),
            "sigma": values.get("sigma", nan), "noise": float(noise), "verdict": verdict,
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
        from wmtsim.studies.analysis import write_chart

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
    """The atlas: one cell per (scenario, knob), coloured by verdict, one row per metric."""
    import altair as alt

    return alt.Chart(table.to_pandas()).mark_rect().encode(
        x=alt.X("parameter:N", title=None, axis=alt.Axis(labelLimit=0)),  # whole names
        y=alt.Y("scenario:N", title=None, axis=alt.Axis(labelLimit=0)),
        color=alt.Color("verdict:N", scale=alt.Scale(
            domain=list(VERDICTS), range=["#d62728", "#ff9896", "#dddddd", "#ffffff"])),
        tooltip=["scenario", "metric", "parameter",
                 *(alt.Tooltip(f"{c}:Q", format=D3_FORMAT)
                   for c in ("mu_star", "mu_star_low", "mu_star_high", "noise")), "verdict"],
    ).properties(width=520, height=150).facet(row="metric:N").properties(
        title="Screening atlas: which WMT knob matters for which metric in which world")
