"""A sweep's design and plan: design rows (grid, LHS, Sobol, random), points and their
content keys, the `Plan`, and the `Task` / `ChunkResult` a worker exchanges.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wmtsim import __version__
from wmtsim.core.field_knobs import Baselines
from wmtsim.core.params import Params
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import WorldSpec
from wmtsim.studies.sweep_file import Sweep, design_rows

# --- points and keys -----------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One simulation of a sweep: a design row on a scenario, replicate and policy."""

    key: str
    row: int
    scenario: str
    replicate: int
    seed: int
    policy: str
    world: WorldSpec
    params: Params
    stubs: Stubs
    baselines: Baselines = field(default_factory=Baselines)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr)


def content_hash(world: WorldSpec, params: Params, stubs: Stubs,
                 baselines: Baselines | None = None) -> str:
    """Hash of what the engine sees (the resolved scenario content, the field's knobs
    included: everything that changes a result is in the key)."""
    text = _canonical({"world": world.to_dict(), "params": params.to_dict(),
                       "stubs": stubs.to_dict(),
                       "baselines": (baselines or Baselines()).to_dict()})
    return hashlib.sha256(text.encode()).hexdigest()


def point_key(content: str, policy: str, seed: int, n: int,
              version: str = __version__) -> str:
    """The key of a point: its content hash, policy, seed, trajectories and version."""
    text = _canonical({"content": content, "policy": policy, "seed": seed, "n": n,
                       "version": version})
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass
class Plan:
    """A sweep expanded into points (each key once) and the design table's rows."""

    sweep: Sweep
    points: list[Point]
    design: list[dict[str, Any]] = field(repr=False)
    sweep_id: str = ""


def plan(sweep: Sweep) -> Plan:
    """Expand a sweep into its points, ordered so that points sharing a world are adjacent
    (a chunk generates each world once) and identical settings share one key."""
    points: dict[str, Point] = {}
    design: list[dict[str, Any]] = []
    for row in design_rows(sweep):
        for sc in sweep.scenarios:
            resolved = sc.with_overrides(row.values)
            content = content_hash(resolved.world, resolved.params, resolved.stubs,
                                   resolved.baselines)
            for r in range(sweep.replicates):
                seed = sweep.scenario_seed(sc) + r
                for pol in sweep.policies:
                    key = point_key(content, pol, seed, sweep.trajectories)
                    design.append({"row": row.index, "block": row.block, "base": row.base,
                                   "block_param": row.block_param, "scenario": sc.name,
                                   "replicate": r, "seed": seed, "policy": pol, "key": key,
                                   **{f"{k}": v for k, v in row.values.items()}})
                    if key not in points:
                        points[key] = Point(key, row.index, sc.name, r, seed, pol,
                                            resolved.world, resolved.params, resolved.stubs,
                                            resolved.baselines)
    ordered = sorted(points.values(), key=lambda p: (
        p.scenario, p.seed, _world_id(p.world), p.row, p.policy))
    ident = hashlib.sha256(_canonical({
        "keys": [d["key"] for d in design],
        "parameters": [s.key for s in sweep.parameters],
    }).encode()).hexdigest()[:16]
    return Plan(sweep, ordered, design, ident)


_WORLD_IDS: dict[WorldSpec, str] = {}


def _world_id(world: WorldSpec) -> str:
    if world not in _WORLD_IDS:
        _WORLD_IDS[world] = hashlib.sha256(_canonical(world.to_dict()).encode()).hexdigest()
    return _WORLD_IDS[world]



# --- a chunk of work and its result ----------------------------------------------------


@dataclass(frozen=True)
class Task:
    """What a worker needs: the points (resolved, no scenario files) and the size."""

    index: int
    points: tuple[Point, ...]
    n: int
    threads: int | None


@dataclass
class ChunkResult:
    """Per-point aggregates and per-trajectory metrics of one chunk, as plain arrays."""

    index: int
    keys: list[str]
    means: np.ndarray  # (points, metrics)
    sds: np.ndarray
    counts: np.ndarray
    trajectories: np.ndarray  # (points, n) int64, the trajectory ids
    values: np.ndarray  # (points, n, metrics) float64
    seconds: float


