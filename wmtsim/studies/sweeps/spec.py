"""A sweep, validated: `Sweep` and its varied parameters (`ParameterSpec`), the
`SweepError` every sweep module raises, and the bounds a sweep file is held to. Read from
a file by `wmtsim.studies.sweeps.file`; docs/sweeps.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wmtsim.core.metrics import METRICS

if TYPE_CHECKING:
    from wmtsim.studies.scenarios.scenario import Scenario

METRIC_NAMES = tuple(METRICS)
DESIGN_KINDS = ("grid", "lhs", "sobol", "random")
# Bounds checked when the file is read: a sweep's design and keys are built in memory, and
# each design row is validated up front; beyond these a typo would run for hours.
MAX_POINTS = 1_000_000
MAX_TRAJECTORIES = 10_000_000  # per point, as a scenario's n


class SweepError(ValueError):
    """A sweep file or output folder that cannot be used; the message says why."""


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


@dataclass(frozen=True, kw_only=True)
class Sweep:
    """A validated sweep file (built by keyword: `wmtsim.studies.sweeps.file.sweep_from_dict`)."""

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
