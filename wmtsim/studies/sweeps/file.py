"""The sweep file: read and validated into a `wmtsim.studies.sweeps.spec.Sweep`
(`load_sweep`, `sweep_from_dict`), one section at a time: the scenarios, the policies, the
design table, the parameters, the design's size, the labels, then every design row;
docs/sweeps.md.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wmtsim.studies.sweeps.design import design_rows
from wmtsim.studies.sweeps.spec import (
    DESIGN_KINDS,
    MAX_POINTS,
    MAX_TRAJECTORIES,
    ParameterSpec,
    Sweep,
    SweepError,
)

if TYPE_CHECKING:
    from wmtsim.studies.scenarios.scenario import Scenario

TOP_KEYS = ("name", "description", "scenario", "scenarios", "policies", "parameters",
            "design")
DESIGN_KEYS = ("kind", "points", "trajectories", "seed", "replicates", "scramblings",
               "chunk")
PARAM_KEYS = ("values", "low", "high", "log", "integer", "levels")
_NOT_SWEPT = ("name", "description", "n", "seed", "policies", "paper")


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
    from wmtsim.studies.scenarios.scenario import load_scenario

    return load_scenario(ref)


def load_sweep(path: str | os.PathLike[str], *, loader: ScenarioLoader | None = None
               ) -> Sweep:
    """Read and validate a sweep file; a `SweepError` names the file and the key."""
    from wmtsim.core.shipped import SWEEPS, names, resolve
    from wmtsim.studies.scenarios.toml_files import parse_toml, read_capped

    p = resolve(path, SWEEPS)  # a shipped sweep by name (rho_m_grid) from any folder
    if not p.exists():
        raise SweepError(f"{p}: cannot read: no such file or shipped sweep; allowed: an "
                         f"existing sweep file, or a shipped sweep name: {names(SWEEPS)}")
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
    _check_keys(path, "", data, TOP_KEYS)
    scenarios = _scenarios(path, data, loader or _default_loader)
    policies = _policies(path, data, scenarios)
    design, kind = _design_table(path, data)
    parameters, notes = _parameters(path, data, kind, policies, scenarios)
    trajectories = _positive_int(path, "design.trajectories",
                                 design.get("trajectories", scenarios[0].n),
                                 hi=MAX_TRAJECTORIES)
    replicates, seed = _replicates_and_seed(path, design, scenarios)
    chunk = design.get("chunk")
    if chunk is not None:
        chunk = _positive_int(path, "design.chunk", chunk)
    points, scramblings = _points(path, design, kind, parameters)
    rows = scramblings * points * (len(parameters) + 2) if kind == "sobol" else points
    _check_total(path, rows, len(scenarios), replicates, len(policies))
    name, description = _labels(path, data)
    sweep = Sweep(name=name, description=description, path=path, scenarios=scenarios,
                  policies=policies, parameters=parameters, kind=kind, points=points,
                  trajectories=trajectories, seed=seed, replicates=replicates,
                  chunk=chunk, warnings=notes, scramblings=scramblings)
    _check_rows(path, sweep)
    return sweep


# --- the sections of the file, in the order they are checked ------------------------------


def _scenarios(path: Path | None, data: dict[str, Any], load: ScenarioLoader
               ) -> tuple[Scenario, ...]:
    """``scenario`` (one) or ``scenarios`` (several, for robustness), loaded; a relative
    path is read from the sweep file's folder."""
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
    return tuple(scenarios)


def _policies(path: Path | None, data: dict[str, Any], scenarios: Sequence[Scenario]
              ) -> tuple[str, ...]:
    """``policies``: known names, each once (default: the first scenario's)."""
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
    return tuple(pols)


def _design_table(path: Path | None, data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The ``[design]`` table and its ``kind``."""
    design = data.get("design")
    if not isinstance(design, dict):
        raise _err(path, "design", "a [design] table is required (kind, points, "
                   "trajectories, seed)")
    _check_keys(path, "design", design, DESIGN_KEYS)
    kind = design.get("kind")
    if kind not in DESIGN_KINDS:
        raise _err(path, "design.kind", f"{kind!r} is not a design; allowed: "
                   f"{' | '.join(DESIGN_KINDS)}")
    return design, kind


def _parameters(path: Path | None, data: dict[str, Any], kind: str,
                policies: Sequence[str], scenarios: Sequence[Scenario]
                ) -> tuple[tuple[ParameterSpec, ...], tuple[str, ...]]:
    """The ``[parameters.<name>]`` tables, and the warnings about them: each a knob that
    may be swept, named once, read by a policy of the sweep, and valid on the first
    scenario."""
    raw = _flatten_parameters(path, data.get("parameters", {}))
    if not raw:
        raise _err(path, "parameters", "at least one [parameters.<name>] table is required")
    params = tuple(_parse_parameter(path, k, v, kind) for k, v in raw.items())
    for spec in params:
        if spec.key in _NOT_SWEPT:
            raise _err(path, f"parameters.{spec.key}", "cannot be swept; use [design] "
                       "trajectories, seed or replicates, or top-level policies")
    notes = _check_readers(path, _one_spelling(path, params), list(policies), scenarios)
    for spec in params:
        probe = spec.values[0] if spec.values is not None else spec.from_unit(0.5)
        try:
            scenarios[0].with_overrides({spec.key: probe})
        except ValueError as e:
            raise _err(path, f"parameters.{spec.key}", str(e)) from None
    return params, notes


def _one_spelling(path: Path | None, params: Sequence[ParameterSpec]) -> dict[str, str]:
    """Each parameter's canonical key -> its spelling in the file. One knob, one spelling:
    "rho" and "params.rho" (or "p_leak" and "stubs.p_leak") would label design rows with
    values other than the ones simulated."""
    from wmtsim.studies.scenarios.scenario import canonical_key

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
    return spelled


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


def _replicates_and_seed(path: Path | None, design: dict[str, Any],
                         scenarios: Sequence[Scenario]) -> tuple[int, int | None]:
    """``replicates`` and ``seed``: every replicate's seed (seed + r, or each scenario's
    seed + r) must be a valid seed."""
    replicates = _positive_int(path, "design.replicates", design.get("replicates", 1),
                               hi=MAX_POINTS)
    seed = design.get("seed")
    if seed is not None:
        seed = _positive_int(path, "design.seed", seed, 0, hi=2**63 - replicates)
    for sc in scenarios:
        if seed is None and sc.seed + replicates - 1 > 2**63 - 1:
            raise _err(path, "design.replicates", f"scenario {sc.name!r} has seed {sc.seed}: "
                       f"seeds {sc.seed} + 0..{replicates - 1} exceed 2^63 - 1; give "
                       "[design] seed")
    return replicates, seed


def _points(path: Path | None, design: dict[str, Any], kind: str,
            params: Sequence[ParameterSpec]) -> tuple[int, int]:
    """``points`` (a grid's own count; N, a power of 2, for sobol) and ``scramblings``."""
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
    return points, scramblings


def _check_total(path: Path | None, rows: int, scenarios: int, replicates: int,
                 policies: int) -> None:
    """At most `MAX_POINTS` points in all."""
    n_points = rows * scenarios * replicates * policies
    if n_points > MAX_POINTS:
        raise _err(path, "design", f"makes {n_points:,} points ({rows:,} rows × "
                   f"{scenarios} scenarios × {replicates} replicates × {policies} "
                   f"policies); allowed: at most {MAX_POINTS:,} points per sweep (split it "
                   "into several sweeps)")


def _labels(path: Path | None, data: dict[str, Any]) -> tuple[str, str]:
    """``name`` (default: the file's stem) and ``description``."""
    name = data.get("name", path.stem if path is not None else "sweep")
    description = data.get("description", "")
    for label, text in (("name", name), ("description", description)):
        if not isinstance(text, str):
            raise _err(path, label, f"must be a string, got {text!r}")
    return name, description


def _check_rows(path: Path | None, sweep: Sweep) -> None:
    """Every row must make valid parameters (e.g. u_success > u_failure): fail early."""
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


def _fmt_values(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())
