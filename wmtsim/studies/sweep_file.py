"""The sweep file: `Sweep` and `ParameterSpec`, read and validated (`load_sweep`,
`sweep_from_dict`); docs/sweeps.md.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.metrics import METRICS

if TYPE_CHECKING:
    from wmtsim.studies.scenario import Scenario

METRIC_NAMES = tuple(METRICS)
DESIGN_KINDS = ("grid", "lhs", "sobol", "random")
TOP_KEYS = ("name", "description", "scenario", "scenarios", "policies", "parameters",
            "design")
DESIGN_KEYS = ("kind", "points", "trajectories", "seed", "replicates", "scramblings",
               "chunk")
PARAM_KEYS = ("values", "low", "high", "log", "integer", "levels")
_NOT_SWEPT = ("name", "description", "n", "seed", "policies", "paper")
# A chunk aims at about this many simulated trajectories (a few seconds of engine time).
CHUNK_TRAJECTORIES = 100_000
# Bounds checked when the file is read: a sweep's design and keys are built in memory, and
# each design row is validated up front; beyond these a typo would run for hours.
MAX_POINTS = 1_000_000
MAX_TRAJECTORIES = 10_000_000  # per point, as a scenario's n


class SweepError(ValueError):
    """A sweep file or output folder that cannot be used; the message says why."""


# --- the sweep file ------------------------------------------------------------------------


@dataclass(frozen=True)
class ParameterSpec:
    """One varied parameter: a list of ``values`` or a ``low``..``high`` range."""

    key: str
    values: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None
    log: bool = False
    integer: bool = False
    levels: int | None = None

    def from_unit(self, u: float) -> Any:
        """The value at coordinate ``u`` in [0, 1) (see the module docstring)."""
        if self.values is not None:
            return self.values[min(int(u * len(self.values)), len(self.values) - 1)]
        assert self.low is not None and self.high is not None
        if self.integer:
            lo, hi = int(self.low), int(self.high)
            if self.log:
                x = math.exp(math.log(lo) + u * (math.log(hi + 1) - math.log(lo)))
            else:
                x = lo + u * (hi - lo + 1)
            return min(max(math.floor(x), lo), hi)
        if self.log:
            return float(math.exp(math.log(self.low)
                                  + u * (math.log(self.high) - math.log(self.low))))
        return float(self.low + u * (self.high - self.low))

    def grid_values(self) -> tuple[Any, ...]:
        if self.values is not None:
            return self.values
        assert self.low is not None and self.high is not None and self.levels is not None
        space = np.geomspace if self.log else np.linspace
        xs = space(self.low, self.high, self.levels)
        if self.integer:
            return tuple(round(float(x)) for x in xs)
        return tuple(float(x) for x in xs)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"key": self.key}
        for name in ("values", "low", "high", "log", "integer", "levels"):
            v = getattr(self, name)
            if v is not None and v is not False:
                d[name] = list(v) if isinstance(v, tuple) else v
        return d


@dataclass(frozen=True)
class Sweep:
    """A validated sweep file."""

    name: str
    description: str
    path: Path | None
    scenarios: tuple[Scenario, ...]
    policies: tuple[str, ...]
    parameters: tuple[ParameterSpec, ...]
    kind: str
    points: int
    trajectories: int
    seed: int | None
    replicates: int
    chunk: int | None = None
    warnings: tuple[str, ...] = ()  # e.g. a knob that acts only in worlds this one is not
    scramblings: int = 1  # sobol designs: R independently scrambled sequences

    @property
    def rows(self) -> int:
        """Design rows (parameter settings), before scenarios × replicates × policies."""
        if self.kind == "sobol":
            return self.scramblings * self.points * (len(self.parameters) + 2)
        return self.points

    def scenario_seed(self, scenario: Scenario) -> int:
        return scenario.seed if self.seed is None else self.seed


def _where(path: Path | str | None) -> str:
    return str(path) if path is not None else "<sweep>"


def _err(path: Path | str | None, key: str, message: str) -> SweepError:
    return SweepError(f"{_where(path)}: {key}: {message}")


def _check_keys(path: Path | str | None, prefix: str, table: dict[str, Any],
                allowed: Sequence[str]) -> None:
    for k in table:
        if k not in allowed:
            where = f"{prefix}.{k}" if prefix else k
            raise _err(path, where, f"unknown key; allowed: {', '.join(allowed)}")


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_real(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _flatten_parameters(path: Path | str | None, table: object, prefix: str = ""
                        ) -> dict[str, dict[str, Any]]:
    """``[parameters.world.p_success]`` (nested tables) reads as ``"world.p_success"``."""
    if not isinstance(table, dict):
        raise _err(path, f"parameters{'.' + prefix if prefix else ''}",
                   "must be a table of parameters, e.g. [parameters.rho] values = [0.8, 0.9]")
    out: dict[str, dict[str, Any]] = {}
    for k, v in table.items():
        key = f"{prefix}.{k}" if prefix else k
        if not isinstance(v, dict):
            if prefix:  # a key inside a parameter's table
                raise _err(path, f"parameters.{key}",
                           f"unknown key; allowed: {', '.join(PARAM_KEYS)}")
            raise _err(path, f"parameters.{key}",
                       f"must be a table with {' | '.join(PARAM_KEYS)}, got {v!r}")
        if any(p in v for p in PARAM_KEYS) or not v:
            out[key] = v
        else:
            out.update(_flatten_parameters(path, v, key))
    return out


def _parse_parameter(path: Path | str | None, key: str, t: dict[str, Any], kind: str
                     ) -> ParameterSpec:
    where = f"parameters.{key}"
    _check_keys(path, where, t, PARAM_KEYS)
    if "values" in t:
        extra = sorted(set(t) - {"values"})
        if extra:
            raise _err(path, f"{where}.{extra[0]}", "cannot be combined with values "
                       "(give either values = [...] or low/high)")
        vals = t["values"]
        if not isinstance(vals, list) or not vals:
            raise _err(path, f"{where}.values", f"must be a non-empty list, got {vals!r}")
        if len({json.dumps(v, sort_keys=True) for v in vals}) != len(vals):
            raise _err(path, f"{where}.values", f"has duplicate values: {vals!r}")
        return ParameterSpec(key, values=tuple(vals))
    if "low" not in t or "high" not in t:
        missing = "low" if "low" not in t else "high"
        raise _err(path, f"{where}.{missing}",
                   "is required (give values = [...], or both low and high)")
    low, high = t["low"], t["high"]
    for name, v in (("low", low), ("high", high)):
        if not _is_real(v):
            raise _err(path, f"{where}.{name}", f"must be a finite number, got {v!r}")
    if not low < high:
        raise _err(path, f"{where}.high", f"must be greater than low ({low!r}), got {high!r}")
    log, integer = t.get("log", False), t.get("integer", False)
    for name, v in (("log", log), ("integer", integer)):
        if not isinstance(v, bool):
            raise _err(path, f"{where}.{name}", f"must be true or false, got {v!r}")
    if log and low <= 0:
        raise _err(path, f"{where}.low", f"must be > 0 with log = true, got {low!r}")
    if integer and not (_is_int(low) and _is_int(high)):
        raise _err(path, f"{where}.low", "low and high must be integers with integer = true")
    levels = t.get("levels")
    if kind == "grid":
        if levels is None:
            raise _err(path, f"{where}.levels", "is required for a low/high parameter in a "
                       "grid design (or give values = [...])")
        if not _is_int(levels) or not 2 <= levels <= MAX_POINTS:
            raise _err(path, f"{where}.levels", f"must be an integer in [2, {MAX_POINTS:,}], "
                       f"got {levels!r}")
        if integer and levels > int(high) - int(low) + 1:
            raise _err(path, f"{where}.levels", f"{levels} integer levels do not fit in "
                       f"[{low}, {high}]")
    elif levels is not None:
        raise _err(path, f"{where}.levels", f"only applies to grid designs (kind = {kind!r})")
    return ParameterSpec(key, low=low, high=high, log=log, integer=integer, levels=levels)


def _positive_int(path: Path | str | None, key: str, v: object, lo: int = 1,
                  hi: int | None = None) -> int:
    if not _is_int(v) or v < lo or (hi is not None and v > hi):  # type: ignore[operator]
        allowed = f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi:,}]"
        raise _err(path, key, f"must be {allowed}, got {v!r}")
    return int(v)  # type: ignore[call-overload]


ScenarioLoader = Callable[[Any], "Scenario"]


def _default_loader(ref: Any) -> Scenario:
    from wmtsim.studies.scenario import load_scenario

    return load_scenario(ref)


def load_sweep(path: str | os.PathLike[str], *, loader: ScenarioLoader | None = None
               ) -> Sweep:
    """Read and validate a sweep file; a `SweepError` names the file and the key."""
    from wmtsim.studies.toml_files import parse_toml, read_capped

    p = Path(path)
    raw = read_capped(p, lambda msg: SweepError(f"{p}: {msg}"))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise SweepError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start}); allowed: a "
                         "UTF-8 TOML sweep file") from None
    data = parse_toml(text, lambda msg: SweepError(f"{p}: {msg}"))
    return sweep_from_dict(data, path=p, loader=loader)


def sweep_from_dict(data: dict[str, Any], *, path: Path | None = None,
                    loader: ScenarioLoader | None = None) -> Sweep:
    """Validate a parsed sweep file (``path`` is used in messages and for relative paths)."""
    load = loader or _default_loader
    _check_keys(path, "", data, TOP_KEYS)
    # Scenarios: one, or several for robustness.
    if ("scenario" in data) == ("scenarios" in data):
        raise _err(path, "scenario", "give exactly one of scenario = \"name-or-path\" or "
                   "scenarios = [...]")
    refs = [data["scenario"]] if "scenario" in data else data["scenarios"]
    key = "scenario" if "scenario" in data else "scenarios"
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
        raise _err(path, key, "must be a scenario name or a path (relative to the sweep "
                   "file), or a non-empty list of them")
    scenarios = []
    for k, ref in enumerate(refs):
        where = key if key == "scenario" else f"scenarios[{k}]"
        target: Any = ref
        if path is not None and (ref.endswith(".toml") or "/" in ref):
            target = (path.parent / ref)
        try:
            scenarios.append(load(target))
        except (ValueError, OSError) as e:
            raise _err(path, where, f"cannot load scenario {ref!r}: {e}") from None
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise _err(path, key, f"scenarios must have distinct names, got {names}")
    # Policies.
    from wmtsim.core.policies import POLICIES

    pols = data.get("policies", list(scenarios[0].policies))
    if not isinstance(pols, list) or not pols or not all(isinstance(x, str) for x in pols):
        raise _err(path, "policies", f"must be a non-empty list of policy names; allowed: "
                   f"{', '.join(POLICIES)}")
    for k, pol in enumerate(pols):
        if pol not in POLICIES:
            raise _err(path, f"policies[{k}]", f"unknown policy {pol!r}; allowed: "
                       f"{', '.join(POLICIES)}")
    if len(set(pols)) != len(pols):
        raise _err(path, "policies", f"has duplicates: {pols}")
    # Design.
    design = data.get("design")
    if not isinstance(design, dict):
        raise _err(path, "design", "a [design] table is required (kind, points, "
                   "trajectories, seed)")
    _check_keys(path, "design", design, DESIGN_KEYS)
    kind = design.get("kind")
    if kind not in DESIGN_KINDS:
        raise _err(path, "design.kind", f"{kind!r} is not a design; allowed: "
                   f"{' | '.join(DESIGN_KINDS)}")
    # Parameters.
    raw = _flatten_parameters(path, data.get("parameters", {}))
    if not raw:
        raise _err(path, "parameters", "at least one [parameters.<name>] table is required")
    params = tuple(_parse_parameter(path, k, v, kind) for k, v in raw.items())
    for spec in params:
        if spec.key in _NOT_SWEPT:
            raise _err(path, f"parameters.{spec.key}", "cannot be swept; use [design] "
                       "trajectories, seed or replicates, or top-level policies")
    # One knob, one spelling: "rho" and "params.rho" (or "p_leak" and "stubs.p_leak")
    # would label design rows with values other than the ones simulated.
    from wmtsim.studies.scenario import canonical_key

    spelled: dict[str, str] = {}
    for spec in params:
        try:
            canon = canonical_key(spec.key, _where(path))
        except ValueError as e:
            raise _err(path, f"parameters.{spec.key}", str(e)) from None
        if canon in spelled:
            raise _err(path, f"parameters.{spec.key}",
                       f"names the same knob as parameters.{spelled[canon]} ({canon}); "
                       "allowed: each knob once, in one spelling")
        spelled[canon] = spec.key
    notes = _check_readers(path, spelled, pols, scenarios)
    for spec in params:
        probe = spec.values[0] if spec.values is not None else spec.from_unit(0.5)
        try:
            scenarios[0].with_overrides({spec.key: probe})
        except ValueError as e:
            raise _err(path, f"parameters.{spec.key}", str(e)) from None
    trajectories = design.get("trajectories", scenarios[0].n)
    trajectories = _positive_int(path, "design.trajectories", trajectories,
                                 hi=MAX_TRAJECTORIES)
    replicates = _positive_int(path, "design.replicates", design.get("replicates", 1),
                               hi=MAX_POINTS)
    seed = design.get("seed")
    if seed is not None:  # every replicate's seed (seed + r) must be a valid seed
        seed = _positive_int(path, "design.seed", seed, 0, hi=2**63 - replicates)
    for sc in scenarios:
        if seed is None and sc.seed + replicates - 1 > 2**63 - 1:
            raise _err(path, "design.replicates", f"scenario {sc.name!r} has seed {sc.seed}: "
                       f"seeds {sc.seed} + 0..{replicates - 1} exceed 2^63 - 1; give "
                       "[design] seed")
    chunk = design.get("chunk")
    if chunk is not None:
        chunk = _positive_int(path, "design.chunk", chunk)
    if kind == "grid":
        n_grid = math.prod(len(s.grid_values()) for s in params)
        points = design.get("points", n_grid)
        if points != n_grid:
            raise _err(path, "design.points", f"a grid of these parameters has {n_grid} "
                       f"points, not {points!r} (omit points for grids)")
    else:
        if "points" not in design:
            raise _err(path, "design.points", f"is required for kind = {kind!r}")
        points = _positive_int(path, "design.points", design["points"], hi=MAX_POINTS)
        if kind == "sobol" and (points < 2 or points & (points - 1)):
            raise _err(path, "design.points", f"must be a power of 2 >= 2 for sobol designs "
                       f"(the base sample size N; the sweep runs R·N·(d+2) rows, R = "
                       f"scramblings), got {points}")
    scramblings = _positive_int(path, "design.scramblings", design.get("scramblings", 1),
                                hi=MAX_POINTS)
    if scramblings > 1 and kind != "sobol":
        raise _err(path, "design.scramblings", f"only applies to sobol designs (kind = "
                   f"{kind!r}); allowed: omit it, or kind = \"sobol\"")
    n_rows = scramblings * points * (len(params) + 2) if kind == "sobol" else points
    n_points = n_rows * len(scenarios) * replicates * len(pols)
    if n_points > MAX_POINTS:
        raise _err(path, "design", f"makes {n_points:,} points ({n_rows:,} rows × "
                   f"{len(scenarios)} scenarios × {replicates} replicates × {len(pols)} "
                   f"policies); allowed: at most {MAX_POINTS:,} points per sweep (split it "
                   "into several sweeps)")
    name = data.get("name", path.stem if path is not None else "sweep")
    description = data.get("description", "")
    for label, text in (("name", name), ("description", description)):
        if not isinstance(text, str):
            raise _err(path, label, f"must be a string, got {text!r}")
    sweep = Sweep(name, description, path, tuple(scenarios), tuple(pols), params, kind,
                  points, trajectories, seed, replicates, chunk, notes, scramblings)
    # Every row must make valid parameters (e.g. u_success > u_failure): fail early.
    for row in design_rows(sweep):
        for sc in sweep.scenarios:
            try:
                sc.with_overrides(row.values)
            except ValueError as e:
                raise _err(path, "parameters", f"design row {row.index} "
                           f"({_fmt_values(row.values)}) is invalid for scenario "
                           f"{sc.name!r}: {e}. Choose ranges or values whose every "
                           "combination is valid (e.g. u_success above u_failure's high).",
                           ) from None
    return sweep


def _check_readers(path: Path | str | None, spelled: dict[str, str], policies: list[str],
                   scenarios: Sequence[Scenario]) -> tuple[str, ...]:
    """Refuse a parameter that no policy of the sweep reads (its points would all be the
    same: `wmtsim.core.knob_readers`); a warning for one that acts only in other worlds
    (unless the sweep also varies the world)."""
    from wmtsim.core.knob_readers import WORLD_NEEDS, readers, unread

    varies_world = any(k.startswith(("world.", "poison[")) for k in spelled)
    notes = []
    for canon, why in unread(spelled, policies, [s.world for s in scenarios]).items():
        where = f"parameters.{spelled[canon]}"
        if not readers(canon, policies):
            who = ", ".join(readers(canon)) or "none"
            raise _err(path, where, f"no policy of this sweep reads it ({why}): every point "
                       f"would be the same; allowed: a knob one of the policies reads, or add "
                       f"a policy that reads it ({who})")
        if canon in WORLD_NEEDS and not varies_world:
            notes.append(f"{_where(path)}: {where}: {why}, so it changes nothing here")
    return tuple(notes)


def _fmt_values(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


# --- designs -------------------------------------------------------------------------------


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
        # wmtsim.studies.analysis reads r back as base // N)
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
