"""The Python API of the engine: `simulate` and its `SimResult`.

``simulate(world, policy="wmt", n=1000, seed=0, params=Params())`` generates (or takes)
the trajectories of ``(seed, world)`` and runs them under one policy. Policies compared on
the same seed see the same trajectories (common random numbers), so
`wmtsim.core.inference.paired_difference` reports paired intervals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from wmtsim import __version__
from wmtsim.core.codes import KIND_NAMES, STATE_NAMES
from wmtsim.core.field_knobs import Baselines
from wmtsim.core.inference import metric_cis
from wmtsim.core.metrics import COUNTERS, SUMMARY_METRICS, metrics_from_counters
from wmtsim.core.params import Params
from wmtsim.core.policies import Policy, get_policy
from wmtsim.core.stubs import Stubs
from wmtsim.core.validation import check_int
from wmtsim.core.world_spec import OP_NAMES, World, WorldSpec
from wmtsim.engine.dynamics import Dynamics, aggregates_of
from wmtsim.engine.forest import Forest
from wmtsim.engine.loop import run
from wmtsim.engine.world import generate


@dataclass(kw_only=True)
class SimResult:
    """Results of one policy on a batch of trajectories.

    trajectories: one row per trajectory — provenance (policy, seed, trajectory, the
        parameter values, wmtsim version), the metrics and the raw counters.
    steps: per-step records (step, slot, world id, kind, u, m, state, eligible, selected,
        tokens) for the first ``record_steps`` trajectories: ``selected`` = in context at
        this step (the active path and the observation just made are in the prompt for
        every policy besides), ``tokens`` = the memory's size at this step, so the sum
        of ``tokens`` over ``selected`` is the context memory checked against B.
    """

    policy: str
    seed: int
    params: Params
    stubs: Stubs
    world: WorldSpec
    trajectories: pl.DataFrame
    steps: pl.DataFrame
    forest: Forest = field(repr=False)
    seconds: float = 0.0
    baselines: Baselines = field(default_factory=Baselines)
    aggregates: dict[str, np.ndarray] | None = field(default=None, repr=False)

    def dynamics(self) -> Dynamics:
        """The population aggregates of poison (`wmtsim.engine.dynamics`): those recorded
        by ``simulate(..., dynamics=True)``, else the same trajectories played again with
        them (the same seed gives the same trajectories)."""
        if self.aggregates is None:
            first = int(self.trajectories["trajectory"][0])
            w = generate(self.world, seed=self.seed, n=self.trajectories.height, start=first)
            _, _, rec = run_engine(w, self.policy, self.params, self.stubs, self.baselines,
                                   dynamics=True)
            self.aggregates = aggregates_of(rec)
        return Dynamics(self.policy, self.aggregates)

    def summary(self, confidence: float = 0.95, n_resamples: int = 2000) -> pl.DataFrame:
        """Each metric's mean with a bootstrap confidence interval (scipy.stats.bootstrap),
        and its pooled value (`pooled_ci`).

        ``mean``/``low``/``high``: the mean of per-trajectory values; trajectories where a
        metric is undefined (e.g. IP without injections) are left out, ``n`` says how many
        remain. ``pooled``/``pooled_low``/``pooled_high``: a ratio metric pooled over the
        corpus (Σ numerator / Σ denominator, `wmtsim.core.metrics.RATIOS`), as a paper's table
        over its scenario set is computed; for the other metrics the same as the mean.
        """
        cis = metric_cis([(self.trajectories, self.seed)], SUMMARY_METRICS, confidence,
                         n_resamples)
        return pl.DataFrame([{"policy": self.policy, "metric": name, **ci}
                             for name, ci in zip(SUMMARY_METRICS, cis, strict=True)])

    def tree(self, i: int) -> list[dict[str, Any]]:
        """Trajectory ``i``'s final memory tree (readable records)."""
        return self.forest.tree(i - int(self.trajectories["trajectory"][0]))


def run_engine(world: World, policy: str | Policy, params: Params, stubs: Stubs,
               baselines: Baselines, threads: int | None = None, record_steps: int = 0,
               dynamics: bool = False) -> tuple[np.ndarray, Forest, dict[str, np.ndarray]]:
    """The one path from the library to the engine: `simulate`, sweeps, `compare`,
    `calibrate` and the dashboard all run trajectories through here, so everything that
    changes a result (world, policy, params, stubs and the field's knobs) travels together.

    Returns the raw counters ``(n, N_COUNTERS)``, the final forest and the step records
    (with the population aggregates as ``dyn_*`` when ``dynamics``).
    """
    pol = policy if isinstance(policy, Policy) else get_policy(policy)
    check_int("simulate", "record_steps", record_steps, 0)
    if threads is not None:
        from numba import config

        # numba cannot run more threads than it started with (NUMBA_NUM_THREADS).
        check_int("simulate", "threads", threads, 1,
                  int(config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    return run(world, pol.pack(), params.pack(), stubs.pack(), record_steps, threads,
               baselines.pack(), dynamics)


def simulate(world: WorldSpec | World, policy: str | Policy = "wmt", n: int = 1000, seed: int = 0,
             params: Params | None = None, threads: int | None = None,
             record_steps: int = 0, stubs: Stubs | None = None, start: int = 0,
             baselines: Baselines | None = None, dynamics: bool = False) -> SimResult:
    """Run ``n`` trajectories of ``(seed, world)`` under ``policy``.

    ``world`` is a `WorldSpec` (trajectories ``start .. start+n-1`` are generated) or an
    already generated `World` (then ``n``, ``seed`` and ``start`` come from it).
    ``threads`` sets numba's thread count for this call only. ``record_steps`` keeps
    per-step u, m, state and selections for the first trajectories. ``baselines`` holds
    the knobs of the field's policies (`wmtsim.core.field_knobs.Baselines`; docs/field.md).
    ``dynamics`` also accumulates the population aggregates (`SimResult.dynamics`).
    """
    params = params or Params()
    stubs = stubs or Stubs()
    baselines = baselines or Baselines()
    pol = get_policy(policy)
    check_int("simulate", "record_steps", record_steps, 0)
    t0 = time.perf_counter()
    w = world if isinstance(world, World) else generate(world, seed=seed, n=n, start=start)
    counts, forest, rec = run_engine(w, pol, params, stubs, baselines, threads, record_steps,
                                     dynamics)
    seconds = time.perf_counter() - t0
    frame = _trajectory_frame(w, pol.name, params, stubs, counts)
    steps = _steps_frame(w, forest, rec)
    return SimResult(policy=pol.name, seed=w.seed, params=params, stubs=stubs, world=w.spec,
                     trajectories=frame, steps=steps, forest=forest, seconds=seconds,
                     baselines=baselines, aggregates=aggregates_of(rec) if dynamics else None)


def _trajectory_frame(w: World, policy: str, params: Params, stubs: Stubs,
                      counts: np.ndarray) -> pl.DataFrame:
    columns: dict[str, Any] = {
        "policy": [policy] * w.n,
        "seed": np.full(w.n, w.seed, dtype=np.int64),
        "trajectory": w.trajectories,
    }
    columns.update(metrics_from_counters(counts))
    for k, name in enumerate(COUNTERS):
        columns[f"n_{name}"] = counts[:, k]
    frame = pl.DataFrame(columns)
    provenance = {**{f"param_{k}": v for k, v in params.to_dict().items()},
                  **{f"stub_{k}": v for k, v in stubs.to_dict().items()},
                  "wmtsim_version": __version__}
    return frame.with_columns([pl.lit(v).alias(k) for k, v in provenance.items()])


def _steps_frame(w: World, forest: Forest, rec: dict[str, np.ndarray]) -> pl.DataFrame:
    r, n_steps, _ = rec["u"].shape
    parts = []
    for i in range(r):
        for s in range(n_steps):
            k = int(rec["n_slots"][i, s])
            if k == 0:
                continue
            parts.append(pl.DataFrame({
                "trajectory": np.full(k, w.start + i, dtype=np.int64),
                "step": np.full(k, s, dtype=np.int64),
                "event": [OP_NAMES[int(rec["event"][i, s])]] * k,
                "slot": np.arange(k, dtype=np.int64),
                "world_id": forest.wid[i, :k].astype(np.int64),
                "kind": [KIND_NAMES[x] for x in forest.kind[i, :k]],
                "poisoned": rec["poisoned"][i, s, :k],
                "u": rec["u"][i, s, :k],
                "m": rec["m"][i, s, :k],
                "state": [STATE_NAMES[x] for x in rec["state"][i, s, :k]],
                "eligible": rec["eligible"][i, s, :k],
                "selected": rec["selected"][i, s, :k],
                "tokens": rec["node_tokens"][i, s, :k],
            }))
    if not parts:
        return pl.DataFrame(schema={"trajectory": pl.Int64, "step": pl.Int64,
                                    "event": pl.Utf8, "slot": pl.Int64,
                                    "world_id": pl.Int64, "kind": pl.Utf8,
                                    "poisoned": pl.Boolean, "u": pl.Float64,
                                    "m": pl.Int64, "state": pl.Utf8,
                                    "eligible": pl.Boolean, "selected": pl.Boolean,
                                    "tokens": pl.Int64})
    return pl.concat(parts)
