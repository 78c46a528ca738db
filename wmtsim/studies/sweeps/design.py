"""A sweep's design and plan: design rows (grid, LHS, Sobol, random), points and their
content keys, the `Plan`, and the `Task` / `ChunkResult` a worker exchanges.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wmtsim import __version__
from wmtsim.core.field_knobs import Baselines
from wmtsim.core.params import Params
from wmtsim.core.stubs import Stubs
from wmtsim.core.world_spec import WorldSpec
from wmtsim.studies.sweeps.spec import Sweep

# --- design rows ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DesignRow:
    """One parameter setting. ``block`` is ``A``, ``B`` or ``AB`` for sobol designs (``""``
    otherwise), ``base`` the base-sample index and ``block_param`` the AB column's
    parameter."""

    index: int
    values: dict[str, Any]
    block: str = ""
    base: int = -1
    block_param: str = ""


def scrambling_rng(seed: int, scrambling: int) -> np.random.Generator:
    """The generator of a sobol design's scrambling ``r``: ``seed`` itself for r = 0 (the
    one scrambling every sweep had before replicate scramblings), ``[seed, r]`` after, so
    the R scramblings are independent."""
    return np.random.default_rng(seed if scrambling == 0 else [seed, scrambling])


def unit_matrix(sweep: Sweep) -> np.ndarray:
    """The design's coordinates in [0, 1)^d (grid designs have none). For sobol designs,
    (R · N, 2d): the R = ``scramblings`` independently scrambled sequences of N points
    one after the other (docs/statistics.md, "Sobol indices")."""
    from scipy.stats import qmc

    d = len(sweep.parameters)
    seed = 0 if sweep.seed is None else sweep.seed
    rng = np.random.default_rng(seed)
    if sweep.kind == "lhs":
        return np.asarray(qmc.LatinHypercube(d=d, rng=rng).random(sweep.points))
    if sweep.kind == "random":
        return rng.random((sweep.points, d))
    if sweep.kind == "sobol":
        m = round(math.log2(sweep.points))
        return np.concatenate([
            np.asarray(qmc.Sobol(d=2 * d, scramble=True, rng=scrambling_rng(seed, r))
                       .random_base2(m)) for r in range(sweep.scramblings)])
    raise ValueError(f"no unit matrix for kind {sweep.kind!r}")


def design_rows(sweep: Sweep) -> Iterator[DesignRow]:
    """The design's rows, in a deterministic order."""
    specs = sweep.parameters
    keys = [s.key for s in specs]
    if sweep.kind == "grid":
        for i, combo in enumerate(itertools.product(*(s.grid_values() for s in specs))):
            yield DesignRow(i, dict(zip(keys, combo, strict=True)))
        return
    u = unit_matrix(sweep)
    d = len(specs)

    def values(coords: np.ndarray) -> dict[str, Any]:
        return {s.key: s.from_unit(float(x)) for s, x in zip(specs, coords, strict=True)}

    if sweep.kind != "sobol":
        for i in range(u.shape[0]):
            yield DesignRow(i, values(u[i]))
        return
    n = sweep.points
    for r in range(sweep.scramblings):
        # scrambling r: rows r·N(d+2) + ..., base samples r·N + j (`sobol_indices` of
        # wmtsim.studies.sweeps.analysis reads r back as base // N)
        a, b = u[r * n:(r + 1) * n, :d], u[r * n:(r + 1) * n, d:]
        first, base = r * n * (d + 2), r * n
        for j in range(n):
            yield DesignRow(first + j, values(a[j]), "A", base + j)
        for j in range(n):
            yield DesignRow(first + n + j, values(b[j]), "B", base + j)
        for i in range(d):
            for j in range(n):
                ab = a[j].copy()
                ab[i] = b[j, i]
                yield DesignRow(first + (2 + i) * n + j, values(ab), "AB", base + j, keys[i])


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


