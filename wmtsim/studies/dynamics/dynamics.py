"""How poison lives, spreads and dies over a population of trajectories.

The engine counts (`wmtsim.engine.dynamics`, no step records); this module turns the
counts into statistics, with our own numpy:

* `kaplan_meier`: the probability S(k) that a poison still remains (is eligible, or is
  carried by an eligible summary: IP's rule, Eq. 10) k prompt steps after its injection,
  censored at the trajectory's last prompt step (Kaplan & Meier 1958), with Greenwood's
  variance and the log–log ("exponential Greenwood") confidence band lifelines uses;
* `median_lifetime`: the smallest k with S(k) <= 1/2, with the interval read off the band
  (Brookmeyer & Crowley 1982): the first k at which the lower / upper band reaches 1/2;
* `fate_table`: the share of injected poisons ending in each fate, with Wilson intervals;
* `spread_table`: which share of contaminated prompts is contaminated only through a
  summary (no original poison in the context), and the share of prompts contaminated.

`population_dynamics` runs a scenario's configurations in chunks (memory flat in n) and
returns every table; `write_dynamics` writes them as Parquet with charts and a manifest
through the common output layer (`wmtsim dynamics`, `wmtsim.interfaces.cli.dynamics`).
Poisons of one trajectory are not independent; the intervals treat them as if they were
(docs/model_decisions.md, "Population dynamics").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.stats import norm

from wmtsim.core.world_spec import POISON_KINDS
from wmtsim.engine.dynamics import FATES, Dynamics

ALL = "all"  # the pooled row over poison kinds
CHUNK = 2000  # trajectories per engine call: memory stays flat in n


def kaplan_meier(events: np.ndarray, censored: np.ndarray, confidence: float = 0.95
                 ) -> pl.DataFrame:
    """The Kaplan–Meier estimate from counts of lifetimes ending (``events[k]``) or
    censored (``censored[k]``) at k = 0, 1, ...

    A lifetime censored at k is known to exceed k (it is in the risk set at k, and events
    at k come first). Columns: ``k``, ``at_risk`` n_k, ``events`` d_k, ``censored``,
    ``survival`` S(k) = Π_{j<=k} (1 − d_j/n_j), ``se`` (Greenwood:
    S² Σ d_j / (n_j (n_j − d_j))), ``low`` / ``high``: the log–log band
    S^exp(±z σ), σ² = Σ d_j/(n_j(n_j − d_j)) / (log S)². Rows stop at the last k with
    anyone at risk.
    """
    d = np.asarray(events, dtype=np.float64)
    c = np.asarray(censored, dtype=np.float64)
    at_risk = np.cumsum((d + c)[::-1])[::-1]
    keep = int(np.nonzero(at_risk > 0)[0][-1]) + 1 if (at_risk > 0).any() else 0
    d, c, n = d[:keep], c[:keep], at_risk[:keep]
    survival = np.cumprod(1.0 - d / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(n > d, d / (n * (n - d)), 0.0)
        greenwood = np.cumsum(terms)
        se = survival * np.sqrt(greenwood)
        z = float(norm.ppf(0.5 + confidence / 2.0))
        log_s = np.log(survival)
        sigma = np.sqrt(greenwood) / np.abs(log_s)
        low = np.exp(-np.exp(np.log(-log_s) + z * sigma))
        high = np.exp(-np.exp(np.log(-log_s) - z * sigma))
    # S = 1 (no event yet) and S = 0 (everyone gone) have degenerate bands: the point.
    flat = (survival >= 1.0) | (survival <= 0.0) | ~np.isfinite(low) | ~np.isfinite(high)
    low = np.where(flat, survival, low)
    high = np.where(flat, survival, high)
    return pl.DataFrame({"k": np.arange(keep, dtype=np.int64), "at_risk": n.astype(np.int64),
                         "events": d.astype(np.int64), "censored": c.astype(np.int64),
                         "survival": survival, "se": se, "low": low, "high": high})


def median_lifetime(km: pl.DataFrame) -> dict[str, float]:
    """The median lifetime (steps) and its interval from `kaplan_meier`'s band; NaN where
    the curve (or a band) never reaches 1/2 (``n``: poisons at risk at k = 0)."""

    def first(column: str) -> float:
        hits = np.nonzero(km[column].to_numpy() <= 0.5)[0]
        return float(km["k"][int(hits[0])]) if hits.size else float("nan")

    return {"median": first("survival"), "median_low": first("low"),
            "median_high": first("high"),
            "n": float(km["at_risk"][0]) if km.height else 0.0}


def wilson(successes: np.ndarray, total: np.ndarray, confidence: float = 0.95
           ) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of a share (NaN where ``total`` is 0)."""
    z = float(norm.ppf(0.5 + confidence / 2.0))
    x = np.asarray(successes, dtype=np.float64)
    n = np.asarray(total, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = x / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _by_kind(dyn: Dynamics, name: str) -> dict[str, np.ndarray]:
    """An array of ``dyn`` whose first axis is the poison kind, per kind and pooled."""
    a = dyn.counts[name]
    return {**{kind: a[i] for i, kind in enumerate(POISON_KINDS)}, ALL: a.sum(axis=0)}


def survival_table(dyn: Dynamics, confidence: float = 0.95) -> pl.DataFrame:
    """`kaplan_meier` per poison kind (and pooled, ``kind = "all"``), kinds with poison."""
    parts = []
    for kind, s in _by_kind(dyn, "survival").items():
        if s.sum() == 0:
            continue
        km = kaplan_meier(s[:, 0], s[:, 1], confidence)
        parts.append(km.with_columns(pl.lit(dyn.policy).alias("policy"),
                                     pl.lit(kind).alias("kind")))
    return pl.concat(parts).select("policy", "kind", pl.exclude("policy", "kind")) if parts \
        else pl.DataFrame(schema={"policy": pl.Utf8, "kind": pl.Utf8, "k": pl.Int64})


def lifetime_table(survival: pl.DataFrame) -> pl.DataFrame:
    """The median lifetime with its interval per (policy, kind) of `survival_table`."""
    rows = []
    for (policy, kind), km in survival.group_by(["policy", "kind"], maintain_order=True):
        rows.append({"policy": policy, "kind": kind, **median_lifetime(km.sort("k"))})
    return pl.DataFrame(rows, schema={"policy": pl.Utf8, "kind": pl.Utf8,
                                      "median": pl.Float64, "median_low": pl.Float64,
                                      "median_high": pl.Float64, "n": pl.Float64})


def fate_table(dyn: Dynamics, confidence: float = 0.95) -> pl.DataFrame:
    """Per kind (and pooled) and fate: ``poisons``, ``share`` of the kind's poisons with
    its Wilson interval, ``never_selected`` (of them), ``mean_k`` (steps after injection
    at which it happened; for a poison still remaining, the end)."""
    rows = []
    fk = _by_kind(dyn, "fate_k")
    ns = _by_kind(dyn, "never_selected")
    for kind, h in fk.items():
        per_fate = h.sum(axis=1)
        total = per_fate.sum()
        if total == 0:
            continue
        low, high = wilson(per_fate, np.full(len(FATES), total), confidence)
        for j, fate in enumerate(FATES):
            mean_k = (float((np.arange(h.shape[1]) * h[j]).sum() / per_fate[j])
                      if per_fate[j] else float("nan"))
            rows.append({"policy": dyn.policy, "kind": kind, "fate": fate,
                         "poisons": int(per_fate[j]), "share": float(per_fate[j] / total),
                         "low": float(low[j]), "high": float(high[j]),
                         "never_selected": int(ns[kind][j]), "mean_k": mean_k})
    return pl.DataFrame(rows, schema={
        "policy": pl.Utf8, "kind": pl.Utf8, "fate": pl.Utf8, "poisons": pl.Int64,
        "share": pl.Float64, "low": pl.Float64, "high": pl.Float64,
        "never_selected": pl.Int64, "mean_k": pl.Float64})


def spread_table(dyn: Dynamics, confidence: float = 0.95) -> pl.DataFrame:
    """Contamination and its route, over all prompts: ``contaminated_share`` of prompts
    (BR's T_c / T_p), ``via_summary_share`` of contaminated prompts with a contaminated
    summary in context, ``summary_only_share`` of contaminated prompts with no original
    poison in context (contamination that came through a summary only)."""
    s = dyn.counts["steps"].sum(axis=0)
    from wmtsim.engine.dynamics import STEP_COLUMNS

    c = dict(zip(STEP_COLUMNS, s.tolist(), strict=True))
    only = c["contaminated"] - c["via_original"]
    out: dict[str, Any] = {"policy": dyn.policy, "prompts": c["prompts"],
                           "contaminated": c["contaminated"],
                           "via_summary": c["via_summary"], "summary_only": only}
    for name, x, n in (("contaminated_share", c["contaminated"], c["prompts"]),
                       ("via_summary_share", c["via_summary"], c["contaminated"]),
                       ("summary_only_share", only, c["contaminated"])):
        low, high = wilson(np.array([x]), np.array([n]), confidence)
        out[name] = x / n if n else float("nan")
        out[f"{name}_low"], out[f"{name}_high"] = float(low[0]), float(high[0])
    return pl.DataFrame([out])


def steps_table(dyn: Dynamics) -> pl.DataFrame:
    """`Dynamics.steps_frame` with the shares a chart plots: ``contaminated_share`` of the
    prompts at t, ``eligible_share`` / ``remaining_share`` / ``selected_share`` of the
    poisons existing at t, ``compromised_share`` of the critical steps at t,
    ``compromising_share`` of the poisons existing at t that persuaded the reasoner."""
    f = dyn.steps_frame()

    def share(x: str, n: str) -> pl.Expr:
        return pl.when(pl.col(n) > 0).then(pl.col(x) / pl.col(n)).otherwise(None)

    return f.with_columns(
        share("contaminated", "prompts").alias("contaminated_share"),
        share("eligible", "poisons").alias("eligible_share"),
        ((pl.col("eligible") + pl.col("carried")) / pl.col("poisons")).alias(
            "remaining_share"),
        share("selected", "poisons").alias("selected_share"),
        share("compromised", "critical").alias("compromised_share"),
        share("compromising", "poisons").alias("compromising_share"))


# --- a scenario's configurations ---------------------------------------------------------


@dataclass
class DynamicsReport:
    """Every table of one scenario's configurations (one frame each, a ``policy`` column)."""

    scenario: str
    policies: tuple[str, ...]
    n: int
    seed: int
    steps: pl.DataFrame
    since: pl.DataFrame
    survival: pl.DataFrame
    lifetimes: pl.DataFrame
    fates: pl.DataFrame
    spread: pl.DataFrame
    seconds: float

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"steps": self.steps, "since": self.since, "survival": self.survival,
                "lifetimes": self.lifetimes, "fates": self.fates, "spread": self.spread}


def run_dynamics(scenario: Any, policy: str, n: int, seed: int, threads: int | None = None,
                 chunk: int = CHUNK) -> Dynamics:
    """One configuration's aggregates over trajectories 0 .. n−1, ``chunk`` at a time."""
    from wmtsim.engine.dynamics import aggregates_of
    from wmtsim.engine.simulation import run_engine
    from wmtsim.engine.world import generate

    total: Dynamics | None = None
    for start in range(0, n, chunk):
        world = generate(scenario.world, seed=seed, n=min(chunk, n - start), start=start)
        _, _, rec = run_engine(world, policy, scenario.params, scenario.stubs,
                               scenario.baselines, threads, dynamics=True)
        part = Dynamics(policy, aggregates_of(rec))
        total = part if total is None else total.merge(part)
    assert total is not None
    return total


def population_dynamics(scenario: Any, policies: tuple[str, ...] | None = None,
                        n: int | None = None, seed: int | None = None,
                        threads: int | None = None, confidence: float = 0.95,
                        progress: Callable[[str], None] | None = None) -> DynamicsReport:
    """Every table for ``scenario`` (a `wmtsim.studies.scenarios.scenario.Scenario`) under each of
    ``policies`` (default: the scenario's), on the same trajectories (common random
    numbers); ``progress`` is called with each configuration's name as it is run, then
    with "tables"."""
    from wmtsim.core.policies import get_policy

    policies = tuple(policies or scenario.policies)
    for p in policies:
        get_policy(p)  # an unknown name fails before any work
    n = int(n or scenario.n)
    seed = int(scenario.seed if seed is None else seed)
    t0 = time.perf_counter()
    dyns = []
    for p in policies:
        dyns.append(run_dynamics(scenario, p, n, seed, threads))
        if progress is not None:
            progress(p)
    survival = pl.concat([survival_table(d, confidence) for d in dyns], how="diagonal")
    report = DynamicsReport(
        scenario.name, policies, n, seed,
        steps=pl.concat([steps_table(d) for d in dyns]),
        since=pl.concat([d.since_frame() for d in dyns]),
        survival=survival, lifetimes=lifetime_table(survival),
        fates=pl.concat([fate_table(d, confidence) for d in dyns]),
        spread=pl.concat([spread_table(d, confidence) for d in dyns]),
        seconds=time.perf_counter() - t0)
    if progress is not None:
        progress("tables")
    return report


def write_dynamics(rep: DynamicsReport, out: Path, charts: bool = True) -> list[Path]:
    """``<table>.parquet`` for every table, the charts (HTML + PNG) and manifest.json into
    ``out`` (the hidden folder of `wmtsim.core.output.result_folder`)."""
    from wmtsim.core.output import atomic_write_parquet, write_manifest
    from wmtsim.core.provenance import provenance
    from wmtsim.studies.dynamics.charts import fate_chart, steps_chart, survival_chart
    from wmtsim.studies.sweeps.analysis import write_chart

    out.mkdir(parents=True, exist_ok=True)
    written = [atomic_write_parquet(t, out / f"{name}.parquet")
               for name, t in rep.tables().items()]
    if charts:
        title = f"{rep.scenario} (n={rep.n})"
        written += write_chart(survival_chart(rep.survival, title), out / "survival")
        written += write_chart(fate_chart(rep.fates, title), out / "fates")
        written += write_chart(steps_chart(rep.steps, title), out / "contamination")
    written.append(write_manifest(out, "dynamics", {
        "scenario": rep.scenario, "policies": list(rep.policies), "n": rep.n,
        "seed": rep.seed, "seconds": round(rep.seconds, 3)},
        extra=provenance(rep.seed, rep.n, None, 0.05, None)))
    return written
