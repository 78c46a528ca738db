"""Settings evaluated in memory on the sweep machinery (for `screen` and `tune`).

A *setting* is a dict of overrides (``{"params.rho": 0.8}``) on a scenario. `make_point`
resolves it into the sweep's `Point` (same content hash and key, so the same setting on
the same seed and size is the same computation as in a sweep), and `evaluate` runs points
with the sweep's executors (`wmtsim.studies.sweeps.run.execute`: in-process, a local
pool, or dask) and keeps each point's per-trajectory metrics in memory. Every point of
one seed sees the same trajectories (common random numbers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.studies.sweeps.design import Point, content_hash, point_key
from wmtsim.studies.sweeps.spec import METRIC_NAMES

if TYPE_CHECKING:
    from wmtsim.studies.scenarios.scenario import Scenario


MAX_HELD = 20_000_000
"""Trajectories whose metrics `evaluate` holds at once (13 float64 each: about 2 GB); a
request beyond it is refused when it is parsed (`check_held`), not after filling memory."""


def check_held(points: int, n: int, what: str) -> None:
    """Refuse ``points`` points of ``n`` trajectories each beyond `MAX_HELD` (ValueError
    naming ``what``, the options that set the number of points)."""
    if points * n > MAX_HELD:
        raise ValueError(f"{what} gives {points:,} points of n = {n:,} trajectories, "
                         f"{points * n:,} held in memory at once; allowed: at most "
                         f"{MAX_HELD:,} (fewer points or a smaller --n)")


def make_point(scenario: Scenario, setting: Mapping[str, Any], policy: str, seed: int,
               n: int, row: int = 0) -> Point:
    """The sweep point of ``setting`` on ``scenario`` (validated like a sweep row)."""
    resolved = scenario.with_overrides(dict(setting))
    content = content_hash(resolved.world, resolved.params, resolved.stubs,
                           resolved.baselines)
    return Point(point_key(content, policy, seed, n), row, scenario.name, 0, seed, policy,
                 resolved.world, resolved.params, resolved.stubs, resolved.baselines)


@dataclass(frozen=True)
class Outcome:
    """One point's per-trajectory metrics: ``values[t, j]`` is metric `METRIC_NAMES`[j]
    of trajectory t (NaN where undefined)."""

    values: np.ndarray

    def metric(self, name: str) -> np.ndarray:
        return self.values[:, METRIC_NAMES.index(name)]

    def mean(self, name: str) -> float:
        x = self.metric(name)
        x = x[np.isfinite(x)]
        return float(x.mean()) if x.size else float("nan")


def evaluate(points: Sequence[Point], n: int, *, workers: int = 1,
             scheduler: str | None = None, threads: int | None = None
             ) -> dict[str, Outcome]:
    """Run ``points`` (each key once) and return their outcomes by key."""
    from wmtsim.studies.sweeps.run import execute

    unique = list({p.key: p for p in points}.values())
    out: dict[str, Outcome] = {}
    for res in execute(unique, n, workers=workers, scheduler=scheduler, threads=threads):
        for i, key in enumerate(res.keys):
            out[key] = Outcome(res.values[i])
    return out


def paired_se(a: np.ndarray, b: np.ndarray) -> float:
    """Standard error of mean(b − a) over the trajectories where both are defined (the
    two share their trajectories: common random numbers)."""
    ok = np.isfinite(a) & np.isfinite(b)
    d = b[ok] - a[ok]
    return float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
