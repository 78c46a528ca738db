"""Analysis of a sweep folder, on polars frames (docs/sweeps.md, "Analysis").

* `point_means`: each point's metric means with percentile-bootstrap intervals over its
  trajectories (read chunk by chunk, so memory does not grow with the sweep).
* `sobol_indices`: first-order (Saltelli 2010) and total (Jansen 1999) Sobol indices from
  the A, B and AB_i blocks of a ``sobol`` design — the estimators of
  `scipy.stats.sobol_indices`, applied to precomputed outputs. With R ≥ 2 independent
  scramblings (``[design] scramblings``) the indices are the mean function's, read from
  every point's trajectories with the simulation's noise removed and counted
  (`wmtsim.studies.sweeps.sobol.sobol_mean_function`: a Student-t interval over the R replicate
  estimates, each on its own trajectories; ``noise_share``; docs/statistics.md); with
  one, a bootstrap
  over its N base samples (each A/B/AB_i row kept together), which treats the scrambled
  points as independent draws and is too wide (3–25× on Ishigami).
* `pareto_front`: the settings no other setting beats on both TSR (higher) and prompt
  tokens (lower), one front over every configuration, identical points once.
* whether a metric differs significantly across the points at all is
  `wmtsim.studies.sweeps.flatness.flatness` (a paired test on common random numbers); when it
  does not, nothing is named "best".
* `robust_settings`: each setting's worst case over the scenarios and replicates, best
  first (max-min for a higher-is-better metric, min-max otherwise).
* Altair charts (`heatmap_chart`, `pareto_chart`, `sensitivity_chart`) and `analyze`,
  which writes the tables and charts (HTML and PNG) of ``wmtsim analyze``.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from wmtsim.core.bootstrap import Resampler, mean_interval
from wmtsim.core.formatting import D3_FORMAT
from wmtsim.core.inference import ALPHA, resamples_for
from wmtsim.core.metrics import METRICS
from wmtsim.core.output import atomic_write, atomic_write_parquet
from wmtsim.studies.sweeps.sobol import replicate_interval, sobol_estimate, sobol_mean_function
from wmtsim.studies.sweeps.spec import METRIC_NAMES, SweepError
from wmtsim.studies.sweeps.store import CHUNKS, SweepResults, load_results, read_chunk

if TYPE_CHECKING:
    import altair as alt

DEFAULT_METRICS = ("tsr", "prompt_tokens", "asr", "accuracy", "br")
SETTING = ("row",)


def _higher_is_better(metric: str) -> bool:
    return METRICS.get(metric, ("", "higher", ""))[1] == "higher"


# --- per-point means with bootstrap intervals ----------------------------------------------


def bootstrap_mean(x: np.ndarray, confidence: float = 0.95, n_resamples: int = 2000,
                   seed: int = 0) -> tuple[float, float, float, int]:
    """Mean and percentile-bootstrap interval of the finite values of ``x``."""
    return mean_interval(x, confidence, Resampler(n_resamples, seed, np.int32))


def point_means(results: SweepResults, metrics: Sequence[str] = DEFAULT_METRICS,
                confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
                ) -> pl.DataFrame:
    """One row per computed point: its metadata, and for each metric the mean, ``_low``,
    ``_high`` (bootstrap interval over trajectories) and ``_n`` (finite trajectories)."""
    rs = Resampler(n_resamples, seed, np.int32)  # int32 indices, as sweeps always drew
    rows: list[dict[str, Any]] = []
    for chunk in results.manifest["chunks"]:
        traj = read_chunk(results.root / CHUNKS / chunk["trajectories"], results.root,
                          ["key", *metrics])
        for (key,), part in traj.group_by("key", maintain_order=True):
            row: dict[str, Any] = {"key": key}
            for m in metrics:
                mean, lo, hi, n = mean_interval(part[m].to_numpy().astype(np.float64),
                                             confidence, rs)
                row.update({m: mean, f"{m}_low": lo, f"{m}_high": hi, f"{m}_n": n})
            rows.append(row)
    if not rows:
        return pl.DataFrame()
    stats = pl.DataFrame(rows)
    meta = results.points.select(
        "key", "row", "scenario", "replicate", "seed", "policy", *results.parameters)
    return meta.join(stats, on="key", how="inner").sort("row", "scenario", "replicate",
                                                       "policy")


# --- Pareto front --------------------------------------------------------------------------


def pareto_mask(cost: np.ndarray, value: np.ndarray) -> np.ndarray:
    """True for the points that no other point dominates (cost ≤, value ≥, one strictly).

    Of exact duplicates only the first is on the front (one point, however many settings
    reach it: `pareto_front` counts them); NaN points are never on the front."""
    cost = np.asarray(cost, dtype=np.float64)
    value = np.asarray(value, dtype=np.float64)
    ok = np.isfinite(cost) & np.isfinite(value)
    mask = np.zeros(cost.shape, dtype=bool)
    idx = np.flatnonzero(ok)
    # cost ascending, value descending, then first occurrence first
    order = idx[np.lexsort((idx, -value[idx], cost[idx]))]
    best = -np.inf
    for i in order:
        if value[i] > best:
            mask[i] = True
            best = value[i]
    return mask


def pareto_front(frame: pl.DataFrame, cost: str = "prompt_tokens", value: str = "tsr",
                 by: Sequence[str] = ()) -> pl.DataFrame:
    """The rows of ``frame`` on the Pareto front of ``value`` (maximised) against ``cost``
    (minimised), within each group of ``by`` (default: one front over every
    configuration and setting, as ``wmtsim analyze`` and the dashboard count it), sorted
    by cost. Identical points appear once; ``settings`` says how many rows share it."""
    parts = frame.partition_by(list(by), maintain_order=True) if by else [frame]
    fronts = []
    for p in parts:
        same = p.group_by(cost, value).agg(pl.len().alias("settings"))
        front = p.filter(pl.Series(pareto_mask(p[cost].to_numpy(), p[value].to_numpy())))
        fronts.append(front.join(same, on=[cost, value], how="left"))
    return pl.concat(fronts).sort([*by, cost]) if fronts else frame.clear()


# --- Sobol indices -------------------------------------------------------------------------


def sobol_from_blocks(f_a: np.ndarray, f_b: np.ndarray, f_ab: np.ndarray,
                      confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
                      ) -> dict[str, np.ndarray]:
    """First-order and total Sobol indices from ``f(A)`` (N,), ``f(B)`` (N,) and
    ``f(AB_i)`` (d, N), with percentile-bootstrap intervals over the N base samples.

    S_i = mean(f_B · (f_AB_i − f_A)) / Var (Saltelli 2010);
    S_Ti = mean((f_A − f_AB_i)²) / (2 Var) (Jansen 1999); Var over f_A and f_B together.
    """
    f_a, f_b, f_ab = (np.asarray(a, dtype=np.float64) for a in (f_a, f_b, f_ab))
    estimate = sobol_estimate

    s1, st = estimate(f_a, f_b, f_ab)
    n = f_a.size
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    b_s1, b_st = estimate(f_a[idx], f_b[idx], np.moveaxis(f_ab[:, idx], 0, 1))
    alpha = (1.0 - confidence) / 2.0
    q = [alpha, 1.0 - alpha]
    with warnings.catch_warnings():
        # A constant output (zero variance) leaves the indices undefined: NaN, no warning.
        warnings.simplefilter("ignore", RuntimeWarning)
        s1_lo, s1_hi = np.nanquantile(b_s1, q, axis=0)
        st_lo, st_hi = np.nanquantile(b_st, q, axis=0)
    return {"S1": s1, "S1_low": s1_lo, "S1_high": s1_hi,
            "ST": st, "ST_low": st_lo, "ST_high": st_hi}


def _blocks(g: pl.DataFrame, params: Sequence[str], metric: str
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """f(A), f(B), f(AB_i) of one scrambling's rows, or None when it is not complete
    (``metric`` a column of scalars, or of per-trajectory lists: then (N, n) arrays)."""
    def column(frame: pl.DataFrame) -> np.ndarray:
        x = frame.sort("base")[metric]
        return (np.stack(x.to_list()).astype(np.float64) if x.dtype == pl.List(pl.Float64)
                and x.len() else x.to_numpy())

    a = column(g.filter(pl.col("block") == "A"))
    b = column(g.filter(pl.col("block") == "B"))
    ab = [column(g.filter((pl.col("block") == "AB") & (pl.col("block_param") == p)))
          for p in params]
    n = len(a)
    if n < 2 or len(b) != n or any(len(x) != n for x in ab):
        return None
    return a, b, np.stack(ab)


def sobol_indices(results: SweepResults, metric: str = "tsr", confidence: float = 0.95,
                  n_resamples: int = 2000, seed: int = 0) -> pl.DataFrame:
    """Sobol indices of a point-mean metric for each parameter of a ``sobol`` sweep, per
    policy, scenario and replicate (needs every A, B and AB row of a scrambling).

    With R ≥ 2 complete scramblings: the mean of the R estimates and its t interval
    (`replicate_interval`; ``method`` "replicate t over R scramblings"); with one, the
    bootstrap over its base samples (`sobol_from_blocks`; ``method`` says it is too
    wide). ``scramblings`` counts the complete ones, ``n_base`` the base samples of
    each."""
    if results.kind != "sobol":
        raise ValueError(f"{results.root}: Sobol indices need a sobol design, this sweep "
                         f"is {results.kind!r}")
    n_base = int(results.manifest.get("design", {}).get("points") or 0)
    # each point's per-trajectory values (a list, trajectory order): the mean function's
    # indices and their noise term need them (`wmtsim.studies.sweeps.sobol.sobol_mean_function`)
    per = (results.trajectories(["key", "trajectory", metric]).collect()
           .sort("key", "trajectory").group_by("key", maintain_order=True)
           .agg(pl.col(metric).cast(pl.Float64).alias(f"{metric}__t")))
    table = results.table().join(per, on="key", how="left")
    return sobol_table(table, results.parameters, n_base, metric, confidence,
                       n_resamples, seed, trajectories=f"{metric}__t")


def sobol_table(table: pl.DataFrame, params: Sequence[str], n_base: int,
                metric: str = "tsr", confidence: float = 0.95, n_resamples: int = 2000,
                seed: int = 0, trajectories: str | None = None) -> pl.DataFrame:
    """`sobol_indices` of a design table: one row per point with ``policy``,
    ``scenario``, ``replicate``, ``block``, ``base``, ``block_param`` and ``metric``;
    ``n_base`` is the design's N (base samples per scrambling). ``trajectories``: a
    column of each point's per-trajectory values (lists, in trajectory order, the same
    trajectories at every point: common random numbers); with it and R ≥ 2 scramblings
    the indices are the mean function's (`wmtsim.studies.sweeps.sobol.sobol_mean_function`,
    with ``noise_share``), without it those of the point means as given (a deterministic
    f; ``noise_share`` NaN)."""

    if n_base and table.height:  # scrambling r holds base samples r·N .. r·N + N − 1
        table = table.with_columns((pl.col("base") // n_base).alias("scrambling"))
    else:
        table = table.with_columns(pl.lit(0).alias("scrambling"))
    rows: list[dict[str, Any]] = []
    for (policy, scenario, replicate), g in table.group_by(
            "policy", "scenario", "replicate", maintain_order=True):
        blocks = [x for _, part in sorted(g.partition_by("scrambling", as_dict=True).items())
                  if (x := _blocks(part, params, metric)) is not None]
        if not blocks:
            continue  # the sweep is not complete for this group
        r = len(blocks)
        per = ([x for _, part in sorted(g.partition_by("scrambling", as_dict=True).items())
                if (x := _blocks(part, params, trajectories)) is not None]
               if trajectories is not None and r >= 2 else [])
        noise = math.nan
        fin = (_finite_trajectories(per) if len(per) == r and _common_trajectories(per)
               else None)
        if fin is not None and fin[0].shape[-1] >= 2 * r:
            res = sobol_mean_function(*fin, confidence)
            est = {k: res[k] for k in ("S1", "S1_low", "S1_high", "ST", "ST_low", "ST_high")}
            noise = res["noise_share"]
            method = res["flat"] or (
                f"mean function: Fieller over {r} scramblings, each on its own "
                f"{res['trajectories']} trajectories, noise removed")
        elif r >= 2:
            s1_r, st_r = (np.stack(e) for e in zip(*(sobol_estimate(*x) for x in blocks),
                                                   strict=True))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a constant output: NaN
                (s1, s1_lo, s1_hi), (st, st_lo, st_hi) = (
                    replicate_interval(s1_r, confidence), replicate_interval(st_r, confidence))
            est = {"S1": s1, "S1_low": s1_lo, "S1_high": s1_hi,
                   "ST": st, "ST_low": st_lo, "ST_high": st_hi}
            method = f"replicate t over {r} scramblings"
        else:
            est = sobol_from_blocks(*blocks[0], confidence, n_resamples, seed)
            method = "bootstrap over one scrambling's points (too wide)"
        if not all(np.all(np.isfinite(v)) for v in est.values()):  # no NaN to a user
            method = (method if method.startswith("flat") else
                      "flat: indices undefined (the output does not vary over the design)")
        for i, p in enumerate(params):
            rows.append({"policy": policy, "scenario": scenario, "replicate": replicate,
                         "metric": metric, "parameter": p,
                         **{k: (float(v[i]) if math.isfinite(float(v[i])) else None)
                            for k, v in est.items()},
                         "n_base": int(blocks[0][0].size), "scramblings": r,
                         "noise_share": float(noise), "method": method})
    floats = ("S1", "S1_low", "S1_high", "ST", "ST_low", "ST_high", "noise_share")
    return pl.DataFrame(rows, schema_overrides=dict.fromkeys(floats, pl.Float64))


def _common_trajectories(per: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> int:
    """How many trajectories every point of every scrambling has (the same length)."""
    sizes = {x.shape[-1] for blocks in per for x in blocks if x.ndim >= 2}
    return sizes.pop() if len(sizes) == 1 else 0


def _finite_trajectories(per: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a (R, N, n), b (R, N, n), ab (R, d, N, n)) on the trajectories whose value is
    finite at every point (one missing somewhere is left out everywhere, as the
    flatness test does, so every point's mean is over the same trajectories)."""
    a, b, ab = (np.stack([x[i] for x in per]) for i in range(3))
    ok = (np.all(np.isfinite(a), axis=(0, 1)) & np.all(np.isfinite(b), axis=(0, 1))
          & np.all(np.isfinite(ab), axis=(0, 1, 2)))
    return a[..., ok], b[..., ok], ab[..., ok]


# --- robustness ----------------------------------------------------------------------------


def robust_settings(table: pl.DataFrame, parameters: Sequence[str], metric: str = "tsr"
                    ) -> pl.DataFrame:
    """Each (setting, policy)'s worst case of ``metric`` over scenarios and replicates,
    best worst case first. Columns: the parameters, policy, ``worst``, ``mean``, ``cases``
    and the scenario/replicate of the worst case."""
    higher = _higher_is_better(metric)
    worst = pl.col(metric).min() if higher else pl.col(metric).max()
    arg = pl.col(metric).arg_min() if higher else pl.col(metric).arg_max()
    out = (table.group_by("row", "policy", maintain_order=True)
           .agg(*[pl.col(p).first() for p in parameters],
                worst.alias("worst"), pl.col(metric).mean().alias("mean"),
                pl.len().alias("cases"),
                pl.col("scenario").gather(arg).first().alias("worst_scenario"),
                pl.col("replicate").gather(arg).first().alias("worst_replicate")))
    return out.sort(["worst", "mean"], descending=[higher, higher], nulls_last=True)


# --- charts --------------------------------------------------------------------------------


def heatmap_chart(frame: pl.DataFrame, x: str, y: str, metric: str = "tsr",
                  binned: bool = False) -> alt.FacetChart:
    """Mean ``metric`` over parameters ``x`` and ``y`` (averaged over everything else),
    one panel per policy; ``binned`` bins continuous designs (lhs, sobol, random)."""
    import altair as alt

    if binned:
        data = frame.select("policy", x, y, metric).to_pandas()
        enc_x = alt.X(f"{x}:Q", bin=alt.Bin(maxbins=10), title=x)
        enc_y = alt.Y(f"{y}:Q", bin=alt.Bin(maxbins=10), title=y)
        color = alt.Color(f"mean({metric}):Q", title=metric,
                          scale=alt.Scale(scheme="viridis",
                                          reverse=not _higher_is_better(metric)))
        return alt.Chart(data).mark_rect().encode(x=enc_x, y=enc_y, color=color).properties(
            width=220, height=180).facet(column="policy:N").properties(
            title=f"{metric} over {x} × {y}")
    data = (frame.group_by("policy", x, y).agg(pl.col(metric).mean())
            .sort("policy", x, y).to_pandas())
    return alt.Chart(data).mark_rect().encode(
        x=alt.X(f"{x}:O", title=x), y=alt.Y(f"{y}:O", title=y, sort="descending"),
        color=alt.Color(f"{metric}:Q", title=metric,
                        scale=alt.Scale(scheme="viridis",
                                        reverse=not _higher_is_better(metric))),
        tooltip=[x, y, alt.Tooltip(f"{metric}:Q", format=D3_FORMAT), "policy"],
    ).properties(width=220, height=180).facet(column="policy:N").properties(
        title=f"{metric} over {x} × {y}")


def pareto_chart(frame: pl.DataFrame, front: pl.DataFrame, cost: str = "prompt_tokens",
                 value: str = "tsr") -> alt.LayerChart:
    """Every point (TSR against prompt tokens) with the Pareto front drawn as a line."""
    import altair as alt

    base = alt.Chart(frame.to_pandas()).mark_circle(size=30, opacity=0.45).encode(
        x=alt.X(f"{cost}:Q", scale=alt.Scale(zero=False)),
        y=alt.Y(f"{value}:Q", scale=alt.Scale(zero=False)),
        color="policy:N", tooltip=[c for c in frame.columns if c != "key"][:12])
    line = alt.Chart(front.to_pandas()).mark_line(point=True, color="black").encode(
        x=f"{cost}:Q", y=f"{value}:Q", detail="policy:N")
    return (base + line).properties(width=420, height=300,
                                    title=f"Pareto front: {value} vs {cost}")


def sensitivity_chart(indices: pl.DataFrame) -> alt.FacetChart:
    """First-order and total Sobol indices with their intervals, one row per policy."""
    import altair as alt

    long = pl.concat([
        indices.select("policy", "parameter", pl.lit(kind).alias("index"),
                       pl.col(kind).alias("value"), pl.col(f"{kind}_low").alias("low"),
                       pl.col(f"{kind}_high").alias("high"))
        for kind in ("S1", "ST")]).group_by("policy", "parameter", "index").mean()
    data = long.to_pandas()
    bars = alt.Chart().mark_bar().encode(
        x=alt.X("parameter:N"), xOffset="index:N",
        y=alt.Y("value:Q", title="Sobol index (S1 first order, ST total)"),
        color=alt.Color("index:N", title="index"))
    errs = alt.Chart().mark_errorbar().encode(
        x="parameter:N", xOffset="index:N",
        y=alt.Y("low:Q", title="Sobol index (S1 first order, ST total)"), y2="high:Q")
    return alt.layer(bars, errs, data=data).properties(width=320, height=200).facet(
        row="policy:N").properties(title="Sobol indices (bootstrap intervals)")


def write_chart(chart: Any, base: Path) -> list[Path]:
    """Write ``base``.html and ``base``.png (PNG via vl-convert), each atomically; returns
    the files."""
    from wmtsim.core.output import atomic_write

    html, png = base.with_suffix(".html"), base.with_suffix(".png")
    # altair picks the format from the name's suffix: keep it on the temporary file too.
    atomic_write(html, lambda tmp: chart.save(str(tmp), format="html"))
    atomic_write(png, lambda tmp: chart.save(str(tmp), format="png"))
    return [html, png]


# --- the analyze command -------------------------------------------------------------------


def analyze(root: str | os.PathLike[str], out: str | os.PathLike[str] | None = None,
            metric: str = "tsr", n_resamples: int = 2000, charts: bool = True
            ) -> dict[str, Path | list[Path]]:
    """Write ``point_means``, ``pareto``, ``robust`` (and ``sobol`` for sobol designs)
    tables as CSV and Parquet, the charts and a ``manifest.json``, to ``out`` (default
    ``root/analysis``), as one unit (`wmtsim.core.output.result_folder`): a bad metric or a
    failure on the way leaves ``out`` as it was. Everything is computed before anything
    is written, so a damaged sweep is named as such (`SweepError`), never blamed on
    ``out``. The manifest says whether the sweep was complete (`incomplete` gives the
    counts to warn about)."""
    from wmtsim.core.output import check_out_folder, result_folder, write_manifest
    from wmtsim.core.provenance import provenance

    if not Path(root).is_dir():
        raise SweepError(f"{root}: not a sweep folder (not a folder at all); allowed: a "
                         "folder written by `wmtsim sweep`")
    results = load_results(root)
    if metric not in METRIC_NAMES:
        raise SweepError(f"--metric {metric!r} is unknown; allowed: {', '.join(METRIC_NAMES)}")
    dest = check_out_folder(Path(out) if out is not None else Path(root) / "analysis",
                            "analyze")
    try:
        tables, chart_objects = _analysis(results, metric, n_resamples, charts)
    except (OSError, pl.exceptions.PolarsError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e).split("\n")[0]
        raise SweepError(f"{root}: cannot read the sweep's chunks ({reason}); the sweep "
                         "folder is damaged: re-run `wmtsim sweep` into a new --out") from None
    written: dict[str, Path | list[Path]] = {}
    with result_folder(dest, "analyze") as work:
        for name, frame in tables.items():
            atomic_write_parquet(frame, work / f"{name}.parquet")
            atomic_write(work / f"{name}.csv", frame.write_csv)
            written[name] = work / f"{name}.csv"
        for name, (chart, base) in chart_objects.items():
            written[name] = write_chart(chart, work / base)
        write_manifest(work, "analyze", {
            "sweep": str(root), "sweep_id": results.manifest.get("sweep_id"),
            "metric": metric, "points_done": results.manifest.get("n_done"),
            "points_total": results.manifest.get("n_points"),
            "complete": bool(results.manifest.get("complete")),
            "n_resamples": n_resamples,
            # the flatness tests: their own resamples and family (studies/sweeps/flatness.py)
            "flatness": {"resamples": resamples_for(ALPHA), "family": sorted(set(
                tables["flatness"]["family"].to_list()))}},
            extra=provenance(results.manifest.get("seed", results.manifest.get(
                "design", {}).get("seed")), results.manifest.get("design", {}).get(
                "trajectories"), n_resamples, ALPHA, "holm"))
    return {k: ([dest / p.name for p in v] if isinstance(v, list) else dest / v.name)
            for k, v in written.items()}


def incomplete(root: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(points done, points in the design) when the sweep in ``root`` is not complete."""
    manifest = load_results(root).manifest
    if manifest.get("complete"):
        return None
    return int(manifest.get("n_done", 0)), int(manifest.get("n_points", 0))


def _analysis(results: SweepResults, metric: str, n_resamples: int, charts: bool
              ) -> tuple[dict[str, pl.DataFrame], dict[str, tuple[Any, str]]]:
    """The tables (name -> frame) and charts (name -> (chart, file base)) of `analyze`."""
    metrics = tuple(dict.fromkeys((metric, *DEFAULT_METRICS)))
    means = point_means(results, metrics, n_resamples=n_resamples)
    table = results.design.join(means.select("key", *[c for c in means.columns
                                                      if c.startswith(metrics)]),
                                on="key", how="inner")
    params = results.parameters
    front = pareto_front(means)
    from wmtsim.studies.sweeps.flatness import flatness

    # the metric's test, and TSR's (the Pareto front names its highest TSR only when
    # TSR is not flat); each metric's tests are their own family
    flat = pl.concat([flatness(results, m) for m in dict.fromkeys((metric, "tsr"))
                      if m in means.columns or m == metric])
    tables = {"point_means": means, "pareto": front, "flatness": flat,
              "robust": robust_settings(table, params, metric)}
    indices = None
    if results.kind == "sobol":
        indices = sobol_indices(results, metric, n_resamples=n_resamples)
        tables["sobol"] = indices
    chart_objects: dict[str, tuple[Any, str]] = {}
    if charts and means.height:
        chart_objects["pareto_chart"] = (pareto_chart(means, front), "pareto")
        numeric = [p for p in params if means.schema[p].is_numeric()]
        if len(numeric) >= 2:
            chart_objects["heatmap_chart"] = (
                heatmap_chart(means, numeric[0], numeric[1], metric,
                              binned=results.kind != "grid"), "heatmap")
        if indices is not None and indices.height:
            chart_objects["sensitivity_chart"] = (sensitivity_chart(indices), "sensitivity")
    return tables, chart_objects
